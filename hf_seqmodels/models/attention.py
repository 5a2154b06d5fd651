"""Attention over a memory of encoder outputs: Bahdanau's additive score and Luong's dot / general / concat scores.

Every module here takes queries ``(batch, num_queries, query_size)``, a memory of keys ``(batch, source_length,
key_size)`` that also serve as values, and a bool mask ``(batch, source_length)`` (True = real token, see
masks.py), and returns the context vectors ``(batch, num_queries, key_size)`` and the attention weights
``(batch, num_queries, source_length)``. Several queries at once let a decoder attend for every target position in
one call. The part of the score that depends only on the keys can be computed once per source with
``project_keys`` and passed back at every decoding step as ``projected_keys``.

``MultiHeadAttention`` is the Transformer's attention (Vaswani et al., 2017); see its docstring for its arguments.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

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


class AdditiveAttention(nn.Module):
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
        """``W_k k_j`` for every key: ``(batch, source_length, key_size)`` -> ``(batch, source_length, attention_size)``."""
        return self.key_layer(keys)

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
        scores = additive_scores(self.query_layer(query), projected_keys, self.energy_layer)
        return masked_attention(scores, keys, mask)


class LuongAttention(nn.Module):
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
        if self.score == "concat":
            projected_query = F.linear(query, self.concat_layer.weight[:, : self.query_size])
            scores = additive_scores(projected_query, projected_keys, self.energy_layer)
        else:
            scores = torch.bmm(query, projected_keys.transpose(1, 2))
        return masked_attention(scores, keys, mask)


def explicit_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    dropout: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q K^T / sqrt(d_k)) V`` written out, for when the attention weights are wanted.

    Takes the arguments of ``torch.nn.functional.scaled_dot_product_attention`` (query ``(..., Q, d_k)``, key and
    value ``(..., K, d_k)``, a bool ``mask`` broadcastable to ``(..., Q, K)`` with True = may attend, each query
    allowed at least one key; see ``masks.build_attention_mask``) and gives the same result. Returns the outputs
    ``(..., Q, d_k)`` and the weights ``(..., Q, K)``.
    """
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    if is_causal:
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    return F.dropout(weights, p=dropout) @ value, weights


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention, Vaswani et al. (2017), section 3.2:
    ``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O`` with
    ``head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V`` and ``d_k = d_model / h``.

    Self-attention projects queries, keys and values in one matmul: ``qkv_proj.weight`` stacks
    ``[W^Q; W^K; W^V]``, the layout of ``nn.MultiheadAttention.in_proj_weight``. Cross-attention projects the
    queries with ``q_proj`` and the memory's keys and values with ``kv_proj`` (``[W^K; W^V]``); with a cache the
    memory is projected once per source and reused at every decoding step. The attention runs in
    ``torch.nn.functional.scaled_dot_product_attention`` (fused kernels on CPU and GPU), or in
    ``explicit_attention`` when the weights are asked for.

    Args:
        d_model: size of the inputs and outputs.
        num_heads: number of heads h; must divide ``d_model``.
        dropout: dropout on the attention weights (in training).
        cross_attention: attend to a memory (the encoder outputs) instead of the inputs themselves.
        layer_idx: the layer's index in a transformers ``Cache``.
    """

    def __init__(
        self, d_model: int, num_heads: int, dropout: float = 0.0, cross_attention: bool = False, layer_idx: int = 0
    ):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"`d_model`={d_model} is not divisible by `num_heads`={num_heads}.")
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.cross_attention = cross_attention
        self.layer_idx = layer_idx
        if cross_attention:
            self.q_proj = nn.Linear(d_model, d_model)
            self.kv_proj = nn.Linear(d_model, 2 * d_model)
        else:
            self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(
        self,
        hidden_states: torch.Tensor,
        memory: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        is_causal: bool = False,
        cache=None,
        output_attentions: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """
        Args:
            hidden_states: ``(batch, length, d_model)``, the queries (and keys and values in self-attention).
            memory: ``(batch, memory_length, d_model)``, the keys and values of cross-attention.
            mask: bool, broadcastable to ``(batch, num_heads, length, key_length)``, True = may attend (see
                ``masks.build_attention_mask``); None = attend everywhere (or causally, with ``is_causal``).
            cache: self-attention: a ``Cache`` holding the earlier positions' keys and values (a ``DynamicCache``,
                or the ``self_attention_cache`` of an ``EncoderDecoderCache``), extended with the new ones;
                cross-attention: the ``EncoderDecoderCache``, whose ``cross_attention_cache`` keeps the memory's
                keys and values once projected.
            output_attentions: also return the weights ``(batch, num_heads, length, key_length)``.

        Returns the outputs ``(batch, length, d_model)`` and the weights (or None).
        """
        if self.cross_attention:
            (query,) = self._split_heads(self.q_proj(hidden_states))
            key, value = self._memory_keys_values(memory, cache)
        else:
            query, key, value = self._split_heads(self.qkv_proj(hidden_states))
            if cache is not None:
                key, value = cache.update(key, value, self.layer_idx)
        dropout = self.dropout if self.training else 0.0
        if output_attentions:
            outputs, weights = explicit_attention(query, key, value, mask, is_causal, dropout)
        else:
            outputs = F.scaled_dot_product_attention(
                query, key, value, attn_mask=mask, dropout_p=dropout, is_causal=is_causal
            )
            weights = None
        batch, _, length, _ = outputs.shape
        return self.out_proj(outputs.transpose(1, 2).reshape(batch, length, -1)), weights

    def _split_heads(self, projected: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(batch, length, n * d_model)`` -> n tensors ``(batch, num_heads, length, head_dim)``."""
        batch, length, _ = projected.shape
        return projected.view(batch, length, -1, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)

    def _memory_keys_values(self, memory: torch.Tensor, cache) -> tuple[torch.Tensor, torch.Tensor]:
        if cache is not None and cache.is_updated.get(self.layer_idx):
            layer = cache.cross_attention_cache.layers[self.layer_idx]
            return layer.keys, layer.values
        key, value = self._split_heads(self.kv_proj(memory))
        if cache is not None:
            key, value = cache.cross_attention_cache.update(key, value, self.layer_idx)
            cache.is_updated[self.layer_idx] = True
        return key, value
