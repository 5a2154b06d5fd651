"""The decoding entries' models: padding, names, the disk cache that spares later runs the stand-in's training, and
the saved translation folder (the model whose BLEU is reported) that the entries time when it is there."""

import dataclasses
import json
import shutil

import pytest
import torch
from transformers import AutoTokenizer

from benchmarks.helpers.common import Settings
from benchmarks.helpers.translation_model import (
    SMOKE, TimedModel, cache_dir, encode_texts, english_test2016, model_label, origin_note, pad_batch, timed_models,
    timed_sizes, trained_model,
)

from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration
from hf_seqmodels.tasks.translation import end_with_eos

from ..conftest import run_benchmarks


def test_pad_batch_pads_on_the_right():
    assert pad_batch([[4, 5, 6], [7]], value=0).tolist() == [[4, 5, 6], [7, 0, 0]]


def test_trained_model_is_saved_and_loaded_back(monkeypatch, tmp_path, data_dir):
    monkeypatch.setenv("HF_SEQMODELS_BENCHMARK_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    trained_model.cache_clear()
    try:
        model, tokenizer, loss = trained_model("gru", SMOKE, "cpu", 0)
        trained_model.cache_clear()  # the second call must come from the disk
        again, again_tokenizer, again_loss = trained_model("gru", SMOKE, "cpu", 0)
    finally:
        trained_model.cache_clear()
    assert len(list(tmp_path.iterdir())) == 1 and again is not model and again_loss == loss
    assert not again.training
    assert model_label(again.config) == "attention GRU (luong_general)"
    for (name, value), (_, loaded) in zip(model.state_dict().items(), again.state_dict().items(), strict=True):
        assert torch.equal(value, loaded), name
    sources = english_test2016(again_tokenizer, 3)
    assert sources == english_test2016(tokenizer, 3) and all(row[-1] == tokenizer.eos_token_id for row in sources)


@pytest.fixture(scope="module")
def saved_folder(tmp_path_factory, data_dir):
    """A tiny translation model saved as scripts/run_translation.py saves one (weights, tokenizer, results.json)."""
    model, tokenizer, _ = trained_model("gru", SMOKE, "cpu", 0, use_disk_cache=False)
    folder = tmp_path_factory.mktemp("bleu") / "multi30k-attention-gru"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "results.json").write_text(json.dumps({"test_bleu": 12.345, "test_num_beams": 5,
                                                     "bleu_signature": "nrefs:1|tok:13a", "provenance": TRAINED}))
    return folder, model


# The provenance of the saved folder's training run, as scripts/run_translation.py records it.
TRAINED = {"recorded": "at run time", "commit": "0123abc", "tree_clean": True, "cwd": ".", "date": "2026-11-28",
           "device": "cpu: test", "argv": ["/somewhere/bin/python3", "/home/me/repo/scripts/run_translation.py",
                                           "--output_dir", "/home/me/repo/out dir", "--seed", "42"]}


def test_timed_models_load_the_saved_folder_with_its_bleu(saved_folder):
    folder, model = saved_folder
    by_path = dataclasses.replace(SMOKE, model_dir=str(folder))
    by_pattern = dataclasses.replace(SMOKE, model_dir=str(folder.parent / "multi30k-attention-{cell_type}"))
    for sizes in (by_path, by_pattern):
        [timed] = timed_models(sizes, Settings(smoke=True))
        assert timed.origin == {"model_dir": str(folder), "test_bleu": 12.345, "test_bleu_signature": "nrefs:1|tok:13a",
                                "test_num_beams": 5,
                                # one command, run from the repository, re-creates the model (no path of the
                                # machine that trained it)
                                "recreate": "python scripts/run_translation.py --output_dir 'out dir' --seed 42",
                                "trained_at": {key: TRAINED[key] for key in ("commit", "tree_clean", "cwd", "device",
                                                                             "date")}}
        assert timed.label == "attention GRU (luong_general)" and not timed.model.training
        for (name, value), (_, loaded) in zip(model.state_dict().items(), timed.model.state_dict().items(),
                                              strict=True):
            assert torch.equal(value, loaded), name


