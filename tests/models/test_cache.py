"""RecurrentCache: the batch operations generate() applies (reorder, repeat, select) against hand-computed rows."""

import pytest
import torch

from hf_seqmodels import RecurrentConfig, RecurrentModel
from hf_seqmodels.models.cache import RecurrentCache, RecurrentLayerCache
from hf_seqmodels.models.modeling_utils import output_cache

BATCH, LAYERS, DIRECTIONS, HIDDEN = 3, 2, 2, 4


def labelled_cache() -> RecurrentCache:
    """Two LSTM layers, two directions, and an extra tensor; every entry holds the number of its batch row, plus
    ``10 * layer + 100 * part`` so that a mixed-up layer or (h, c) part would show."""
    cache = RecurrentCache()
    rows = torch.arange(BATCH, dtype=torch.float)
    states = [
        tuple(rows.view(1, BATCH, 1).expand(DIRECTIONS, BATCH, HIDDEN) + 10 * layer + 100 * part for part in (0, 1))
        for layer in range(LAYERS)
    ]
    cache.store(states, 7, input_feed=rows.view(BATCH, 1).expand(BATCH, 5).clone())
    cache.per_input = {"projected_keys": rows.view(BATCH, 1, 1).expand(BATCH, 6, 5).clone()}
    return cache


def rows_of(cache: RecurrentCache) -> list[int]:
    """The original row behind each current row, checked to agree across layers, parts, directions and features."""
    found = []
    for layer, state in enumerate(cache.states):
        for part, tensor in enumerate(state):
            rows = tensor - 10 * layer - 100 * part
            assert bool((rows == rows[:1, :, :1]).all()), "a row mixes values from different rows"
            found.append(rows[0, :, 0].tolist())
    feed = cache.extras["input_feed"]
    assert bool((feed == feed[:, :1]).all())
    found.append(feed[:, 0].tolist())
    assert all(rows == found[0] for rows in found), found
    return [int(row) for row in found[0]]


def test_reorder_cache_follows_beam_indices():
    cache = labelled_cache()
    cache.reorder_cache(torch.tensor([2, 0, 0]))
    assert rows_of(cache) == [2, 0, 0]
    cache.reorder_cache(torch.tensor([1, 1, 0]))  # new row i = current row beam_idx[i]
    assert rows_of(cache) == [0, 0, 2]


def per_input_rows(cache: RecurrentCache) -> list[int]:
    keys = cache.per_input["projected_keys"]
    assert bool((keys == keys[:, :1, :1]).all()), "a row mixes values from different rows"
    return [int(row) for row in keys[:, 0, 0].tolist()]


def test_reorder_cache_leaves_per_input_tensors():
    """Beam search moves beams within their input only, so the per-input tensors stay where they are."""
    cache = labelled_cache()
    cache.reorder_cache(torch.tensor([2, 0, 0]))
    assert rows_of(cache) == [2, 0, 0] and per_input_rows(cache) == [0, 1, 2]


def test_batch_repeat_interleave():
    cache = labelled_cache()
    cache.batch_repeat_interleave(2)
    assert rows_of(cache) == per_input_rows(cache) == [0, 0, 1, 1, 2, 2]


def test_batch_select_indices():
    cache = labelled_cache()
    cache.batch_select_indices(torch.tensor([2, 0]))
    assert rows_of(cache) == per_input_rows(cache) == [2, 0]


def test_shared_per_input_tensors_follow_the_rows_that_share_them():
    """After ``share_per_input(k)`` a per-input row serves ``k`` consecutive rows: repeating and selecting rows
    (whole runs) give the inputs that the same operations give without sharing, each once per run."""
    cache, reference = labelled_cache(), labelled_cache()
    for each in (cache, reference):
        each.batch_repeat_interleave(2)  # rows 0 0 1 1 2 2: runs of 2 rows share an input
    cache.share_per_input(2)
    assert per_input_rows(cache) == [0, 1, 2] and cache.rows_per_input == 2
    for operation in (lambda c: c.batch_repeat_interleave(2), lambda c: c.batch_select_indices(torch.tensor(
            [8, 9, 10, 11, 0, 1, 2, 3])), lambda c: c.reorder_cache(torch.tensor([1, 0, 2, 2, 7, 6, 5, 4]))):
        operation(cache)
        operation(reference)
        per_row = per_input_rows(reference)
        assert rows_of(cache) == rows_of(reference)
        assert per_input_rows(cache) == per_row[::cache.rows_per_input], (per_input_rows(cache), per_row)
    with pytest.raises(ValueError, match="already shared"):
        cache.share_per_input(2)
    cache.reset()
    assert cache.rows_per_input == 1 and cache.per_input == {}


