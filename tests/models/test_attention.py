"""Bahdanau's and Luong's attention against their textbook equations, written out here one query and one source
position at a time with the modules' weights."""

import pytest
import torch

from hf_seqmodels.models.attention import AdditiveAttention, LuongAttention

QUERY, KEY, ATT = 5, 6, 7


def reference(score_fn, query, keys, mask):
    """For every batch row b and query i: e_ij = score_fn(q_i, k_j) over the real positions j, a = softmax(e),
    c_i = sum_j a_ij k_j. Padded positions get weight 0. Returns context (B, Q, K) and weights (B, Q, S)."""
    batch, num_queries, length = query.shape[0], query.shape[1], keys.shape[1]
    contexts = torch.zeros(batch, num_queries, keys.shape[2], dtype=torch.float64)
    weights = torch.zeros(batch, num_queries, length, dtype=torch.float64)
    for b in range(batch):
        real = [j for j in range(length) if mask[b, j]]
        for i in range(num_queries):
            energies = torch.stack([score_fn(query[b, i], keys[b, j]) for j in real])
            probs = torch.exp(energies - energies.max())
            probs = probs / probs.sum()
            for p, j in zip(probs, real):
                weights[b, i, j] = p
                contexts[b, i] += p * keys[b, j]
    return contexts, weights


@pytest.fixture
def inputs():
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(3, 4, QUERY, generator=generator, dtype=torch.float64)
    keys = torch.randn(3, 5, KEY, generator=generator, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0]], dtype=torch.bool)
    return query, keys, mask


def check(module, score_fn, inputs):
    query, keys, mask = inputs
    context, weights = module(query, keys, mask)
    expected_context, expected_weights = reference(score_fn, query, keys, mask)
    torch.testing.assert_close(weights, expected_weights)
    torch.testing.assert_close(context, expected_context)
    assert bool((weights[~mask.unsqueeze(1).expand_as(weights)] == 0).all()), "padding must get exactly zero weight"
    # The keys' projection computed once and passed back gives the same result (what decoding steps do).
    context_again, _ = module(query, keys, mask, projected_keys=module.project_keys(keys))
    torch.testing.assert_close(context_again, context)


def test_bahdanau_additive(inputs):
    """Bahdanau et al. (2015), eq. (6): e_ij = v^T tanh(W s + U h_j)."""
    module = AdditiveAttention(QUERY, KEY, ATT).double()
    W, U, v = module.query_layer.weight, module.key_layer.weight, module.energy_layer.weight[0]
    check(module, lambda s, h: v @ torch.tanh(W @ s + U @ h), inputs)


def test_luong_dot(inputs):
    """Luong et al. (2015), eq. (8): score(h_t, h_s) = h_t^T h_s."""
    query, keys, mask = inputs
    module = LuongAttention("dot", KEY, KEY).double()
    check(module, lambda h_t, h_s: h_t @ h_s, (torch.randn(3, 4, KEY, dtype=torch.float64), keys, mask))


def test_luong_general(inputs):
    """Luong et al. (2015), eq. (8): score(h_t, h_s) = h_t^T W_a h_s."""
    module = LuongAttention("general", QUERY, KEY).double()
    W_a = module.key_layer.weight  # (QUERY, KEY)
    check(module, lambda h_t, h_s: h_t @ W_a @ h_s, inputs)


def test_luong_concat(inputs):
    """Luong et al. (2015), eq. (8): score(h_t, h_s) = v_a^T tanh(W_a [h_t; h_s])."""
    module = LuongAttention("concat", QUERY, KEY, ATT).double()
    W_a, v_a = module.concat_layer.weight, module.energy_layer.weight[0]
    check(module, lambda h_t, h_s: v_a @ torch.tanh(W_a @ torch.cat([h_t, h_s])), inputs)


def test_no_mask_means_every_position(inputs):
    query, keys, _ = inputs
    module = LuongAttention("general", QUERY, KEY).double()
    full = torch.ones(keys.shape[:2], dtype=torch.bool)
    torch.testing.assert_close(module(query, keys)[0], module(query, keys, full)[0])


def test_bad_options():
    with pytest.raises(ValueError, match="'bilinear' is not supported"):
        LuongAttention("bilinear", QUERY, KEY)
    with pytest.raises(ValueError, match="same size"):
        LuongAttention("dot", QUERY, KEY)
    with pytest.raises(ValueError, match="attention_size"):
        LuongAttention("concat", QUERY, KEY)