def test_timed_models_stand_in_says_it_is_not_the_bleu_model(tmp_path, data_dir):
    sizes = dataclasses.replace(SMOKE, model_dir=str(tmp_path / "absent-{cell_type}"))
    [timed] = timed_models(sizes, Settings(smoke=True))
    assert timed.origin["model_dir"] is None
    assert timed.origin["warning"].startswith(f"NOT THE BLEU MODEL: no folder {tmp_path / 'absent-gru'}")
    with pytest.raises(ValueError, match="model_dir=.*no such folder"):
        next(timed_models(dataclasses.replace(SMOKE, model_dir=str(tmp_path / "typo")), Settings(smoke=True)))


def test_a_folder_without_provenance_names_no_command(saved_folder, tmp_path):
    folder, _ = saved_folder
    bare = tmp_path / "bare"
    shutil.copytree(folder, bare)
    (bare / "results.json").write_text(json.dumps({"test_bleu": 1.0}))
    [timed] = timed_models(dataclasses.replace(SMOKE, model_dir=str(bare)), Settings(smoke=True))
    assert timed.origin["recreate"] is None
    assert "re-created by: not recorded in its results.json" in origin_note([timed])


def test_timed_sizes_describe_the_timed_model_not_the_stand_in_recipe(saved_folder):
    folder, model = saved_folder
    config = model.config
    wide = AttentionSeq2SeqForConditionalGeneration(AttentionSeq2SeqConfig(
        vocab_size=config.vocab_size + 7, embedding_size=24, hidden_size=40, cell_type="lstm",
        attention_type="bahdanau"))
    sizes = dataclasses.replace(SMOKE, model_dir="some/folder")
    folders = [TimedModel("a", model, None, {"model_dir": str(folder)}), TimedModel("b", wide, None,
                                                                                    {"model_dir": "other"})]
    record = timed_sizes(sizes, folders)
    assert record["cell_types"] == ["gru", "lstm"]
    assert record["vocab_size"] == [config.vocab_size, config.vocab_size + 7]
    assert record["hidden_size"] == [config.hidden_size, 40] and record["embedding_size"] == [
        config.embedding_size, 24]
    assert record["attention_type"] == [config.attention_type, "bahdanau"]
    assert "train_steps" not in record and "train_batch_size" not in record  # no stand-in was trained
    assert record["num_sentences"] == SMOKE.num_sentences and record["model_dir"] == "some/folder"
    [one] = [timed_sizes(sizes, folders[1:])]
    assert (one["hidden_size"], one["attention_type"], one["cell_types"]) == (40, "bahdanau", ["lstm"])
    # a stand-in keeps its recipe
    stand_in = timed_sizes(SMOKE, [TimedModel("a", model, None, {"model_dir": None})])
    assert stand_in["train_steps"] == SMOKE.train_steps and stand_in["hidden_size"] == config.hidden_size


def test_encode_texts_ends_every_sentence_with_one_eos(saved_folder):
    folder, _ = saved_folder
    plain = AutoTokenizer.from_pretrained(folder)  # a fresh copy: end_with_eos changes the tokenizer it is given
    appending = end_with_eos(AutoTokenizer.from_pretrained(folder))  # as scripts/run_translation.py saves them
    words = plain("a dog runs")["input_ids"]
    assert words[-1:] != [plain.eos_token_id]
    assert encode_texts(plain, ["a dog runs"]) == encode_texts(appending, ["a dog runs"]) == [
        words + [plain.eos_token_id]]


@pytest.mark.slow
def test_run_times_a_saved_folder(saved_folder, tmp_path):
    folder, _ = saved_folder
    entries = run_benchmarks(tmp_path, "--only", "translation", "batch1_overhead", "--set",
                             f"model_dir={folder}")["entries"]
    for name in ("translation", "batch1_overhead"):
        [summary] = entries[name]["summary"].values()
        assert summary["model"]["model_dir"] == str(folder) and summary["model"]["test_bleu"] == 12.345
        assert (f"the model in {folder} (test2016 BLEU 12.35; re-created by: python scripts/run_translation.py "
                "--output_dir 'out dir' --seed 42)") in entries[name]["notes"]
        assert entries[name]["sizes"]["hidden_size"] == SMOKE.hidden_size and "train_steps" not in entries[name][
            "sizes"]
        assert "NOT THE BLEU MODEL" not in entries[name]["notes"]
