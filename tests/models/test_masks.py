"""masks.build_attention_mask against a brute-force mask, with and without a static cache's buffer."""

import pytest
import torch
from torch.nn import functional as F

from hf_seqmodels.models.masks import build_attention_mask
from hf_seqmodels.models.multi_head_attention import eager_attention_forward


def brute_force(key_mask, query_length: int, key_length: int, buffer_length: int) -> torch.Tensor:
    """allowed[b, q, k]: key k is a real, filled position at or before query q (which sits at key_length -
    query_length + q); a query that may see nothing sees everything instead."""
    batch = 1 if key_mask is None else key_mask.shape[0]
    allowed = torch.zeros(batch, query_length, buffer_length, dtype=torch.bool)
    for b in range(batch):
        for q in range(query_length):
            for k in range(buffer_length):
                real = key_mask is None or bool(key_mask[b, k]) if k < key_length else False
                allowed[b, q, k] = real and k <= key_length - query_length + q
            if not allowed[b, q].any():
                allowed[b, q] = True
    return allowed


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("query_length, key_length, buffer_length", [(3, 3, 3), (3, 3, 8), (1, 5, 8), (2, 5, 5)])
def test_causal_mask_matches_brute_force(padded, query_length, key_length, buffer_length):
    key_mask = None
    if padded:
        key_mask = torch.ones(2, key_length, dtype=torch.bool)
        key_mask[1, :2] = False  # left padding
    mask, is_causal = build_attention_mask(key_mask, query_length, key_length, True, torch.device("cpu"),
                                           buffer_length)
    expected = brute_force(key_mask, query_length, key_length, buffer_length)
    if mask is None:
        assert is_causal == (query_length > 1) and buffer_length == key_length
        mask = torch.ones(query_length, key_length, dtype=torch.bool).tril(key_length - query_length)[None, None]
    assert bool((mask[:, 0].expand_as(expected) == expected).all())


@pytest.mark.parametrize("padded", [False, True])
def test_static_buffer_contents_do_not_matter(padded):
    """Attention over a static cache's buffer, whose empty positions hold anything, equals attention over the
    filled keys alone, in both attention functions."""
    torch.manual_seed(0)
    query = torch.randn(2, 4, 2, 8)
    key, value = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 8)
    key_mask = torch.tensor([[True] * 5, [False, False, True, True, True]]) if padded else None
    garbage = torch.randn(2, 4, 3, 8) * 100
    buffer_key, buffer_value = torch.cat([key, garbage], 2), torch.cat([value, garbage], 2)
    mask, is_causal = build_attention_mask(key_mask, 2, 5, True, query.device)
    buffer_mask, buffer_causal = build_attention_mask(key_mask, 2, 5, True, query.device, buffer_length=8)
    assert not buffer_causal
    expected, expected_weights = eager_attention_forward(torch.nn.Module(), query, key, value, mask,
                                                         is_causal=is_causal)
    got, weights = eager_attention_forward(torch.nn.Module(), query, buffer_key, buffer_value, buffer_mask)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(weights[..., :5], expected_weights, rtol=0, atol=1e-6)
    assert bool((weights[..., 5:] == 0).all())
    fused = F.scaled_dot_product_attention(query, buffer_key, buffer_value, attn_mask=buffer_mask)
    torch.testing.assert_close(fused.transpose(1, 2), expected, rtol=0, atol=1e-5)
