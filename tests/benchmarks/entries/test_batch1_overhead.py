"""The ``batch1_overhead`` entry's smoke results: generate() and the hand loops decode alike, every ratio is a
median of per-round ratios with its quartiles, and the time split and the profiles are filled in."""

import math

import pytest

from benchmarks.entries import batch1_overhead


@pytest.mark.slow
def test_batch1_overhead_outputs_agree(smoke_entries):
    entry = smoke_entries["batch1_overhead"]
    assert {row["mode"] for row in entry["rows"]} >= {"greedy"}
    assert all(row["same_output"] == 1.0 and row["counts"] == "yes" for row in entry["rows"])
    assert entry["profiles"] and all(entry["profiles"].values())
    for row in entry["rows"]:  # every search spends time in the decoder calls, and some outside them
        assert min(row[f"{who}_{part}_ms_per_token"]
                   for who in ("generate", "hand_loop") for part in ("model", "other")) > 0
        low, high = row["generate_speed_vs_hand_loop_iqr"]
        assert 0 < low <= row["generate_speed_vs_hand_loop"] <= high
        # generate()'s set-up is a difference of two timings: at smoke sizes on a busy machine its sign is noise,
        # so only its presence is checked here (the benchmark's results file reports it)
        assert math.isfinite(row["generate_setup_ms_per_sentence"])
        assert math.isfinite(row["speed_vs_hand_loop_without_setup"])
    assert {row["generate"] for row in entry["rows"]} == {
        "generate()", "generate(cache_implementation='static')", "generate(custom_generate=decode)",
        "generate(custom_generate=decode, cache_implementation='static')"}
    # one target per row: generate() and our loop, with either cache, against the hand loop
    assert len(entry["targets"]) == len(entry["rows"])
    assert "NOT THE BLEU MODEL" in entry["notes"]


def test_the_graphed_beam_row_wants_twice_the_hand_loop_on_a_gpu():
    graphed = batch1_overhead.ROWS["ours_static"]
    assert batch1_overhead.wanted_speedup("cuda", "beam 5", graphed) == 2.0
    assert {batch1_overhead.wanted_speedup(device, mode, row) for device, mode, row in [
        ("cpu", "beam 5", graphed), ("cuda", "greedy", graphed), ("cuda", "beam 5", "generate()")]} == {1.0}
