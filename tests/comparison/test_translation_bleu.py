"""hf_seqmodels.comparison.translation_bleu end to end on a tiny budget (two models at once), so that it cannot rot."""

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


@pytest.mark.slow
def test_tiny_run_writes_one_row_per_cell_and_seed(tmp_path):
    """Two models at once; then another seed of one of them, added to the rows already there."""
    results = tiny_run(tmp_path, "--cells", "gru", "lstm", "--jobs", "2")
    assert [(row["cell_type"], row["seed"]) for row in results["rows"]] == [("gru", 42), ("lstm", 42)]
    for row in results["rows"]:
        assert row["steps"] == 2 and 0 <= row["test_bleu"] <= 100
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

    added = tiny_run(tmp_path, "--cells", "gru", "--seeds", "7")
    assert [(row["cell_type"], row["seed"]) for row in added["rows"]] == [("gru", 7), ("gru", 42), ("lstm", 42)]
    assert added["rows"][1:] == results["rows"]
    seventh = json.loads((tmp_path / "multi30k-attention-gru-seed7" / "results.json").read_text())
    assert seventh["arguments"]["seed"] == 7
    bleu = [row["test_bleu"] for row in added["rows"][:2]]
    mean, sd = sum(bleu) / 2, abs(bleu[0] - bleu[1]) / 2 ** 0.5
    assert f"| attention GRU | 7, 42 | {mean:.2f} ± {sd:.2f} |" in (tmp_path / "translation_bleu.md").read_text()
