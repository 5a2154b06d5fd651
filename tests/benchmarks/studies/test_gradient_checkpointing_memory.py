"""The gradient checkpointing memory benchmark at smoke sizes, run as a user runs it: every family measured with
and without checkpointing (or reported unsupported), the same gradients, fewer saved activations."""

import json
import subprocess
import sys

import pytest

from ..conftest import ROOT


@pytest.mark.slow
def test_gradient_checkpointing_memory_smoke(tmp_path):
    command = [sys.executable, "-m", "benchmarks.studies.gradient_checkpointing_memory", "--smoke", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "gradient_checkpointing_memory.json").read_text())
    entry = results["entries"]["gradient_checkpointing_memory"]
    assert entry["provenance"]["argv"][1:] == command[1:] and entry["provenance"]["device"].startswith("cpu: ")
    assert {"title", "sizes", "rows", "summary", "targets", "notes"} <= entry.keys()
    families = {row["family"] for row in entry["rows"]}
    assert len(families) == 4 and families == entry["summary"].keys()
    for family in families:
        rows = {row["gradient_checkpointing"]: row for row in entry["rows"] if row["family"] == family}
        plain = rows[False]
        assert plain["saved_activations_bytes"] > 0 and plain["peak_memory_bytes"] > 0
        if "unsupported" in rows:
            assert rows["unsupported"]["reason"]
            continue
        checkpointed = rows[True]
        assert checkpointed["same_gradients"] is True and checkpointed["loss"] == plain["loss"]
        # The checkpointed layers' activations are not kept for the backward pass.
        assert checkpointed["saved_activations_bytes"] < plain["saved_activations_bytes"], family


def test_a_model_without_gradient_checkpointing_is_reported_not_measured(monkeypatch):
    from benchmarks.studies import gradient_checkpointing_memory as benchmark
    from benchmarks.helpers.common import Settings

    def unsupported(sizes):
        model = benchmark.recurrent_lm(sizes)
        model.supports_gradient_checkpointing = False
        return model

    monkeypatch.setattr(benchmark, "MODELS", {"without": unsupported})
    entry = benchmark.run(Settings(smoke=True))
    assert [row["gradient_checkpointing"] for row in entry["rows"]] == [False, "unsupported"]
    assert "does not support gradient checkpointing" in entry["rows"][1]["reason"]
    assert entry["summary"] == {"without": "gradient checkpointing unsupported"} and entry["targets"] == []
