"""Pooling and the classifier heads' losses, shared by the sequence and token classification heads of the recurrent
and Transformer families."""

import torch
from torch import nn
from torch.nn import functional as F
from transformers.utils import is_tracing

from .masks import check_tensor
from .modeling_utils import cross_entropy

_CLASS_ID_DTYPES = (torch.long, torch.int)


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
        return cross_entropy(logits, labels.long())
    if config.problem_type == "multi_label_classification":
        _check_label_shape(labels, {(batch, num_labels)})
        return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    raise ValueError(
        f"`problem_type`={config.problem_type!r} is not supported; choose 'regression', "
        "'single_label_classification' or 'multi_label_classification'."
    )


def token_classification_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over tokens; positions labelled -100 (padding, continuation sub-words) are ignored."""
    check_tensor(labels, "labels")
    _check_label_shape(labels, {tuple(logits.shape[:2])})
    _check_class_ids(labels, logits.shape[-1], "tokens")
    return cross_entropy(logits.flatten(0, 1), labels.flatten().long())


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
