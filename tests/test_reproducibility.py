"""The same seed and data give the same model: two runs of scripts/run_classification.py, each in a fresh process
(so every hash map iterates in another order, as between two real runs), train byte-identical WordPiece tokenizers
(the script's default) and identical weights."""

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import torch
from safetensors.torch import load_file

REPO_ROOT = Path(__file__).resolve().parent.parent
TINY = ["--max_train_steps", "3", "--logging_steps", "1", "--per_device_train_batch_size", "8", "--embedding_size", "16",
        "--hidden_size", "16", "--vocab_size", "300", "--seed", "7"]


def train(output: Path, data: list[str]) -> None:
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "run_classification.py"), "--output_dir", str(output),
                    *data, *TINY], check=True, env=env, cwd=REPO_ROOT, capture_output=True)


@pytest.mark.slow
def test_the_same_seed_gives_the_same_tokenizer_and_weights(tmp_path, data_dir):
    rows = datasets.load_dataset("json", data_files=str(data_dir / "sst2" / "train.jsonl.gz"), split="train[:300]")
    rows.select(range(200)).to_json(tmp_path / "train.jsonl")
    rows.select(range(200, 300)).to_json(tmp_path / "validation.jsonl")
    data = ["--train_file", str(tmp_path / "train.jsonl"), "--validation_file", str(tmp_path / "validation.jsonl")]
    first, second = tmp_path / "first", tmp_path / "second"
    train(first, data)
    train(second, data)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    weights = [load_file(folder / "model.safetensors") for folder in (first, second)]
    assert weights[0].keys() == weights[1].keys()
    different = [name for name in weights[0] if not torch.equal(weights[0][name], weights[1][name])]
    assert not different, f"weights differ between two runs with the same seed: {different}"
    losses = [json.loads((folder / "results.json").read_text())["train_loss"] for folder in (first, second)]
    assert losses[0] == losses[1]
