"""``benchmarks/studies/decoding_loop.py`` in smoke size: our loop agrees with GenerationMixin on every sentence, and every
speed is a median with its quartiles."""

import sys

import torch

from benchmarks.studies import decoding_loop


def test_smoke_run_agrees_and_reports_medians_with_quartiles(tmp_path):
    results = decoding_loop.main(["--smoke", "--threads", "1", "--rounds", "2", "--out", str(tmp_path / "r.json")])
    assert (tmp_path / "r.json").is_file()
    record = results["provenance"]  # called in this process: its command is this process's
    assert record["argv"] == sys.orig_argv and record["torch"] == torch.__version__
    assert record["split"] == ["test"] and record["seeds"] == [0] and record["threads"] == 1
    for search in ("agreement_beam", "agreement_greedy"):
        assert results[search]["sentences"] == results["settings"]["sentences"]
        assert results[search]["identical_outputs_percent"] == 100.0, results[search]
    assert results["agreement_beam"]["max_score_difference"] <= 1e-5
    for case in ("beam_batched", "beam_batch1", "greedy_batch1"):
        figures = results[case]
        for column in ("generation_mixin_sentences_per_s", "ours_sentences_per_s", "speedup_ours"):
            low, high = figures[f"{column}_iqr"]
            assert 0 < low <= figures[column] <= high, (case, column)
