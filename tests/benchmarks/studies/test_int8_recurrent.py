"""``benchmarks/studies/int8_recurrent.py`` on a tiny saved translator and a few test2016 sentences: a row per variant
and batch size, every speed a median with its quartiles, the results file written with its provenance."""

import json
import sys

import pytest
import torch

from benchmarks.studies import int8_recurrent
from tests.tasks.test_translation import PAIRS, tiny_model


@pytest.mark.filterwarnings("ignore:.*quantiz:DeprecationWarning", "ignore:.*quantiz:UserWarning")
def test_tiny_run_reports_both_variants_at_every_batch_size(tmp_path, data_dir):
    from datasets import Dataset

    from hf_seqmodels.tasks.translation import train_tokenizers

    tokenizers = train_tokenizers(Dataset.from_dict(PAIRS), "en", "de", vocab_size=120)
    tiny_model(tokenizers, cell_type="lstm", attention_type="luong_general").save_pretrained(tmp_path / "model")
    tokenizers.save_pretrained(tmp_path / "model")
    (tmp_path / "model" / "results.json").write_text(json.dumps({"test_bleu": 1.5, "arguments": {"seed": 7}}))
    out = tmp_path / "int8_recurrent.json"
    results = int8_recurrent.main(["--model", str(tmp_path / "model"), "--sentences", "5", "--batch_sizes", "1,3",
                                   "--max_new_tokens", "4", "--rounds", "2", "--threads", "1", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(results))
    record = results["provenance"]  # called in this process: its command is this process's
    assert record["argv"] == sys.orig_argv and record["torch"] == torch.__version__
    assert record["split"] == ["test"] and record["seeds"] == [7] and record["threads"] == 1
    assert results["model"]["test_bleu"] == 1.5 and results["model"]["cell_type"] == "lstm"
    assert {"lm_head", "model.encoder.rnn.layers.0.rnn"} <= set(results["quantized_modules"])
    assert results["settings"]["num_beams"] == 5 and results["settings"]["length_penalty"] == 1.0
    assert list(results["by_batch_size"]) == ["1", "3"]
    for size, found in results["by_batch_size"].items():
        assert [(row["batch_size"], row["variant"]) for row in found["rows"]] == [(int(size), "float32"),
                                                                                  (int(size), "int8")]
        for row in found["rows"]:
            assert 0 <= row["test_bleu"] <= 100 and 0 < row["output_tokens"] <= 5 * 4
            for figure in (row["sentences_per_s"], row["output_tokens_per_s"]):
                low, high = figure["quartiles"]
                assert 0 < low <= figure["median"] <= high
        low, high = found["speedup_int8"]["quartiles"]
        assert 0 < low <= found["speedup_int8"]["ratio"] <= high
        assert 0 <= found["identical_outputs_percent"] <= 100
        assert [len(seconds) for seconds in found["round_seconds"].values()] == [2, 2]
