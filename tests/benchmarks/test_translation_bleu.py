"""benchmarks.translation_bleu end to end on a tiny budget (two models at once), so that it cannot rot."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_run_writes_one_row_per_cell(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.translation_bleu", "--cells", "gru", "lstm", "--jobs", "2",
         "--config_overrides", "embedding_size=8,hidden_size=8", "--out", str(tmp_path), "--",
         "--max_train_samples", "32", "--max_eval_samples", "4", "--max_train_steps", "2", "--vocab_size", "200",
         "--max_new_tokens", "4"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "translation_bleu.json").read_text())
    assert [row["cell_type"] for row in results["rows"]] == ["gru", "lstm"]
    for row in results["rows"]:
        assert row["steps"] == 2 and 0 <= row["test_bleu"] <= 100
        assert row["config_overrides"] == f"cell_type={row['cell_type']},embedding_size=8,hidden_size=8"
        assert (tmp_path / f"multi30k-attention-{row['cell_type']}" / "config.json").is_file()
    table = (tmp_path / "translation_bleu.md").read_text()
    assert "2 models trained at once" in table and "| attention LSTM |" in table