def test_crop_reset_and_flags():
    cache = labelled_cache()
    cache.crop(7)  # nothing to roll back
    assert cache.get_seq_length() == 7 and rows_of(cache) == [0, 1, 2]
    with pytest.raises(ValueError, match="cannot be rolled back"):
        cache.crop(6)
    assert not cache.is_croppable and not cache.is_compileable
    cache.reset()
    assert cache.states == [] and cache.extras == {} and cache.per_input == {} and cache.get_seq_length() == 0
    assert len(cache) == LAYERS and all(layer.get_seq_length() == 0 for layer in cache.layers)


def test_crop_follows_transformers_convention():
    """crop(-n) removes n positions (transformers 5.24): refused for a state; crop(0) removes none."""
    cache = labelled_cache()
    cache.crop(0)
    with pytest.raises(ValueError, match="cannot be rolled back"):
        cache.crop(-1)
    assert rows_of(cache) == [0, 1, 2] and cache.get_seq_length() == 7


def test_seq_length_counts_padding_and_continuing_equals_one_pass():
    """get_seq_length() counts every position consumed, pads included, and a cached state continues exactly."""
    torch.manual_seed(0)
    config = RecurrentConfig(vocab_size=10, embedding_size=6, hidden_size=5, num_layers=2, cell_type="lstm")
    model = RecurrentModel(config).eval()
    ids = torch.randint(0, 10, (2, 5))
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    with torch.no_grad():
        whole = model(ids, attention_mask=mask).last_hidden_state
        first = model(ids[:, :3], attention_mask=mask[:, :3], use_cache=True)
        assert output_cache(first).get_seq_length() == 3
        rest = model(ids[:, 3:], attention_mask=mask, cache=output_cache(first), use_cache=True)
    assert output_cache(rest).get_seq_length() == 5
    torch.testing.assert_close(rest.last_hidden_state, whole[:, 3:], rtol=0, atol=1e-6)


def test_static_cache_writes_and_reorders_in_place():
    """A static cache keeps its tensors (the addresses a CUDA graph reads) and overwrites their values."""
    cache = RecurrentCache(static=True)
    first = labelled_cache()
    cache.store(first.states, 2, **first.extras)
    tensors = cache.tensors()
    assert all(mine is not theirs for mine, theirs in zip(tensors, first.tensors()))  # copies, not the caller's
    later = labelled_cache()
    later.reorder_cache(torch.tensor([1, 2, 0]))
    cache.store(later.states, 1, **later.extras)
    assert rows_of(cache) == [1, 2, 0] and cache.get_seq_length() == 3
    cache.reorder_cache(torch.tensor([2, 2, 1]))
    assert rows_of(cache) == [0, 0, 2]
    assert all(a is b for a, b in zip(cache.tensors(), tensors))


def test_adopt_continues_in_the_given_tensors():
    cache = labelled_cache()
    cache.reorder_cache(torch.tensor([2, 0, 1]))
    target = labelled_cache()
    states = [tuple(torch.zeros_like(t) for t in state) for state in target.states]
    extras = {name: torch.zeros_like(t) for name, t in target.extras.items()}
    cache.adopt(states, extras)
    given = [t for state in states for t in state] + list(extras.values())
    assert all(mine is theirs for mine, theirs in zip(cache.tensors(), given, strict=True))
    assert rows_of(cache) == [2, 0, 1] and cache.get_seq_length() == 7


