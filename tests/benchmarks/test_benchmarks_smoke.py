"""The benchmark runner end to end on tiny sizes, so that it cannot rot. Times are never asserted: only that
every entry runs, writes the documented structure, and that the compared implementations agree."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_benchmarks(out: Path, *args: str) -> dict:
    command = [sys.executable, "-m", "benchmarks.run", "--smoke", "--threads", "1", "--out", str(out), *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "benchmarks.json").read_text())


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("benchmarks")
    return out, run_benchmarks(out)


def test_machine_and_entry_structure(results):
    out, data = results
    assert {"cpu", "cpu_count", "torch_threads", "gpu", "torch", "transformers"} <= set(data["machine"])
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks.run import ENTRIES
    finally:
        sys.path.remove(str(ROOT))
    assert set(data["entries"]) == set(ENTRIES)
    for name, entry in data["entries"].items():
        assert {"title", "sizes", "rows", "summary", "targets", "notes", "seconds", "device", "smoke"} <= set(entry)
        assert entry["smoke"] is True and entry["device"] == "cpu"
        assert entry["rows"], name
        for item in entry["targets"]:
            assert {"name", "value", "target", "met"} <= set(item)
    markdown = (out / "benchmarks.md").read_text()
    for entry in data["entries"].values():
        assert entry["title"] in markdown


def test_incremental_decoding_agrees(results):
    entry = results[1]["entries"]["incremental"]
    assert all(row["tokens_agree"] for row in entry["rows"])
    prefixes = {row["prefix_length"] for row in entry["rows"]}
    assert prefixes == set(entry["sizes"]["prefix_lengths"])
    assert entry["targets"] and entry["targets"][0]["value"] > 0


def test_training_variants_agree(results):
    entry = results[1]["entries"]["training"]
    assert len(entry["rows"]) == 4
    assert entry["summary"]["losses_agree"] is True
    assert all(row["tokens_per_s"] > 0 and row["peak_memory_mb"] > 0 for row in entry["rows"])


def test_translation_searches_agree(results):
    entry = results[1]["entries"]["translation"]
    for summary in entry["summary"].values():
        # Same semantics, same weights: the matched per-sentence search and the batched hand loop must find
        # generate()'s best hypotheses; the naive tutorial search may differ, but is reported.
        assert summary["agreement_matched"] == 1.0
        assert summary["agreement_hand_batched"] == 1.0
        assert summary["agreement_sorted_batches"] == 1.0
        assert summary["agreement_static"] == 1.0
        assert 0.0 <= summary["agreement_naive"] <= 1.0
        # Every decoder call of generate() has batch x beams rows, and each of the per-sentence search one.
        batch_rows = entry["sizes"]["batch_size"] * entry["sizes"]["num_beams"]
        assert summary[f"row_cost_1_vs_{batch_rows}_rows"] > 0
        assert summary["decoder_step_bound"] > 0 and summary["decoder_rows_generate_vs_per_sentence"] > 0
    assert len(entry["rows"]) == 7 * len(entry["summary"])


def test_batch1_overhead_outputs_agree(results):
    entry = results[1]["entries"]["batch1_overhead"]
    assert {row["mode"] for row in entry["rows"]} >= {"greedy"}
    assert all(row["same_output"] == 1.0 for row in entry["rows"])
    assert entry["profiles"] and all(entry["profiles"].values())
    for row in entry["rows"]:  # every search spends time in the decoder calls, and some outside them
        assert min(row[f"{who}_{part}_ms_per_token"]
                   for who in ("generate", "hand_loop") for part in ("model", "other")) > 0


def test_static_cache_outputs_agree(results):
    entry = results[1]["entries"]["static_cache"]
    assert entry["rows"] and all(row["same_sequences"] and row["max_score_difference"] <= 1e-5
                                 for row in entry["rows"])


def test_scaling_plot_written(results):
    out, data = results
    entry = data["entries"]["scaling"]
    assert (out / entry["figures"][0]).stat().st_size > 0
    varied = {(row["model"], row["varied"]) for row in entry["rows"]}
    assert len(varied) == 2 * len({row["model"] for row in entry["rows"]})


def test_only_keeps_other_entries(results, tmp_path):
    out, data = results
    (tmp_path / "benchmarks.json").write_text(json.dumps(data))
    again = run_benchmarks(tmp_path, "--only", "incremental")
    assert set(again["entries"]) == set(data["entries"])
    assert again["entries"]["incremental"]["ran_at"] >= data["entries"]["incremental"]["ran_at"]
