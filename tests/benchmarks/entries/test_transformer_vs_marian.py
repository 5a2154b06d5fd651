"""The Transformer-vs-Marian benchmark end to end on tiny sizes, so that it cannot rot. Times are not asserted."""

import json
import subprocess
import sys

import pytest

from ..conftest import ROOT


@pytest.mark.slow
def test_smoke_run_writes_ratios_and_provenance(tmp_path):
    out = tmp_path / "benchmarks_transformer.json"
    command = [sys.executable, "-m", "benchmarks.entries.transformer_vs_marian", "--smoke", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    entry = results["entry"]
    assert entry["provenance"]["argv"][1:] == command[1:] and entry["provenance"]["split"] == ["train"]
    ratios = {"train", "greedy", "greedy_vs_tutorial", "beam"}
    assert set(entry["summary"]) == ratios | {"trainable_parameters", "equal_size"}
    for task in ratios:
        low, high = entry["summary"][task]["quartiles"]
        assert 0 < low <= entry["summary"][task]["ratio"] <= high, task
    # Marian of equal size: the same number of trainable parameters (its frozen position tables aside)
    assert entry["summary"]["equal_size"] is True
    counts = entry["summary"]["trainable_parameters"]
    assert counts["ours"] == counts["marian"] == sum(
        row["trainable_parameters"] for row in entry["rows"] if row["task"] == "forward+backward") / 2
    # ours and Marian in every task (train, greedy, beam); the tutorial's nn.Transformer loop in greedy only
    assert {row["model"] for row in entry["rows"]} == {"ours", "marian", "tutorial"} and len(entry["rows"]) == 7
