"""The ``translation`` entry (``benchmarks.entries.translation_decoding``): on a fake clock, the searches take turns on every sentence
and the headline baseline is the fastest per-sentence search; on its smoke results, the searches that share
``generate()``'s semantics find its best hypotheses, every speed is a median with its quartiles, and the
decoder-call accounting is filled in."""

import statistics

import pytest

from benchmarks.entries import translation_decoding
from benchmarks.helpers.common import Rounds, Settings
from benchmarks.entries.translation_decoding import (
    BASELINES, FASTEST, PER_SENTENCE, batch_positions, fastest_per_sentence, summarize, turns_by_sentence,
)


def test_batch_positions_spread_a_round_s_batches_evenly():
    assert batch_positions(4, 4) == [0, 1, 2, 3]  # one sentence a batch: its own position
    assert batch_positions(8, 2) == [2, 6]
    assert batch_positions(256, 1) == [128]
    assert len(set(batch_positions(5, 3))) == 3


def test_searches_take_turns_on_every_sentence(clock):
    calls = []

    def search(name: str, seconds: float):
        def decode(ids, mask):
            calls.append((name, ids))
            clock.advance(seconds)
            return [[10 * position] for position in ids]  # a sentence's "tokens": its position, times ten
        return decode

    one_by_one = [([position], [position], None) for position in range(4)]
    batched = [([3, 1], [3, 1], None), ([0, 2], [0, 2], None)]  # not in test order
    plan = {"single": (search("single", 1.0), one_by_one), "batched": (search("batched", 0.5), batched)}
    first, rounds = turns_by_sentence(plan, 4, rounds=2, device="cpu")
    # On every sentence both searches, in order on one, reversed on the next and from round to round; the batched
    # search decodes its two batches at positions 1 and 3, where it has them.
    first_pass = [("single", [0]), ("batched", [3, 1]), ("single", [1]), ("single", [2]), ("batched", [0, 2]),
                  ("single", [3])]
    second = [("single", [0]), ("single", [1]), ("batched", [3, 1]), ("single", [2]), ("single", [3]),
              ("batched", [0, 2])]
    assert calls == first_pass + second + first_pass
    assert first == {"single": 4.0, "batched": 1.0}
    assert rounds.seconds == {"single": [4.0, 4.0], "batched": [1.0, 1.0]}
    assert rounds.last == {name: [[0], [10], [20], [30]] for name in plan}  # in test order


def test_the_headline_baseline_is_the_fastest_per_sentence_search():
    seconds = {"beams_batched": [10.0, 12.0, 14.0], "ours_batch1": [13.0, 9.0, 11.0],  # medians 12 and 11
               "generate_batch1": [9.5, 15.0, 16.0], "per_hypothesis": [30.0, 31.0, 32.0],
               "generate_sorted": [1.0, 2.0, 1.0], "generate": [2.0, 2.0, 2.0], "custom_sorted": [0.5, 1.0, 1.0],
               "generate_static_sorted": [1.0, 1.0, 1.0], "generate_static": [1.0, 1.0, 1.0],
               "hand_batched": [2.0, 2.0, 2.0]}
    rounds = Rounds(seconds, {name: [[1, 2], [3]] for name in seconds})
    assert fastest_per_sentence(rounds) == "ours_batch1"  # the least median, though not the least in every round
    summary = summarize(rounds, dict.fromkeys(seconds, 0.0), BASELINES)
    assert summary[FASTEST] == "ours_batch1"
    for ours, key in (("generate_sorted", "sorted_speedup"), ("custom_sorted", "custom_sorted_speedup")):
        per_round = [theirs / mine for theirs, mine in zip(seconds["ours_batch1"], seconds[ours])]
        assert summary[f"{key}_vs_{FASTEST}"]["ratio"] == round(statistics.median(per_round), 3)
        for baseline in BASELINES:  # and over each per-sentence search on its own
            expected = statistics.median(theirs / mine for theirs, mine in zip(seconds[baseline], seconds[ours]))
            assert summary[f"{key}_vs_{baseline}"]["ratio"] == round(expected, 3)
    sizes = translation_decoding.SMOKE
    rows = translation_decoding.table_rows("m", rounds, sizes, 4, 2)
    roles = {row["search"]: row["role"] for row in rows}
    descriptions = translation_decoding.searches(sizes, 4)
    assert roles[descriptions["ours_batch1"][0]] == "headline baseline"
    assert [roles[descriptions[name][0]] for name in PER_SENTENCE].count("headline baseline") == 1


