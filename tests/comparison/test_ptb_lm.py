"""hf_seqmodels/comparison/ptb_lm.py's plumbing, in seconds: one tiny AWD variant writes its row of
results/ptb_lm.json."""

import json

from hf_seqmodels.comparison import ptb_lm
from hf_seqmodels.data.loading import load_text_dataset


def test_ptb_lm_smoke_writes_the_table(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    ptb_lm.main(["--smoke", "--variants", "gru-awd", "--minutes", "1", "--out", str(tmp_path)])
    table = json.loads((tmp_path / "ptb_lm.json").read_text())
    (row,) = table["rows"]
    test_texts = load_text_dataset("ptb")["test"]["sentence"][: ptb_lm.SMOKE["data"]["max_eval_samples"]]
    assert row["test_tokens_scored"] == sum(len(text.split()) + 1 for text in test_texts)
    assert row["protocol"].startswith("stateful, bptt=35, batch 10") and "every token scored" in row["protocol"]
    assert row["test_perplexity"] > 1 and row["minutes"] > 0 and row["seed"] == 0
    assert row["model_options"]["weight_drop"] > 0 and row["model_options"]["cell_type"] == "gru"
    assert row["command"] == ("python -m hf_seqmodels.comparison.ptb_lm --variants gru-awd --minutes 1.0 --seed 0 "
                              "--smoke")
    assert row["provenance"]["seeds"] == [0] and row["provenance"]["split"] == ["validation", "test"]
