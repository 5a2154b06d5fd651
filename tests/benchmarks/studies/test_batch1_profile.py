"""``benchmarks/studies/batch1_profile.py`` in smoke size: the clocked pieces add up to the clocked translation, the
clocks change no translation, and every figure is a median with its quartiles."""

import json
import sys

import pytest
import torch

from benchmarks.studies import batch1_profile
from hf_seqmodels.tasks import translation


def test_clocks_count_each_piece_once():
    ticks = iter(range(100))
    clocks = batch1_profile.Clocks(lambda: float(next(ticks)))

    def outer():  # 1 tick before the inner call, 2 inside it (its start and end), 1 after
        clocks.clock()
        clocks.run("encoder", lambda: None)
        clocks.clock()

    clocks.run("preparation", outer)
    assert clocks.seconds["encoder"] == 1.0
    assert clocks.seconds["preparation"] == 4.0  # 5 ticks from start to end, less the inner call's 1


@pytest.mark.parametrize("clock", ["wall", "thread"])
def test_smoke_run_reports_every_piece(tmp_path, clock):
    results = batch1_profile.main(["--smoke", "--threads", "1", "--rounds", "2", "--clock", clock,
                                   "--out", str(tmp_path / "r.json")])
    assert json.loads((tmp_path / "r.json").read_text())["clock"] == clock
    record = results["provenance"]  # called in this process: its command is this process's
    assert record["argv"] == sys.orig_argv and record["threads"] == 1 and record["split"] == ["test"]
    assert results["settings"]["sentences"] == len(results["translations"]) == 3
    figures = [results["sentences_per_s"], *results["per_sentence_us"].values(), *results["per_step_us"].values()]
    for figure in figures:
        low, high = figure["quartiles"]
        assert 0 <= low <= figure["median"] <= high
    per_sentence = results["per_sentence_us"]
    assert all(per_sentence[piece]["median"] > 0 for piece in ("tokenization", "preparation", "encoder",
                                                                "first_step", "output_layer", "search"))
    assert results["steps_per_sentence"] >= 1 and results["operators"]


def test_clocked_translation_is_translate_at_batch_1():
    timed = batch1_profile.stand_in_model("gru", batch1_profile.SMOKE, batch1_profile.Settings(smoke=True), "test")
    tokenizers = translation.TranslationTokenizers(timed.tokenizer, timed.tokenizer)
    texts = ["A man is sleeping.", "Two dogs run through the snow near a red house."]
    options = {"num_beams": 3, "max_new_tokens": 6, "length_penalty": 1.0, "early_stopping": True}
    expected = translation.translate(timed.model, tokenizers, texts, batch_size=1, **options)
    clocks = batch1_profile.Clocks(batch1_profile.CLOCKS["wall"])
    with batch1_profile.clocked(timed.model, clocks), torch.no_grad():
        got = [batch1_profile.translate_clocked(timed.model, tokenizers, text, clocks, options) for text in texts]
    assert got == expected
    assert clocks.steps > 0 and all(name not in vars(timed.model) for name in ("forward", "generate"))
