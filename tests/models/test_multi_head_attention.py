"""MultiHeadAttention against the equations of Vaswani et al. (2017) written here, and against
torch.nn.MultiheadAttention with copied weights; its masks and its use of transformers' caches."""

import math

import pytest
import torch
from torch import nn
from transformers.cache_utils import DynamicCache, EncoderDecoderCache

from hf_seqmodels.models.multi_head_attention import MultiHeadAttention
from hf_seqmodels.models.masks import build_attention_mask

D_MODEL, HEADS = 16, 4


def attention_module(cross_attention: bool = False, seed: int = 0) -> MultiHeadAttention:
    torch.manual_seed(seed)
    module = MultiHeadAttention(D_MODEL, HEADS, cross_attention=cross_attention)
    with torch.no_grad():
        for param in module.parameters():
            param.normal_(0.0, 0.5)
    return module.eval()


def textbook(module: MultiHeadAttention, queries, memory, allowed) -> tuple[torch.Tensor, torch.Tensor]:
    """Concat_i(softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V) W^O, one head and one sequence at a time, with
    ``allowed[b, q, k]`` (bool) saying which keys each query may see. Returns outputs and weights (b, h, q, k)."""
    if module.cross_attention:
        w_q, b_q = module.q_proj.weight, module.q_proj.bias
        (w_k, w_v), (b_k, b_v) = module.kv_proj.weight.chunk(2), module.kv_proj.bias.chunk(2)
    else:
        (w_q, w_k, w_v), (b_q, b_k, b_v) = module.qkv_proj.weight.chunk(3), module.qkv_proj.bias.chunk(3)
    d_k = D_MODEL // HEADS
    outputs, all_weights = [], []
    for b in range(queries.shape[0]):
        heads, weights = [], []
        for i in range(HEADS):
            rows = slice(i * d_k, (i + 1) * d_k)
            q = queries[b] @ w_q[rows].T + b_q[rows]
            k = memory[b] @ w_k[rows].T + b_k[rows]
            v = memory[b] @ w_v[rows].T + b_v[rows]
            scores = (q @ k.T / math.sqrt(d_k)).masked_fill(~allowed[b], float("-inf"))
            weight = torch.softmax(scores, dim=-1)
            heads.append(weight @ v)
            weights.append(weight)
        outputs.append(torch.cat(heads, dim=-1) @ module.out_proj.weight.T + module.out_proj.bias)
        all_weights.append(torch.stack(weights))
    return torch.stack(outputs), torch.stack(all_weights)


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_is_the_textbook_equation(causal):
    module = attention_module()
    x = torch.randn(2, 5, D_MODEL)
    key_mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    mask, is_causal = build_attention_mask(key_mask, 5, 5, causal, x.device)
    allowed = key_mask[:, None, :].expand(2, 5, 5)
    if causal:
        allowed = allowed & torch.ones(5, 5, dtype=torch.bool).tril()
    expected, expected_weights = textbook(module, x, x, allowed)
    with torch.no_grad():
        fused, no_weights = module(x, mask=mask, is_causal=is_causal)
        explicit, weights = module(x, mask=mask, is_causal=is_causal, output_attentions=True)
    assert no_weights is None
    torch.testing.assert_close(fused, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(explicit, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(weights, expected_weights, rtol=0, atol=1e-6)


def test_cross_attention_is_the_textbook_equation():
    module = attention_module(cross_attention=True)
    queries, memory = torch.randn(2, 3, D_MODEL), torch.randn(2, 6, D_MODEL)
    key_mask = torch.tensor([[True] * 6, [True] * 2 + [False] * 4])
    expected, expected_weights = textbook(module, queries, memory, key_mask[:, None, :].expand(2, 3, 6))
    with torch.no_grad():
        fused, _ = module(queries, memory=memory, mask=key_mask[:, None, None, :])
        explicit, weights = module(queries, memory=memory, mask=key_mask[:, None, None, :], output_attentions=True)
    torch.testing.assert_close(fused, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(explicit, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(weights, expected_weights, rtol=0, atol=1e-6)


@pytest.mark.parametrize("cross_attention", [False, True])
def test_equals_torch_multihead_attention_with_copied_weights(cross_attention):
    module = attention_module(cross_attention)
    reference = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True).eval()
    in_proj = (module.q_proj, module.kv_proj) if cross_attention else (module.qkv_proj,)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([layer.weight for layer in in_proj]))
        reference.in_proj_bias.copy_(torch.cat([layer.bias for layer in in_proj]))
        reference.out_proj.weight.copy_(module.out_proj.weight)
        reference.out_proj.bias.copy_(module.out_proj.bias)
    queries = torch.randn(2, 4, D_MODEL)
    memory = torch.randn(2, 6, D_MODEL) if cross_attention else queries
    key_mask = torch.ones(2, memory.shape[1], dtype=torch.bool)
    key_mask[1, -2:] = False
    with torch.no_grad():
        got, weights = module(queries, memory=memory if cross_attention else None, mask=key_mask[:, None, None, :],
                              output_attentions=True)
        fused, _ = module(queries, memory=memory if cross_attention else None, mask=key_mask[:, None, None, :])
        expected, expected_weights = reference(queries, memory, memory, key_padding_mask=~key_mask,
                                               average_attn_weights=False)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(fused, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(weights, expected_weights, rtol=0, atol=1e-6)


def test_query_with_no_visible_key_attends_everywhere_instead():
    """A left-padded position of a causal sequence sees only padding: its row of the mask is opened (its output is
    ignored), so that no kernel produces NaN there to spread through the padding's keys and values."""
    key_mask = torch.tensor([[False, False, True, True]])
    mask, is_causal = build_attention_mask(key_mask, 4, 4, True, key_mask.device)
    expected = torch.tensor([[True, True, True, True], [True, True, True, True],
                             [False, False, True, False], [False, False, True, True]])
    assert not is_causal and torch.equal(mask[0, 0], expected)
    module = attention_module()
    x = torch.randn(1, 4, D_MODEL)
    with torch.no_grad():
        fused, _ = module(x, mask=mask)
        explicit, weights = module(x, mask=mask, output_attentions=True)
    assert torch.isfinite(fused).all()
    torch.testing.assert_close(fused, explicit, rtol=0, atol=1e-5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, HEADS, 4))


def test_attention_mask_with_a_cached_prefix():
    """Queries are the last positions: query i of a chunk after P cached ones sees keys 0..P+i that are real."""
    key_mask = torch.tensor([[False, True, True, True, True, True]])
    mask, is_causal = build_attention_mask(key_mask, 2, 6, True, key_mask.device)
    expected = torch.tensor([[False, True, True, True, True, False], [False, True, True, True, True, True]])
    assert not is_causal and torch.equal(mask[0, 0], expected)
    assert build_attention_mask(None, 5, 5, True, key_mask.device) == (None, True)
    assert build_attention_mask(None, 1, 6, True, key_mask.device) == (None, False)
    assert build_attention_mask(None, 5, 5, False, key_mask.device) == (None, False)


def test_self_attention_cache_step_by_step_equals_the_full_causal_sequence():
    module = attention_module()
    x = torch.randn(2, 5, D_MODEL)
    cache = DynamicCache()
    with torch.no_grad():
        full, _ = module(x, is_causal=True)
        steps = [module(x[:, t : t + 1], cache=cache)[0] for t in range(5)]
    assert cache.get_seq_length() == 5
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-5)


def test_cross_attention_cache_projects_the_memory_once():
    """After the first step the memory's keys and values come from the cache: the memory is not read again."""
    module = attention_module(cross_attention=True)
    queries, memory = torch.randn(2, 3, D_MODEL), torch.randn(2, 6, D_MODEL)
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    with torch.no_grad():
        expected, _ = module(queries, memory=memory)
        first, _ = module(queries[:, :1], memory=memory, cache=cache)
        later, _ = module(queries[:, 1:], memory=None, cache=cache)
    assert cache.is_updated[0] and cache.cross_attention_cache.get_seq_length() == 6
    torch.testing.assert_close(torch.cat([first, later], dim=1), expected, rtol=0, atol=1e-5)


def test_d_model_must_split_into_heads():
    with pytest.raises(ValueError, match="d_model"):
        MultiHeadAttention(18, 4)
