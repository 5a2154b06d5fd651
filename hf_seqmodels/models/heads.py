"""Pooling, the classifier heads' losses, the CRF output layer of the taggers, and the clear error of a classifier
asked to generate text (`refuse_generate`, which the heads bind as their ``__getattr__``), shared by the sequence and token classification heads of the recurrent and Transformer
families."""

import math

import torch
from torch import nn
from torch.nn import functional as F
from transformers import initialization as init
from transformers.utils import is_tracing

from .crf import LinearChainCRF, bio_constraints, gather_to_front
from .modeling_utils import check_tensor
from .pipeline_token_classification import CUSTOM_PIPELINES as CRF_PIPELINES

_CLASS_ID_DTYPES = (torch.long, torch.int)


class DoesNotGenerateError(AttributeError, TypeError):
    """``generate`` asked of a model that does not generate text. An AttributeError, so that
    ``hasattr(model, "generate")`` stays False, as it is for transformers' own classifiers (pipelines, Trainer and
    PEFT ask it to tell a generating model); a TypeError, as is an operation that the object's type does not have, so
    that the error reads as the caller's mistake."""


def refuse_generate(model: nn.Module, name: str):
    """The ``__getattr__`` of every classification head, which binds it by name: it has no ``generate``, and saying
    so names the family's classes that have one (the head's ``generating_classes``, e.g. "RecurrentForCausalLM (a
    language model)").

    Python asks ``__getattr__`` only when the attribute is not found otherwise; every other name goes to torch's
    ``nn.Module.__getattr__`` (the submodules and parameters): ``can_generate()`` and ``hasattr`` answer as before,
    False."""
    if name == "generate":
        raise DoesNotGenerateError(
            f"{type(model).__name__} is a classifier: it does not generate text (it has no `generate`); call it "
            f"for its `logits`. To generate text, use {' or '.join(model.generating_classes)}.",
            name=name,
        )
    return nn.Module.__getattr__(model, name)


class SequencePooler(nn.Module):
    """Turns per-token vectors ``(batch, length, size)`` into one vector per sequence ``(batch, size)``.

    Args:
        pooling: "mean" or "max" over real tokens, "attention" (a learned query scores every token,
            softmax over real tokens; Yang et al. 2016 without the hierarchy), or "last" — the caller's
            summary vector (for recurrent encoders the final state of each direction), passed as ``last``.
        size: size of the vectors.
    """

    def __init__(self, pooling: str, size: int):
        super().__init__()
        self.pooling = pooling
        if pooling == "attention":
            self.score = nn.Sequential(nn.Linear(size, size), nn.Tanh(), nn.Linear(size, 1, bias=False))

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None, last: torch.Tensor | None = None):
        if self.pooling == "last":
            return last
        if mask is None:
            mask = hidden.new_ones(hidden.shape[:2], dtype=torch.bool)
        keep = mask.unsqueeze(-1)
        if self.pooling == "mean":
            return (hidden * keep).sum(1) / keep.sum(1).clamp(min=1)
        if self.pooling == "max":
            return hidden.masked_fill(~keep, torch.finfo(hidden.dtype).min).amax(1)
        scores = self.score(hidden).masked_fill(~keep, torch.finfo(hidden.dtype).min)
        return (scores.softmax(dim=1) * hidden).sum(1)


def sequence_classification_loss(logits: torch.Tensor, labels: torch.Tensor, config) -> torch.Tensor:
    """Loss of a sequence classifier, choosing the problem type as BERT's head does.

    ``config.problem_type`` is "regression" (MSE), "single_label_classification" (cross-entropy on integer
    labels; sequences labelled -100 are ignored) or "multi_label_classification" (BCE on float multi-hot labels);
    when unset it is inferred from ``num_labels`` and the labels' dtype and written back to the config.
    """
    check_tensor(labels, "labels")
    num_labels = logits.shape[-1]
    if config.problem_type is None:
        if num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in _CLASS_ID_DTYPES:
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    batch = logits.shape[0]
    if config.problem_type == "regression":
        if num_labels == 1:
            _check_label_shape(labels, {(batch,), (batch, 1)})
            return F.mse_loss(logits.view(batch), labels.to(logits.dtype).view(batch))
        _check_label_shape(labels, {(batch, num_labels)})
        return F.mse_loss(logits, labels.to(logits.dtype))
    if config.problem_type == "single_label_classification":
        _check_label_shape(labels, {(batch,)})
        _check_class_ids(labels, num_labels, "sequences")
        return F.cross_entropy(logits, labels.long(), ignore_index=-100)  # NaN if all are -100, as transformers
    if config.problem_type == "multi_label_classification":
        _check_label_shape(labels, {(batch, num_labels)})
        return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    raise ValueError(
        f"`problem_type`={config.problem_type!r} is not supported; choose 'regression', "
        "'single_label_classification' or 'multi_label_classification'."
    )


