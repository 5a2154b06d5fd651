"""hf_seqmodels.comparison.translation_bleu end to end on a tiny budget (two models at once, beside an earlier run's
rows), so that it cannot rot."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hf_seqmodels.comparison import translation_bleu

ROOT = Path(__file__).resolve().parents[2]


def tiny_run(out: Path, *arguments: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "hf_seqmodels.comparison.translation_bleu", *arguments, "--config_overrides",
         "embedding_size=8,hidden_size=8", "--out", str(out), "--", "--max_train_samples", "32", "--max_eval_samples",
         "4", "--max_train_steps", "2", "--vocab_size", "200", "--max_new_tokens", "4"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "translation_bleu.json").read_text())


def earlier_row(cell: str, seed: int, machine: str) -> dict:
    """A row of an earlier run of this command, with what its table reads."""
    return {"cell_type": cell, "seed": seed, "test_bleu": 1.5, "test_chrf": 10.0, "eval_bleu": 1.0, "epochs": 0.5,
            "train_runtime_s": 6.0, "wall_time_s": 9.0, "num_parameters": 1000, "test_num_beams": 5,
            "machine": machine}


@pytest.mark.slow
def test_tiny_run_writes_one_row_per_cell_and_seed_beside_the_earlier_seeds(tmp_path):
    """Two models at once, into a results file that holds another seed of one of them (kept) and an earlier run of
    the other's seed (replaced)."""
    kept, replaced = earlier_row("gru", 7, "an earlier machine"), earlier_row("lstm", 42, "a replaced run")
    (tmp_path / "translation_bleu.json").write_text(json.dumps({"rows": [replaced, kept]}))
    results = tiny_run(tmp_path, "--cells", "gru", "lstm", "--jobs", "2")
    assert [(row["cell_type"], row["seed"]) for row in results["rows"]] == [("gru", 7), ("gru", 42), ("lstm", 42)]
    assert results["rows"][0] == kept
    new = results["rows"][1:]
    for row in new:
        assert row["steps"] == 2 and 0 <= row["test_bleu"] <= 100 and row["machine"] != replaced["machine"]
        assert row["config_overrides"] == f"cell_type={row['cell_type']},embedding_size=8,hidden_size=8"
        saved = json.loads((tmp_path / f"multi30k-attention-{row['cell_type']}" / "config.json").read_text())
        assert row["config"] == saved and saved["cell_type"] == row["cell_type"] and saved["hidden_size"] == 8
        assert row["arguments"]["seed"] == 42 and row["arguments"]["config_overrides"] == row["config_overrides"]
        # the row's provenance is its training run's: the run_translation.py command, the seed, the splits
        assert row["provenance"]["argv"][1].endswith("scripts/run_translation.py")
        assert row["provenance"]["seeds"] == [42] and row["provenance"]["split"] == ["validation", "test"]
        # the row records its recipe when it is written: what its command gives, less the epochs as typed
        without = {key: value for key, value in row.items() if key != "recipe"}
        assert row["recipe"] == translation_bleu.recipe(without) == {
            "config_overrides": row["config_overrides"], "time_budget_minutes": None,
            "run_translation_arguments": ["--max_train_samples", "32", "--max_eval_samples", "4", "--max_train_steps",
                                          "2", "--vocab_size", "200", "--max_new_tokens", "4"],
            "epochs": row["epochs"], "steps": 2}
    table = (tmp_path / "translation_bleu.md").read_text()
    assert "2 models trained at once" in table and "| attention LSTM | 42 |" in table
    bleu = [kept["test_bleu"], new[0]["test_bleu"]]
    mean, sd = sum(bleu) / 2, abs(bleu[0] - bleu[1]) / 2 ** 0.5
    assert f"| attention GRU | 7, 42 | {mean:.2f} ± {sd:.2f} |" in table
