"""The linear-chain CRF against brute-force enumeration of every tag sequence and against pytorch-crf, padding, and
the BIO constraints."""

import itertools
import math

import pytest
import torch
import torchcrf
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_seqmodels.models.crf import FORBIDDEN, LinearChainCRF, bio_constraints, gather_to_front

BIO = ["O", "B-A", "I-A", "B-B", "I-B"]


def is_valid_bio(tags: list[int]) -> bool:
    previous = "O"
    for tag in map(BIO.__getitem__, tags):
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            return False
        previous = tag
    return True


def random_crf(num_tags: int, seed: int, constrained: bool = False) -> LinearChainCRF:
    crf = LinearChainCRF(num_tags, *(bio_constraints(dict(enumerate(BIO))) if constrained else ()))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in crf.parameters():
            param.copy_(torch.randn(param.shape, generator=generator))
    return crf.double()


def brute_force(crf: LinearChainCRF, emissions: torch.Tensor, allowed=lambda tags: True):
    """(log Z, best path, best score) of one unpadded row ``(length, tags)``, over the sequences ``allowed`` keeps,
    from the definition of the score."""
    scores = {}
    for tags in itertools.product(range(crf.num_tags), repeat=emissions.shape[0]):
        if allowed(list(tags)):
            score = crf.start_transitions[tags[0]] + crf.end_transitions[tags[-1]]
            score = score + sum(emissions[i, tag] for i, tag in enumerate(tags))
            score = score + sum(crf.transitions[a, b] for a, b in zip(tags, tags[1:]))
            scores[tags] = score.item()
    best = max(scores, key=scores.get)
    return math.log(sum(math.exp(score) for score in scores.values())), list(best), scores[best]


