"""The decoding grid's figures (benchmarks.peers.report_decoding): medians and spreads over the rounds, the rounds
paired by number against ours, and the table, on measurements whose answers are computed by hand."""

import pytest

from benchmarks.peers import report_decoding


def measured(toolkit: str, round_: int, seconds: float, batch_size: int = 16, threads: int = 1,
             sentences: int = 100, pieces: int = 1000, sha1: str = "a") -> dict:
    return {"toolkit": toolkit, "round": round_, "seconds": seconds, "batch_size": batch_size, "threads": threads,
            "sentences": sentences, "output_pieces": pieces, "sha1": sha1}


# Batch 16: ours 100 sentences in 2, 4, 5 s (50, 25, 20 sentences/s), JoeyNMT in 4, 5, 10 s (25, 20, 10), eole in
# 1, 8, 8 s (100, 12.5, 12.5). Rounds in the grid's order: ours, joeynmt, eole per round.
GRID = [measured(name, round_, seconds, sha1=name + ("x" if (name, round_) == ("eole", 2) else ""))
        for round_, times in enumerate([(2, 4, 1), (4, 5, 8), (5, 10, 8)])
        for name, seconds in zip(("ours", "joeynmt", "eole"), times)]


def test_medians_spreads_and_pieces_per_sentence():
    rows = {row["toolkit"]: row for row in report_decoding.summary(GRID)}
    assert list(rows) == ["ours", "joeynmt", "eole"]
    assert rows["ours"]["sentences_per_s"] == {"median": 25.0, "min": 20.0, "max": 50.0}
    assert rows["joeynmt"]["sentences_per_s"] == {"median": 20.0, "min": 10.0, "max": 25.0}
    assert rows["eole"]["sentences_per_s"] == {"median": 12.5, "min": 12.5, "max": 100.0}
    assert rows["ours"]["output_tokens_per_s"] == {"median": 250.0, "min": 200.0, "max": 500.0}  # 1,000 pieces
    assert rows["ours"]["pieces_per_sentence"] == 10.0
    assert rows["ours"]["rounds"] == 3 and rows["ours"]["sentences"] == [100]
    assert rows["ours"]["same_output"] and not rows["eole"]["same_output"]  # eole's last round differs


def test_rounds_are_paired_by_number_against_ours():
    pairs = {row["peer"]: row for row in report_decoding.paired(GRID)}
    # ours 50/25/20 against JoeyNMT 25/20/10: ahead in every round; medians 25 / 20
    assert pairs["joeynmt"] == {"batch_size": 16, "threads": 1, "peer": "joeynmt", "rounds": 3, "ahead": 3,
                                "every_round": True, "ratio": 1.25}
    # against eole 100/12.5/12.5: behind in round 0, ahead in the others; medians 25 / 12.5
    assert pairs["eole"]["ahead"] == 2 and not pairs["eole"]["every_round"] and pairs["eole"]["ratio"] == 2.0
    assert not report_decoding.agrees(list(pairs.values()))  # eole's round 0 says otherwise than the medians
    assert report_decoding.agrees([pairs["joeynmt"]])
    behind = {**pairs["joeynmt"], "ahead": 0, "every_round": False, "ratio": 0.8}
    assert report_decoding.agrees([behind])  # behind in every round, as the medians say


def test_a_round_without_its_pair_is_left_out():
    grid = [*GRID, measured("joeynmt", 3, 1.0)]  # a fourth JoeyNMT round, no fourth of ours
    assert next(row for row in report_decoding.paired(grid) if row["peer"] == "joeynmt")["rounds"] == 3
    other = [measured("joeynmt", 0, 1.0, batch_size=1)]  # a batch size ours did not run: nothing to pair
    assert report_decoding.paired(other) == []


def test_cells_keep_batch_sizes_and_threads_apart():
    grid = [*GRID, *(measured(name, 0, 1.0, batch_size=64, threads=2) for name in ("ours", "eole"))]
    keys = [(row["batch_size"], row["threads"], row["toolkit"]) for row in report_decoding.summary(grid)]
    assert keys == [(16, 1, "ours"), (16, 1, "joeynmt"), (16, 1, "eole"), (64, 2, "ours"), (64, 2, "eole")]
    assert [(row["batch_size"], row["threads"], row["peer"]) for row in report_decoding.paired(grid)] == [
        (16, 1, "joeynmt"), (16, 1, "eole"), (64, 2, "eole")]


@pytest.mark.parametrize("stored", [True, False])
def test_the_table_names_the_fastest_peer_and_the_agreement(stored):
    results = {"command": "python -m benchmarks.peers.decoding_grid", "rounds": 3, "machine": "a CPU, 2 cores",
               "search": {"num_beams": 5, "max_new_tokens": 64,
                          "length_penalty": {"ours": 1.0, "joeynmt": 1.0, "eole": 1.0}},
               "measurements": GRID}
    if stored:  # as the grid writes them; else computed from the measurements
        results.update(summary=report_decoding.summary(GRID), paired=report_decoding.paired(GRID))
    text = report_decoding.markdown(results)
    lines = text.splitlines()
    assert "beam 5, at most 64 tokens" in lines[0] and "3 rounds" in lines[0]
    rows = [line for line in lines if line.startswith("| 16 ")]
    assert rows[0] == ("| 16 | 1 | ours | 100 | 25.0 (20.0-50.0) | 250 (200-500) | 10.00 | 1.25 (joeynmt) "
                       "| no |")
    assert rows[2] == "| 16 | 1 | eole | 100 | 12.5 (12.5-100.0) | 125 (125-1000) | 10.00 |  |  |"


