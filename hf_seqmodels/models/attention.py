"""Attention over a memory of encoder outputs: Bahdanau's additive score and Luong's dot / general / concat scores.

Every module here takes queries ``(batch, num_queries, query_size)``, a memory of keys ``(batch, source_length,
key_size)`` that also serve as values, and a bool mask ``(batch, source_length)`` (True = real token, see
masks.py), and returns the context vectors ``(batch, num_queries, key_size)`` and the attention weights
``(batch, num_queries, source_length)``. Several queries at once let a decoder attend for every target position in
one call. The part of the score that depends only on the keys can be computed once per source with
``project_keys`` and passed back at every decoding step as ``projected_keys``. (The Transformer's attention is in
``multi_head_attention.py``.)

Both modules are transformers' ``GradientCheckpointingLayer``: after ``model.activation_checkpointing_enable()``, a
training forward keeps only their inputs and recomputes the scores in the backward pass. The additive scores are the
largest activation of an attention decoder, ``(batch, target_length, source_length, attention_size)`` when
teacher forcing attends for every target position at once.
"""

import torch
from torch import nn
from torch.nn import functional as F
from transformers.modeling_layers import GradientCheckpointingLayer

LUONG_SCORES = ("dot", "general", "concat")


def masked_attention(
    scores: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax of ``scores`` ``(batch, num_queries, source_length)`` over the real source positions, and the
    weighted sum of ``values`` ``(batch, source_length, size)``. Padded positions get a weight of exactly 0."""
    if mask is not None:
        scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    return torch.bmm(weights, values), weights


def additive_scores(projected_query: torch.Tensor, projected_keys: torch.Tensor, energy: nn.Linear) -> torch.Tensor:
    """``v^T tanh(q' + k')`` for every query and key: ``(batch, Q, A)`` and ``(batch, S, A)`` -> ``(batch, Q, S)``."""
    return energy(torch.tanh(projected_query.unsqueeze(2) + projected_keys.unsqueeze(1))).squeeze(-1)


class MemoryAttention(GradientCheckpointingLayer):
    """What both attentions do with their scores: the key-only part of the score computed once per source (a
    subclass's ``project_keys``), a score per query and key (its ``scores(query, projected_keys)``, ``(batch,
    num_queries, source_length)``), a softmax over the real source positions and the weighted sum of the keys."""

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        projected_keys: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns context ``(batch, num_queries, key_size)`` and weights ``(batch, num_queries, source_length)``."""
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        return masked_attention(self.scores(query, projected_keys), keys, mask)


class AdditiveAttention(MemoryAttention):
    """Bahdanau et al. (2015), "Neural Machine Translation by Jointly Learning to Align and Translate", eq. (6):
    ``score(q, k_j) = v^T tanh(W_q q + W_k k_j)``, then a softmax over the source positions ``j``.

    Args:
        query_size: size of the queries (the decoder state).
        key_size: size of the keys and values (the encoder outputs).
        attention_size: size of the hidden layer of the score.
    """

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.query_layer = nn.Linear(query_size, attention_size, bias=False)
        self.key_layer = nn.Linear(key_size, attention_size, bias=False)
        self.energy_layer = nn.Linear(attention_size, 1, bias=False)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """``W_k k_j`` for every key: ``(batch, source_length, key_size)`` -> ``(batch, source_length,
        attention_size)``."""
        return self.key_layer(keys)

    def scores(self, query: torch.Tensor, projected_keys: torch.Tensor) -> torch.Tensor:
        return additive_scores(self.query_layer(query), projected_keys, self.energy_layer)


class LuongAttention(MemoryAttention):
    """The scores of Luong et al. (2015), "Effective Approaches to Attention-based Neural Machine Translation",
    section 3.1, then a softmax over the source positions ``j``:

    - ``"dot"``: ``q^T k_j`` (needs ``query_size == key_size``);
    - ``"general"``: ``q^T W_a k_j``;
    - ``"concat"``: ``v_a^T tanh(W_a [q; k_j])``.

    Args:
        score: ``"dot"``, ``"general"`` or ``"concat"``.
        query_size: size of the queries (the decoder state).
        key_size: size of the keys and values (the encoder outputs).
        attention_size: size of the hidden layer of the ``"concat"`` score (unused by the others).
    """

    def __init__(self, score: str, query_size: int, key_size: int, attention_size: int | None = None):
        super().__init__()
        if score not in LUONG_SCORES:
            raise ValueError(f"`score`={score!r} is not supported; choose one of {', '.join(map(repr, LUONG_SCORES))}.")
        if score == "dot" and query_size != key_size:
            raise ValueError(
                f"The 'dot' score needs queries and keys of the same size, got query_size={query_size} and "
                f"key_size={key_size}; use the 'general' or 'concat' score instead."
            )
        if score == "concat" and attention_size is None:
            raise ValueError("The 'concat' score needs `attention_size`, the size of its hidden layer.")
        self.score = score
        self.query_size = query_size
        if score == "general":
            self.key_layer = nn.Linear(key_size, query_size, bias=False)  # weight = W_a, so k' = W_a k
        elif score == "concat":
            self.concat_layer = nn.Linear(query_size + key_size, attention_size, bias=False)  # weight = W_a
            self.energy_layer = nn.Linear(attention_size, 1, bias=False)  # weight = v_a^T

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """The key-only part of the score: ``k`` (dot), ``W_a k`` (general), or the key columns of ``W_a`` times
        ``k`` (concat, since ``W_a [q; k] = W_a[:, :Q] q + W_a[:, Q:] k``)."""
        if self.score == "general":
            return self.key_layer(keys)
        if self.score == "concat":
            return F.linear(keys, self.concat_layer.weight[:, self.query_size :])
        return keys

    def scores(self, query: torch.Tensor, projected_keys: torch.Tensor) -> torch.Tensor:
        if self.score == "concat":
            projected_query = F.linear(query, self.concat_layer.weight[:, : self.query_size])
            return additive_scores(projected_query, projected_keys, self.energy_layer)
        return torch.bmm(query, projected_keys.transpose(1, 2))
