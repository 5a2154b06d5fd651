"""The ``translation`` entry (``benchmarks.beam_speed``) on its smoke results: the searches that share
``generate()``'s semantics find its best hypotheses, every speed is a median with its quartiles, and the
decoder-call accounting is filled in."""

import pytest

from benchmarks import beam_speed
from benchmarks.common import Settings


def test_translation_searches_agree(smoke_entries):
    entry = smoke_entries["translation"]
    for summary in entry["summary"].values():
        # Same semantics, same weights: both per-sentence baselines, the batched hand loop and every generate()
        # variant (our decoding loop among them) must find generate()'s best hypotheses.
        for search in ("beams_batched", "per_hypothesis", "hand_batched", "generate_sorted", "custom_sorted",
                       "generate_static", "generate_static_sorted"):
            assert summary[f"agreement_{search}"] == 1.0, search
        # generate()'s decoder calls have up to batch x beams rows, the beams-batched search's beams rows, the
        # per-hypothesis search's one.
        sizes = entry["sizes"]
        for rows in (1, sizes["num_beams"]):
            assert summary[f"row_cost_{rows}_vs_{summary['batch_size'] * sizes['num_beams']}_rows"]["median"] > 0
        for baseline in ("beams_batched", "per_hypothesis"):
            assert summary[f"decoder_step_bound_vs_{baseline}"]["median"] > 0
            assert summary[f"decoder_rows_generate_vs_{baseline}"] > 0
        assert "NOT THE BLEU MODEL" in summary["model"]["warning"]  # smoke runs time the stand-in
    assert "NOT THE BLEU MODEL" in entry["notes"]
    assert len(entry["rows"]) == 8 * len(entry["summary"])
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
            headline = summary[f"{ours}_speedup_vs_beams_batched"]
            assert headline["quartiles"][0] <= headline["ratio"] <= headline["quartiles"][1]


def test_the_per_hypothesis_search_can_be_left_out(data_dir):
    """``--set baselines=beams_batched`` (the GPU run: the per-hypothesis search on 1000 sentences takes minutes)
    times every other search, with the headline baseline's figures alone."""
    entry = beam_speed.run(Settings(smoke=True, overrides={"baselines": "beams_batched"}))
    assert [row["role"] for row in entry["rows"]].count("second baseline") == 0
    assert len(entry["rows"]) == 7 * len(entry["summary"])
    for summary in entry["summary"].values():
        assert summary["agreement_beams_batched"] == 1.0 and summary["sorted_speedup_vs_beams_batched"]["ratio"] > 0
        assert not [key for key in summary if "per_hypothesis" in key]


@pytest.mark.parametrize("baselines", [("per_hypothesis",), ("per_hypothesis", "beams_batched"),
                                       ("beams_batched", "hand_batched"), ()])
def test_baselines_start_with_the_headline_one(baselines):
    with pytest.raises(ValueError, match="baselines="):
        beam_speed.check_baselines(baselines)