@pytest.mark.parametrize("cell_type", ["rnn", "lstm", "gru"])
def test_one_cache_layer_per_recurrent_layer(cell_type):
    """After a chunk, the cache holds one RecurrentLayerCache per recurrent layer, each with that layer's final state
    (the model's `final_state`) and the number of positions read."""
    torch.manual_seed(0)
    config = RecurrentConfig(vocab_size=10, embedding_size=6, hidden_size=5, num_layers=3, cell_type=cell_type)
    model = RecurrentModel(config).eval()
    assert len(RecurrentCache()) == 0
    with torch.no_grad():
        out = model(torch.randint(0, 10, (2, 4)), use_cache=True)
    cache = output_cache(out)
    assert len(cache) == 3 and all(isinstance(layer, RecurrentLayerCache) for layer in cache.layers)
    for layer, state in zip(cache.layers, out.final_state, strict=True):
        assert len(layer.recurrent_states) == (2 if cell_type == "lstm" else 1)
        for mine, expected in zip(layer.recurrent_states, state, strict=True):
            torch.testing.assert_close(mine, expected, rtol=0, atol=0)
        assert layer.get_seq_length() == 4
    assert cache.get_seq_length() == 4 and not any(cache.is_linear)


def random_cache(static: bool = False) -> RecurrentCache:
    cache = RecurrentCache(static=static)
    cache.store([tuple(torch.randn(DIRECTIONS, BATCH, HIDDEN) for _ in range(parts)) for parts in (2, 1)], 3,
                input_feed=torch.randn(BATCH, 5))
    cache.per_input = {"projected_keys": torch.randn(BATCH, 6, 5)}
    return cache


def by_hand(cache: RecurrentCache, index: torch.Tensor, per_input: bool) -> tuple[list, dict, dict]:
    """Every layer's state, the extras and the per-input tensors with batch rows ``index`` taken by hand."""
    states = [[t[:, index] for t in layer.recurrent_states] for layer in cache.layers]
    return (states, {name: t[index] for name, t in cache.extras.items()},
            {name: t[index] if per_input else t for name, t in cache.per_input.items()})


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("operation", ["reorder", "select", "repeat"])
def test_layer_batch_operations_equal_indexing_by_hand(operation, static):
    torch.manual_seed(0)
    cache = random_cache(static)
    if operation == "repeat":
        index = torch.tensor([0, 0, 1, 1, 2, 2])
    else:
        index = torch.tensor([2, 0, 0]) if operation == "reorder" else torch.tensor([2, 0])
    expected = by_hand(cache, index, per_input=operation != "reorder")
    if operation == "reorder":
        cache.reorder_cache(index)
    elif operation == "select":
        cache.batch_select_indices(index)
    else:
        cache.batch_repeat_interleave(2)
    found = ([list(layer.recurrent_states) for layer in cache.layers], cache.extras, cache.per_input)
    torch.testing.assert_close(found, expected, rtol=0, atol=0)


def test_a_cache_copied_by_hand_continues_like_the_original():
    """Setting ``states`` and ``seen_tokens`` (what a hand-written search does to fork a hypothesis) gives a cache
    with its own layers that continues exactly as the original, which stays as it was."""
    torch.manual_seed(0)
    config = RecurrentConfig(vocab_size=10, embedding_size=6, hidden_size=5, num_layers=2, cell_type="lstm")
    model = RecurrentModel(config).eval()
    ids = torch.randint(0, 10, (2, 5))
    with torch.no_grad():
        cache = output_cache(model(ids[:, :3], use_cache=True))
        before = [t.clone() for t in cache.tensors()]
        copy = RecurrentCache()
        copy.states, copy.seen_tokens = list(cache.states), cache.seen_tokens
        assert len(copy) == 2 and copy.get_seq_length() == 3 and copy.layers[0] is not cache.layers[0]
        forked = model(ids[:, 3:], cache=copy, use_cache=True).last_hidden_state
        torch.testing.assert_close(cache.tensors(), before, rtol=0, atol=0)
        assert copy.get_seq_length() == 5 and cache.get_seq_length() == 3
        original = model(ids[:, 3:], cache=cache, use_cache=True).last_hidden_state
    torch.testing.assert_close(forked, original, rtol=0, atol=0)