def test_translation_searches_agree(smoke_entries):
    entry = smoke_entries["translation"]
    for summary in entry["summary"].values():
        # Same semantics, same weights: the per-sentence searches, the batched hand loop and every generate()
        # variant (our decoding loop among them) must find generate()'s best hypotheses.
        for search in (*BASELINES, "hand_batched", "generate_sorted", "custom_sorted", "generate_static",
                       "generate_static_sorted"):
            assert summary[f"agreement_{search}"] == 1.0, search
        assert summary[FASTEST] in PER_SENTENCE
        # generate()'s decoder calls have up to batch x beams rows, the beams-batched search's beams rows, the
        # per-hypothesis search's one.
        sizes = entry["sizes"]
        for rows in (1, sizes["num_beams"]):
            assert summary[f"row_cost_{rows}_vs_{summary['batch_size'] * sizes['num_beams']}_rows"]["median"] > 0
        for baseline in BASELINES:
            assert summary[f"decoder_step_bound_vs_{baseline}"]["median"] > 0
            assert summary[f"decoder_rows_generate_vs_{baseline}"] > 0
        assert "NOT THE BLEU MODEL" in summary["model"]["warning"]  # smoke runs time the stand-in
    assert "NOT THE BLEU MODEL" in entry["notes"]
    assert len(entry["rows"]) == 10 * len(entry["summary"])
    assert all(row["counts"] == "yes" for row in entry["rows"])


def test_translation_speeds_are_medians_of_rounds(smoke_entries):
    entry = smoke_entries["translation"]
    roles = [row["role"] for row in entry["rows"]]
    assert roles.count("headline baseline") == roles.count("second baseline") == len(entry["summary"])
    for row in entry["rows"]:
        for column in ("sentences_per_s", "generate_sorted_speedup"):
            low, high = row[f"{column}_iqr"]
            assert 0 < low <= row[column] <= high, (row["search"], column)
    for summary in entry["summary"].values():
        for ours in ("sorted", "custom_sorted"):
            for baseline in (FASTEST, "beams_batched"):
                headline = summary[f"{ours}_speedup_vs_{baseline}"]
                assert headline["quartiles"][0] <= headline["ratio"] <= headline["quartiles"][1]


@pytest.mark.slow
def test_the_per_hypothesis_search_can_be_left_out(data_dir):
    """``--set baselines=beams_batched,ours_batch1,generate_batch1`` (the GPU run: the per-hypothesis search on many
    sentences takes minutes) times every other search, the headline baseline among them."""
    entry = translation_decoding.run(Settings(smoke=True, overrides={"baselines": ",".join(PER_SENTENCE)}))
    assert [row["role"] for row in entry["rows"]].count("second baseline") == 0
    for summary in entry["summary"].values():
        assert summary[FASTEST] in PER_SENTENCE and summary["sorted_speedup_vs_beams_batched"]["ratio"] > 0
        assert not [key for key in summary if "per_hypothesis" in key]


@pytest.mark.parametrize("baselines", [("per_hypothesis",), ("beams_batched", "per_hypothesis"),
                                       (*PER_SENTENCE, "hand_batched"), ()])
def test_baselines_hold_every_per_sentence_search(baselines):
    with pytest.raises(ValueError, match="baselines="):
        translation_decoding.check_baselines(baselines)
