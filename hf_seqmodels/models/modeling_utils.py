"""What the models of every family share, in the shape of transformers' `modeling_utils`: the `PreTrainedModel`
base, the one check of a model's token inputs, the language-model output layer and loss, and the encoder-decoders'
decoder inputs and vocabulary resizing. A family's modeling file imports this and layers, never another family."""

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.loss.loss_utils import ForCausalLMLoss, ForMaskedLMLoss
from transformers.models.bart.modeling_bart import shift_tokens_right

from .masks import check_input_ids


class SeqModelsPreTrainedModel(PreTrainedModel):
    """The base of every family's `PreTrainedModel`: a base model under `model`, flags that default to the
    config's, and torch's own initialisation for recurrent layers (transformers' default knows `nn.LSTM` only)."""

    base_model_prefix = "model"
    main_input_name = "input_ids"

    def _init_weights(self, module):
        if isinstance(module, nn.RNNBase):
            # torch's default for recurrent weights, U(-1/sqrt(H), 1/sqrt(H)); biases too.
            bound = module.hidden_size**-0.5
            for param in module.parameters():
                init.uniform_(param, -bound, bound)  # skips weights already loaded from a checkpoint
        else:
            super()._init_weights(module)

    def _flag(self, value: bool | None, name: str) -> bool:
        """A forward argument such as ``output_hidden_states``, or the config's value when it is None."""
        return value if value is not None else getattr(self.config, name)

    def _use_cache(self, use_cache: bool | None) -> bool:
        """``use_cache``, else the config's in evaluation: training never keeps a cache."""
        return use_cache if use_cache is not None else (self.config.use_cache and not self.training)


def check_token_inputs(
    input_ids: torch.Tensor | None,
    inputs_embeds: torch.Tensor | None,
    vocab_size: int,
    embedding_size: int,
    dtype: torch.dtype,
    prefix: str = "",
) -> None:
    """The check of a stack's inputs where they enter the model: exactly one of ``input_ids`` ``(batch, length)``,
    ids in ``[0, vocab_size)``, and ``inputs_embeds`` ``(batch, length, embedding_size)`` of the model's ``dtype``,
    neither empty. ``prefix`` ("decoder_") names the arguments as the caller's forward does."""
    ids, embeds = f"{prefix}input_ids", f"{prefix}inputs_embeds"
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError(f"Pass exactly one of `{ids}` and `{embeds}`.")
    if input_ids is not None:
        if input_ids.dim() != 2:
            raise ValueError(f"`{ids}` must have shape (batch, length), got {tuple(input_ids.shape)}.")
        check_input_ids(input_ids, vocab_size, ids)
        return
    if inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != embedding_size:
        raise ValueError(
            f"`{embeds}` must have shape (batch, length, {embedding_size}), got {tuple(inputs_embeds.shape)}."
        )
    if inputs_embeds.numel() == 0:
        raise ValueError(
            f"`{embeds}` is empty (shape {tuple(inputs_embeds.shape)}): pass at least one token per sequence."
        )
    if inputs_embeds.dtype != dtype:
        raise ValueError(f"`{embeds}` has dtype {inputs_embeds.dtype} but the model computes in {dtype}: convert "
                         f"them with `.to({dtype})`.")


def lm_output_layers(
    hidden_size: int, embedding_size: int, vocab_size: int, tie_word_embeddings: bool
) -> tuple[nn.Linear | None, nn.Linear]:
    """The output layer of a language model reading vectors of ``hidden_size``, and the projection to
    ``embedding_size`` that must come first when the output layer shares the embedding matrix
    (``tie_word_embeddings``) and the sizes differ (``None`` otherwise)."""
    projection = None
    if tie_word_embeddings and hidden_size != embedding_size:
        projection = nn.Linear(hidden_size, embedding_size, bias=False)
    return projection, nn.Linear(embedding_size if tie_word_embeddings else hidden_size, vocab_size)