def token_classification_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over tokens; positions labelled -100 (padding, continuation sub-words) are ignored."""
    check_tagger_labels(logits, labels)
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten().long(), ignore_index=-100)


def check_tagger_labels(logits: torch.Tensor, labels: torch.Tensor) -> None:
    """Raise unless ``labels`` are ``(batch, length)`` tag ids of the head, or -100."""
    check_tensor(labels, "labels")
    _check_label_shape(labels, {tuple(logits.shape[:2])})
    _check_class_ids(labels, logits.shape[-1], "tokens")


class TaggerOutputMixin:
    """The output layer of the token-classification heads beyond their classifier: with ``config.use_crf`` a
    `LinearChainCRF` over the classifier's scores (the emissions), optionally BIO-constrained
    (``config.crf_constrain_bio``). The head's ``logits`` stay the emissions; the loss is the CRF's negative
    log-likelihood and the tags are its Viterbi path (`viterbi_tags`). A head calls `_init_crf` in its ``__init__``
    and `tagging_loss` in its ``forward``."""

    def _init_crf(self, config) -> None:
        self.crf = None
        if config.use_crf:
            constraints = bio_constraints(config.id2label) if config.crf_constrain_bio else ()
            self.crf = LinearChainCRF(config.num_labels, *constraints)
            # pipeline("token-classification", ...) then decodes with Viterbi (see pipeline_token_classification).
            config.custom_pipelines = {**(getattr(config, "custom_pipelines", None) or {}), **CRF_PIPELINES}

    def _init_weights(self, module):
        if isinstance(module, LinearChainCRF):  # pytorch-crf's start; the penalties follow the constraints
            for param in (module.start_transitions, module.end_transitions, module.transitions):
                init.uniform_(param, -0.1, 0.1)
            start_penalty, transition_penalty = module.penalties()
            init.copy_(module.start_penalty, start_penalty)
            init.copy_(module.transition_penalty, transition_penalty)
        else:
            super()._init_weights(module)

    def tagging_loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Cross-entropy over the labelled tokens, or with a CRF its negative log-likelihood averaged over the rows:
        each row's chain is its labelled positions (labels other than -100), in order. Rows with no labelled
        position are left out."""
        if self.crf is None:
            return token_classification_loss(logits, labels)
        check_tagger_labels(logits, labels)
        emissions, mask, _ = gather_to_front(logits, labels != -100)
        tags, _, _ = gather_to_front(labels, labels != -100)
        rows = mask[:, 0] if mask.shape[1] else mask.new_zeros(mask.shape[0])
        if is_tracing(rows) or bool(rows.all()):
            return self.crf.neg_log_likelihood(emissions, tags, mask).mean()
        if not bool(rows.any()):
            return logits.sum() * math.nan  # nothing to score (a mean over no rows), as the heads without a CRF
        return self.crf.neg_log_likelihood(emissions[rows], tags[rows], mask[rows]).mean()

    def tags_from_emissions(self, logits: torch.Tensor, tag_mask: torch.Tensor) -> torch.Tensor:
        """The Viterbi tags ``(batch, length)`` of emission scores ``logits`` ``(batch, length, num_labels)``, the
        chain of each row running over its positions where ``tag_mask`` ``(batch, length)`` is True; -100 at the
        other positions."""
        if self.crf is None:
            raise ValueError("This model has no CRF (config.use_crf=False): its tags are logits.argmax(-1).")
        check_tensor(tag_mask, "tag_mask")
        if tuple(tag_mask.shape) != tuple(logits.shape[:2]):
            raise ValueError(f"`tag_mask` has shape {tuple(tag_mask.shape)}, expected {tuple(logits.shape[:2])}: "
                             "True at each position to tag (the first token of each word).")
        tag_mask = tag_mask.bool()
        tags = torch.full(tag_mask.shape, -100, dtype=torch.long, device=logits.device)
        emissions, mask, order = gather_to_front(logits, tag_mask)
        rows = mask[:, 0] if mask.shape[1] else mask.new_zeros(mask.shape[0])
        if bool(rows.any()):
            paths, _ = self.crf.decode(emissions[rows], mask[rows])
            tags[rows] = tags[rows].scatter(1, order[rows], paths)
        return tags

    @torch.no_grad()
    def viterbi_tags(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                     inputs_embeds: torch.Tensor | None = None, tag_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The best tag sequence of each row under the CRF (Viterbi), as tag ids ``(batch, length)``, -100 at the
        positions not tagged.

        Args:
            input_ids, attention_mask, inputs_embeds: the inputs, as for ``forward``.
            tag_mask: ``(batch, length)``, True at the positions the chain runs over: in training those labelled
                (the first sub-token of each word; not special tokens). Default: every real token
                (``attention_mask``), which suits inputs with one token per word and no special tokens.
        """
        logits = self(input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds).logits
        if tag_mask is None:
            tag_mask = torch.ones(logits.shape[:2], dtype=torch.bool, device=logits.device) \
                if attention_mask is None else attention_mask.bool()
        elif attention_mask is not None:
            tag_mask = tag_mask.bool() & attention_mask.bool()
        return self.tags_from_emissions(logits, tag_mask)


def _check_label_shape(labels: torch.Tensor, expected: set[tuple[int, ...]]) -> None:
    if tuple(labels.shape) not in expected:
        raise ValueError(
            f"`labels` has shape {tuple(labels.shape)}, expected {' or '.join(map(str, sorted(expected)))}."
        )


def _check_class_ids(labels: torch.Tensor, num_labels: int, ignored: str) -> None:
    """Raise unless ``labels`` hold integer class ids of the head, or -100 for the ``ignored`` ("tokens",
    "sequences") that the loss skips."""
    if labels.dtype not in _CLASS_ID_DTYPES:
        raise ValueError(
            f"`labels` have dtype {labels.dtype} but must hold integer class ids (-100 for {ignored} to ignore): "
            "convert them with `labels.long()` (a float label would be truncated)."
        )
    if is_tracing(labels):  # the values are not known while torch.export / torch.compile trace
        return
    class_ids = labels[labels != -100]
    if not class_ids.numel():
        return
    low, high = torch.stack(torch.aminmax(class_ids)).tolist()  # one wait for a GPU, not two
    if low < 0 or high >= num_labels:
        raise ValueError(
            f"`labels` hold values in [{low}, {high}] but the head has {num_labels} labels (0..{num_labels - 1}; "
            f"-100 marks {ignored} to ignore). Set `num_labels` in the config."
        )