# The Transformer's grid, 1 round at 1 thread, 100 sentences per measurement: sentences/s by batch size per row.
TRANSFORMER_SPEEDS = {"ours": {1: 10.0, 16: 50.0}, "ours_generationmixin": {1: 8.0, 16: 100.0},
                      "ours_ctranslate2_int8": {1: 40.0, 16: 300.0}, "marian": {1: 20.0, 16: 120.0},
                      "joeynmt": {1: 5.0, 16: 25.0}, "eole": {1: 30.0, 16: 140.0}}


def transformer_grid(speeds: dict) -> dict:
    """Results of the Transformer's grid at ``speeds`` (row -> batch size -> sentences/s), every row's model named as
    the grid names it (ours' engines decode ours')."""
    measurements = [measured(name, 0, 100 / speed, batch_size=size) for name, by_size in speeds.items()
                    for size, speed in by_size.items()]
    return {"command": "python -m benchmarks.peers.decoding_grid --architecture transformer", "rounds": 1,
            "threads": [1], "machine": "a CPU", "measurements": measurements,
            "search": {"num_beams": 5, "max_new_tokens": 64, "length_penalty": {"ours": 1.0}},
            "engines": {name: {"toolkit": "ours" if name.startswith("ours") else name, "decodes": "..."}
                        for name in speeds}}


def test_ours_engines_are_no_peers_of_ours():
    results = transformer_grid(TRANSFORMER_SPEEDS)
    assert report_decoding.peers(results) == {"marian", "joeynmt", "eole"}
    row = next(line for line in report_decoding.table(results).splitlines() if line.startswith("| 16 | 1 | ours |"))
    assert row.endswith("| 0.36 (eole) | yes |")  # 50 / 140, not against ours through CTranslate2 (300)
    assert report_decoding.peers({"measurements": GRID}) == {"joeynmt", "eole"}  # the main job's: no engines


@pytest.mark.parametrize("int8, met, value", [
    (300.0, True, "2.14 (300.0 at batch 16 / 140.0 at batch 16)"),  # eole's best, the fastest peer: 140
    (270.0, False, "1.93 (270.0 at batch 16 / 140.0 at batch 16)"),
])
def test_the_ctranslate2_target_is_int8_at_its_best_batch_over_the_fastest_peers_best(int8, met, value):
    speeds = {**TRANSFORMER_SPEEDS, "ours_ctranslate2_int8": {1: 40.0, 16: int8}}
    # ours through GenerationMixin's loop at 200 would be the fastest row but mine: not a peer
    speeds["ours_generationmixin"] = {1: 8.0, 16: 200.0}
    [found] = report_decoding.ctranslate2_targets(transformer_grid(speeds))
    assert found == {"name": "decoding sentences/s, ours_ctranslate2_int8 / the fastest peer (eole), each at its best "
                             "batch, 1 thread (decoding grid)", "value": value, "wanted": ">= 2", "met": met}
    without = {name: by_size for name, by_size in speeds.items() if name != "ours_ctranslate2_int8"}
    assert report_decoding.ctranslate2_targets(transformer_grid(without)) == []


def test_batch_1_and_each_rows_best_batch_as_multiples_of_ours():
    lines = report_decoding.best_batches(transformer_grid(TRANSFORMER_SPEEDS)).splitlines()
    assert lines[2] == "| 1 | ours | 10.0 | 1.00 | 16 | 50.0 | 1.00 |"
    assert "| 1 | ours_ctranslate2_int8 | 40.0 | 4.00 | 16 | 300.0 | 6.00 |" in lines
    assert "| 1 | eole | 30.0 | 3.00 | 16 | 140.0 | 2.80 |" in lines
    only_16 = {name: {16: by_size[16]} for name, by_size in TRANSFORMER_SPEEDS.items()}
    assert "| 1 | joeynmt |  |  | 16 | 25.0 | 0.50 |" in report_decoding.best_batches(transformer_grid(only_16))


def test_the_grids_own_int8_row_gives_the_int8_speed_targets_at_each_thread_count():
    """With an ours_int8 row in the grid, int8 at its best batch over each peer's float32 at its best, from the grid
    itself (the same scope and turns); without one, no speed target from the grid."""
    speeds = {"ours": {1: 10.0, 64: 100.0}, "ours_int8": {1: 12.0, 64: 250.0}, "joeynmt": {1: 5.0, 64: 40.0},
              "eole": {1: 30.0, 16: 140.0}}
    found = {target["name"]: target for target in report_decoding.int8_targets(None, transformer_grid(speeds))}
    assert found == {
        "decoding sentences/s, ours int8 / eole float32, each at its best batch, 1 thread (the decoding grid)": {
            "name": "decoding sentences/s, ours int8 / eole float32, each at its best batch, 1 thread (the decoding "
                    "grid)", "value": "1.79 (250.0 at batch 64 / 140.0 at batch 16)", "wanted": ">= 2", "met": False},
        "decoding sentences/s, ours int8 / joeynmt float32, each at its best batch, 1 thread (the decoding grid)": {
            "name": "decoding sentences/s, ours int8 / joeynmt float32, each at its best batch, 1 thread (the "
                    "decoding grid)", "value": "6.25 (250.0 at batch 64 / 40.0 at batch 64)", "wanted": ">= 2",
            "met": True}}
    without = {name: by_size for name, by_size in speeds.items() if name != "ours_int8"}
    assert report_decoding.int8_targets(None, transformer_grid(without)) == []