def check_lm_labels(labels: torch.Tensor, logits: torch.Tensor) -> None:
    """Raise a clear error unless ``labels`` hold one token id (or -100, ignored) for every position of a language
    model's ``logits`` ``(batch, length, vocab_size)``."""
    if labels.shape != logits.shape[:2]:
        raise ValueError(
            f"`labels` has shape {tuple(labels.shape)}, expected {tuple(logits.shape[:2])}: one target token id per "
            "position, -100 where the loss should not count."
        )
    targets = labels[labels != -100]
    if targets.numel():
        check_input_ids(targets, logits.shape[-1], "labels")


def lm_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    shift: bool,
    num_items_in_batch: int | torch.Tensor | None = None,
) -> torch.Tensor:
    """The language-model loss of every family: cross-entropy over the positions not labelled -100, a mean over
    them, or a sum divided by ``num_items_in_batch`` (the target tokens of a whole accumulated batch, from Trainer).
    ``shift``: ``labels`` are the inputs themselves, and position ``t`` predicts label ``t + 1`` (causal LMs);
    otherwise they are aligned with the logits already (a decoder reading the target shifted right)."""
    check_lm_labels(labels, logits)
    loss = ForCausalLMLoss if shift else ForMaskedLMLoss
    return loss(logits, labels, logits.shape[-1], num_items_in_batch=num_items_in_batch)


class EncoderDecoderMixin:
    """What both encoder-decoders' `PreTrainedModel` classes share: decoder inputs built from ``labels`` and
    ``resize_token_embeddings`` of the target vocabulary.

    ``config.vocab_size`` is the target vocabulary: the decoder's embeddings and the output layer, and the encoder's
    embeddings too when the source reads the same vocabulary (``config.source_vocab_size`` unset). transformers'
    own resizing changes only ``get_input_embeddings()``, the encoder's, and would leave the decoder at the old size.
    A class names the ``(module, attribute)`` of each embedding that follows the target vocabulary in
    ``_target_embeddings``.
    """

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """Teacher forcing inputs: ``config.decoder_start_token_id``, then ``labels`` shifted right (-100 becomes
        padding)."""
        for name in ("pad_token_id", "decoder_start_token_id"):
            if getattr(self.config, name) is None:
                raise ValueError(
                    f"Building `decoder_input_ids` from `labels` needs `config.{name}`; it is unset: set it, or pass "
                    "`decoder_input_ids` yourself."
                )
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    def decoder_inputs_from_labels(
        self,
        labels: torch.Tensor | None,
        decoder_input_ids: torch.Tensor | None,
        decoder_inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor | None:
        """``decoder_input_ids``, built from ``labels`` when neither they nor ``decoder_inputs_embeds`` are given.
        The labels' ids are checked first, as labels, since they become decoder inputs."""
        if labels is None:
            return decoder_input_ids
        if (targets := labels[labels != -100]).numel():
            check_input_ids(targets, self.config.vocab_size, "labels")
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            return self.prepare_decoder_input_ids_from_labels(labels)
        return decoder_input_ids

    def resize_token_embeddings(
        self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None, mean_resizing: bool = True
    ) -> nn.Embedding:
        """Resize the target vocabulary to ``new_num_tokens`` (see transformers' ``resize_token_embeddings``);
        returns the decoder's new embeddings."""
        resized = {}  # old embedding -> new: a matrix the encoder and decoder share stays shared
        for module, name in self._target_embeddings():
            old = getattr(module, name)
            if old not in resized:
                resized[old] = self._get_resized_embeddings(old, new_num_tokens, pad_to_multiple_of, mean_resizing)
            setattr(module, name, resized[old])
        embeddings = next(iter(resized.values()))
        if (output := self.get_output_embeddings()) is not None:
            self.set_output_embeddings(
                self._get_resized_lm_head(output, embeddings.num_embeddings, mean_resizing=mean_resizing)
            )
        self.config.vocab_size = embeddings.num_embeddings
        self.tie_weights()
        return embeddings
