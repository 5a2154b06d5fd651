"""The adaptive softmax output layer of a language model (Grave et al. 2017, "Efficient softmax approximation for
GPUs"): the frequent tokens in a head softmax, the rarer ones in tail clusters behind it, so that training scores each
target at the cost of its cluster instead of the whole vocabulary."""

import math

import torch
from torch import nn

from .modeling_utils import check_lm_labels


class AdaptiveSoftmaxHead(nn.AdaptiveLogSoftmaxWithLoss):
    """torch's adaptive softmax over vectors of ``in_features``, with a bias on the head as the full output layer has.

    ``cutoffs`` cut the ids, which must run from the most frequent token to the least, into the head's shortlist
    ``[0, cutoffs[0])`` and tail clusters ``[cutoffs[i], cutoffs[i + 1])`` (the last one ending at ``vocab_size``);
    tail cluster ``i`` (from 1) reads a projection to ``in_features // div_value**i`` features.

    It computes in its weights' dtype with autocast off: torch's module writes each cluster's log-probabilities into
    a tensor of its input's dtype, which the mixed dtypes of autocast break.
    """

    def __init__(self, in_features: int, vocab_size: int, cutoffs: list[int], div_value: float):
        super().__init__(in_features, vocab_size, cutoffs, div_value=div_value, head_bias=True)

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """The log-probability of every token: ``(..., in_features)`` -> ``(..., vocab_size)``."""
        with torch.autocast(hidden.device.type, enabled=False):
            flat = hidden.reshape(-1, hidden.shape[-1]).to(self.head.weight.dtype)
            return self.log_prob(flat).view(*hidden.shape[:-1], self.n_classes)

    def loss(
        self,
        hidden: torch.Tensor,
        labels: torch.Tensor | None,
        num_items_in_batch: int | torch.Tensor | None = None,
        shift_labels: torch.Tensor | None = None,
    ) -> torch.Tensor | None:
        """A causal LM's loss with ``modeling_utils.lm_loss``'s conventions, from the outputs ``hidden``
        ``(batch, length, in_features)``: the negative log-likelihood of the targets, position ``t`` predicting
        ``labels[t + 1]`` (or ``shift_labels[t]``, which replace them), over the targets not labelled -100; a mean,
        or a sum divided by ``num_items_in_batch``. NaN when no target counts (0 / 0, as transformers' heads give); None
        without labels. The full
        vocabulary's log-probabilities are never computed."""
        if labels is None and shift_labels is None:
            return None
        shift = shift_labels is None
        labels = labels if shift else shift_labels
        # check_lm_labels reads only the shape of the logits: a meta tensor stands for them, allocating nothing.
        check_lm_labels(labels, hidden.new_empty(*hidden.shape[:2], self.n_classes, device="meta"))
        if shift:
            hidden, labels = hidden[:, :-1], labels[:, 1:]
        scored = labels != -100
        targets = labels[scored]
        if num_items_in_batch is None:
            num_items_in_batch = targets.numel()
        if not targets.numel():
            return hidden.sum() * math.nan  # nothing to score: 0 / 0; keeps the graph
        with torch.autocast(hidden.device.type, enabled=False):
            log_likelihood = self(hidden[scored].to(self.head.weight.dtype), targets).output
        return -log_likelihood.sum() / num_items_in_batch