def padded_batch(lengths: list[int], num_tags: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Emissions ``(batch, max length, tags)`` with random values at the padding too, and the mask."""
    generator = torch.Generator().manual_seed(seed)
    emissions = 3 * torch.randn(len(lengths), max(lengths), num_tags, generator=generator, dtype=torch.float64)
    mask = torch.arange(max(lengths)) < torch.tensor(lengths).unsqueeze(1)
    return emissions, mask


@settings(max_examples=15, deadline=None)
@given(num_tags=st.integers(1, 3), lengths=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       seed=st.integers(0, 2**16))
def test_log_partition_and_viterbi_equal_brute_force(num_tags, lengths, seed):
    crf = random_crf(num_tags, seed)
    emissions, mask = padded_batch(lengths, num_tags, seed)
    log_z = crf.log_partition(emissions, mask)
    paths, scores = crf.decode(emissions, mask)
    for row, length in enumerate(lengths):
        expected_log_z, expected_path, expected_score = brute_force(crf, emissions[row, :length])
        assert log_z[row].item() == pytest.approx(expected_log_z, abs=1e-9)
        assert paths[row, :length].tolist() == expected_path and (paths[row, length:] == -100).all()
        assert scores[row].item() == pytest.approx(expected_score, abs=1e-9)
        assert crf.sequence_score(emissions, paths.clamp(min=0), mask)[row].item() == pytest.approx(expected_score)


@settings(max_examples=8, deadline=None)
@given(lengths=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2**16))
def test_constrained_crf_sums_and_decodes_over_valid_bio_sequences_only(lengths, seed):
    crf = random_crf(len(BIO), seed, constrained=True)
    emissions, mask = padded_batch(lengths, len(BIO), seed)
    log_z = crf.log_partition(emissions, mask)
    paths, _ = crf.decode(emissions, mask)
    for row, length in enumerate(lengths):
        expected_log_z, expected_path, _ = brute_force(crf, emissions[row, :length], is_valid_bio)
        assert log_z[row].item() == pytest.approx(expected_log_z, abs=1e-9)
        assert paths[row, :length].tolist() == expected_path


@settings(max_examples=20, deadline=None)
@given(length=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_constraints_never_decode_an_invalid_bio_path(length, seed):
    crf = random_crf(len(BIO), seed, constrained=True)
    emissions, mask = padded_batch([length], len(BIO), seed)
    emissions[..., [2, 4]] += 50  # the I- tags win every position on their own
    paths, _ = crf.decode(emissions.float(), mask)
    assert is_valid_bio(paths[0].tolist())


def test_padding_never_changes_a_row():
    crf = random_crf(3, 0)
    emissions, mask = padded_batch([2, 5, 1], 3, 1)
    tags = torch.randint(0, 3, mask.shape, generator=torch.Generator().manual_seed(2))
    batched = (crf.neg_log_likelihood(emissions, tags, mask), *crf.decode(emissions, mask))
    for row, length in enumerate([2, 5, 1]):
        alone = (crf.neg_log_likelihood(emissions[row:row + 1, :length], tags[row:row + 1, :length]),
                 *crf.decode(emissions[row:row + 1, :length]))
        torch.testing.assert_close(batched[0][row], alone[0][0])
        assert batched[1][row, :length].tolist() == alone[1][0].tolist()
        torch.testing.assert_close(batched[2][row], alone[2][0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_nll_and_paths_as_pytorch_crf(seed):
    crf = random_crf(4, seed).float()
    reference = torchcrf.CRF(4, batch_first=True)
    reference.load_state_dict(crf.state_dict())  # the same three parameters, by the same names
    emissions, mask = padded_batch([3, 6, 1, 4], 4, seed)
    emissions = emissions.float()
    tags = torch.randint(0, 4, mask.shape, generator=torch.Generator().manual_seed(seed))
    torch.testing.assert_close(crf.neg_log_likelihood(emissions, tags, mask),
                               -reference(emissions, tags, mask, reduction="none"))
    paths, _ = crf.decode(emissions, mask)
    assert [row[row != -100].tolist() for row in paths] == reference.decode(emissions, mask)


def test_gather_to_front_keeps_order_and_counts():
    values = torch.arange(12.0).view(2, 6)
    keep = torch.tensor([[False, True, False, True, True, False], [True, False, False, False, False, False]])
    gathered, mask, order = gather_to_front(values, keep)
    assert gathered[0].tolist() == [1.0, 3.0, 4.0] and mask.tolist() == [[True] * 3, [True, False, False]]
    assert gathered[1, 0].item() == 6.0 and order[0].tolist() == [1, 3, 4]


def test_bio_constraints_by_hand():
    allowed_start, allowed = bio_constraints(dict(enumerate(BIO)))
    assert allowed_start == [True, True, False, True, False]
    forbidden = {(BIO[a], BIO[b]) for a in range(5) for b in range(5) if not allowed[a][b]}
    assert forbidden == {("O", "I-A"), ("O", "I-B"), ("B-A", "I-B"), ("I-A", "I-B"), ("B-B", "I-A"), ("I-B", "I-A")}
    assert LinearChainCRF(5, allowed_start, allowed).transition_penalty[0, 2].item() == FORBIDDEN


@pytest.mark.parametrize(
    "mask, message",
    [([[False, True]], "must start with a real position"), ([[True, False, True]], "real position after padding")],
)
def test_bad_masks_are_refused(mask, message):
    mask = torch.tensor(mask)
    with pytest.raises(ValueError, match=message):
        LinearChainCRF(2).log_partition(torch.zeros(*mask.shape, 2), mask)


def test_non_iob2_gold_tags_are_refused_by_a_constrained_crf():
    crf = random_crf(len(BIO), 0, constrained=True)
    with pytest.raises(ValueError, match=r"Row 0's tags \[0, 2\] take a transition that the BIO constraints forbid"):
        crf.neg_log_likelihood(torch.zeros(1, 2, 5, dtype=torch.float64), torch.tensor([[0, 2]]))
    with pytest.raises(ValueError, match=r"needs BIO \(IOB2\) labels .*\['S-A'\] are not BIO"):
        bio_constraints({0: "O", 1: "S-A"})
