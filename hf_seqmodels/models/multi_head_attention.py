"""The Transformer's multi-head scaled dot-product attention (Vaswani et al., 2017), through transformers' attention
functions: ``"sdpa"`` (torch's fused kernel) or ``"eager"`` (written out, returning the attention weights)."""

import torch
from torch import nn
from torch.nn import functional as F
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS


def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool = False,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q K^T / sqrt(d_k)) V`` written out: the ``"eager"`` attention function, with the arguments and
    results of transformers' ``sdpa_attention_forward`` (``ALL_ATTENTION_FUNCTIONS["sdpa"]``), and the weights.

    query ``(batch, heads, Q, d_k)``, key and value ``(batch, heads, K, d_k)``; ``attention_mask`` bool,
    broadcastable to ``(batch, heads, Q, K)``, True = may attend, each query allowed at least one key (see
    ``masks.build_attention_mask``); ``is_causal`` (with no mask) lets each query see the keys up to its own position.
    Returns the outputs ``(batch, Q, heads, d_k)`` and the weights ``(batch, heads, Q, K)``, exactly 0 on masked keys.
    """
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    scores = query @ key.transpose(-2, -1) * scaling
    if is_causal:
        attention_mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    outputs = F.dropout(weights, p=dropout, training=module.training) @ value
    return outputs.transpose(1, 2).contiguous(), weights


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention, Vaswani et al. (2017), section 3.2:
    ``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O`` with
    ``head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V`` and ``d_k = d_model / h``.

    Self-attention projects queries, keys and values in one matmul: ``qkv_proj.weight`` stacks
    ``[W^Q; W^K; W^V]``, the layout of ``nn.MultiheadAttention.in_proj_weight``. Cross-attention projects the
    queries with ``q_proj`` and the memory's keys and values with ``kv_proj`` (``[W^K; W^V]``); with a cache the
    memory is projected once per source and reused at every decoding step. The attention runs in the function of
    transformers' ``ALL_ATTENTION_FUNCTIONS`` that ``config._attn_implementation`` names (the model's
    ``attn_implementation``): ``"sdpa"``, ``torch.nn.functional.scaled_dot_product_attention`` (fused kernels on CPU
    and GPU), or ``"eager"``, ``eager_attention_forward``. A call that asks for the weights (``output_attentions``)
    runs in ``"eager"`` whatever the implementation, since the fused kernel does not return them.

    Args:
        d_model: size of the inputs and outputs.
        num_heads: number of heads h; must divide ``d_model``.
        dropout: dropout on the attention weights (in training).
        cross_attention: attend to a memory (the encoder outputs) instead of the inputs themselves.
        layer_idx: the layer's index in a transformers ``Cache``.
        config: the model's config, whose ``_attn_implementation`` picks the attention function; ``"sdpa"`` without.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        cross_attention: bool = False,
        layer_idx: int = 0,
        config=None,
    ):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"`d_model`={d_model} is not divisible by `num_heads`={num_heads}.")
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.cross_attention = cross_attention
        self.layer_idx = layer_idx
        self.config = config
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
        implementation = "eager" if output_attentions else self._implementation()
        attention = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
        dropout = self.dropout if self.training else 0.0
        outputs, weights = attention(self, query, key, value, mask, dropout=dropout, is_causal=is_causal)
        return self.out_proj(outputs.reshape(*outputs.shape[:2], -1)), weights

    def _implementation(self) -> str:
        return "sdpa" if self.config is None else self.config._attn_implementation

    def _split_heads(self, projected: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(batch, length, n * d_model)`` -> n tensors ``(batch, num_heads, length, head_dim)``."""
        batch, length, width = projected.shape
        # n spelt out, not -1: under torch.compile an unknown batch or length would leave -1 undecidable
        parts = width // (self.num_heads * self.head_dim)
        return projected.view(batch, length, parts, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)

    def _memory_keys_values(self, memory: torch.Tensor, cache) -> tuple[torch.Tensor, torch.Tensor]:
        if cache is not None and cache.is_updated.get(self.layer_idx):
            layer = cache.cross_attention_cache.layers[self.layer_idx]
            return layer.keys, layer.values
        key, value = self._split_heads(self.kv_proj(memory))
        if cache is not None:
            key, value = cache.cross_attention_cache.update(key, value, self.layer_idx)
            cache.is_updated[self.layer_idx] = True
        return key, value
