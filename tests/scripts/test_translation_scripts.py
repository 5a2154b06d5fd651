"""run_translation.py and plot_attention.py end to end on a slice of the bundled Multi30k (offline, seconds)."""

import json
import math
import runpy
import sys
from pathlib import Path

import pytest
from transformers import AutoModelForSeq2SeqLM, pipeline

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.cards import render_card
from hf_seqmodels.tasks.translation import load_tokenizers

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_TRANSLATION = REPO_ROOT / "scripts" / "run_translation.py"
PLOT_ATTENTION = REPO_ROOT / "scripts" / "plot_attention.py"
PUSH_TO_HUB = REPO_ROOT / "scripts" / "push_to_hub.py"
TINY = ["--max_train_samples", "200", "--max_eval_samples", "12", "--vocab_size", "300", "--max_train_steps", "4",
        "--per_device_train_batch_size", "16", "--num_warmup_steps", "1", "--max_new_tokens", "8",
        "--num_beams", "2", "--checkpointing_steps", "2"]
MODELS = {
    "gru-luong": ["--config_overrides", "embedding_size=16,hidden_size=16"],
    "lstm-bahdanau-separate": ["--vocabulary", "separate", "--config_overrides",
                               "cell_type=lstm,attention_type=bahdanau,embedding_size=16,hidden_size=16"],
    "transformer": ["--model_type", "transformer", "--config_overrides",
                    "d_model=16,ffn_dim=32,num_heads=2,encoder_layers=1,decoder_layers=1"],
}


def run_script(path: Path, arguments: list[str], monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(path), *arguments])
    runpy.run_path(str(path), run_name="__main__")


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.slow
def test_run_translation(name, data_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    output_dir = tmp_path / name
    run_script(RUN_TRANSLATION, ["--output_dir", str(output_dir), *TINY, *MODELS[name]], monkeypatch)

    printed = capsys.readouterr()
    results = json.loads((output_dir / "results.json").read_text())
    assert results["steps"] == 4 and results["test_num_beams"] == 2
    for key in ("eval_loss", "eval_bleu", "eval_chrf", "test_bleu", "test_chrf"):
        assert math.isfinite(results[key]), key
    # Four steps cannot translate: the run says so instead of ending as if nothing were wrong.
    assert results["test_bleu"] < 5 and "implausibly low" in results["warnings"][0]
    assert results["warnings"][0] in printed.err
    assert sorted(p.name for p in (tmp_path / f"{name}-checkpoints").iterdir()) == ["step_2", "step_4"]
    model = AutoModelForSeq2SeqLM.from_pretrained(output_dir)
    tokenizers = load_tokenizers(output_dir)
    assert tokenizers.joint == ("separate" not in name)
    assert model.config.vocab_size == len(tokenizers.target) == results["vocab_size"]
    assert (model.config.source_vocab_size or model.config.vocab_size) == len(tokenizers.source)
    assert model.generation_config.num_beams == 2 and model.generation_config.max_new_tokens == 8
    assert "Translations by the reloaded" in printed.out and "->" in printed.out
    assert (output_dir / "attention.png").stat().st_size > 0

    translator = pipeline("translation", model=str(output_dir), trust_remote_code=True)
    assert isinstance(translator("Two dogs play.")[0]["translation_text"], str)

    picture = tmp_path / "plot.png"
    run_script(PLOT_ATTENTION, [str(output_dir), "A man sleeps.", "--output", str(picture), "--num_beams", "1"],
               monkeypatch)
    assert picture.stat().st_size > 0 and capsys.readouterr().out.strip() == str(picture)

    # The results file makes the model card: the run's scores, the model described from its config.
    card = str(render_card(results))
    assert f"| BLEU | {results['eval_bleu']:.2f} |" in card
    assert f"; {results['num_parameters'] / 1e6:.2f}M parameters." in card
    assert ("Transformer encoder-decoder" if name == "transformer" else "attention encoder-decoder") in card
    if name != "transformer":  # the Hub folder loads back where our package cannot be imported, and translates
        push = [str(output_dir), "--repo_id", f"me/{name}", "--dry-run"]
        run_script(PUSH_TO_HUB, push, monkeypatch)
        assert "AttentionSeq2SeqForConditionalGeneration (2, " in capsys.readouterr().out
        staged = tmp_path / f"{name}-hub"
        assert (staged / "source_tokenizer" / "tokenizer.json").is_file() == ("separate" in name)
        separate = pipeline("translation", model=str(staged), trust_remote_code=True).source_tokenizer
        assert len(separate) == (model.config.source_vocab_size or model.config.vocab_size)
        # The card states the repository's benchmark figures (results/benchmarks.json) only for a model like the
        # one the benchmarks timed (family, sizes and attention): not for this tiny one.
        assert "## Speed" not in (staged / "README.md").read_text()
        with pytest.raises(ValueError, match="--benchmarks /nowhere.json: no such file"):
            run_script(PUSH_TO_HUB, [*push, "--benchmarks", "/nowhere.json"], monkeypatch)


def test_plot_attention_needs_a_translation_model_folder(tmp_path, monkeypatch):
    RecurrentForCausalLM(RecurrentConfig(vocab_size=10, embedding_size=4, hidden_size=4)).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"holds a 'recurrent' model \['RecurrentForCausalLM'\], not a translation "
                                         "model: pass a folder saved by scripts/run_translation.py"):
        run_script(PLOT_ATTENTION, [str(tmp_path), "A man sleeps."], monkeypatch)
    with pytest.raises(ValueError, match="there is no such folder"):
        run_script(PLOT_ATTENTION, [str(tmp_path / "missing"), "A man sleeps."], monkeypatch)


def test_run_translation_rejects_bad_options(monkeypatch):
    with pytest.raises(ValueError, match="`--vocabulary`='shared' is not supported"):
        run_script(RUN_TRANSLATION, ["--output_dir", "unused", "--vocabulary", "shared"], monkeypatch)
    with pytest.raises(ValueError, match="`--model_type`='recurrent' is not supported"):
        run_script(RUN_TRANSLATION, ["--output_dir", "unused", "--model_type", "recurrent"], monkeypatch)


def test_run_translation_refuses_a_text_file(monkeypatch):
    """A .txt file has one column, 'text': the language columns can never be found in it."""
    with pytest.raises(ValueError, match="--train_file=train.txt: a .txt file has one column, 'text'.* JSON lines"):
        run_script(RUN_TRANSLATION, ["--output_dir", "unused", "--train_file", "train.txt"], monkeypatch)


@pytest.mark.parametrize("option, value, message", [
    ("--num_beams", "0", "--num_beams must be at least 1, got 0"),
    ("--eval_num_beams", "0", "--eval_num_beams must be at least 1, got 0"),
    ("--max_new_tokens", "0", "--max_new_tokens must be at least 1, got 0"),
    ("--max_source_length", "1", r"--max_source_length must be at least 2 \(a token and the eos\), got 1"),
    ("--max_target_length", "0", "--max_target_length must be at least 2"),
])
def test_run_translation_rejects_bad_lengths_and_beams(option, value, message, monkeypatch):
    with pytest.raises(ValueError, match=message):
        run_script(RUN_TRANSLATION, ["--output_dir", "unused", option, value], monkeypatch)


def test_run_translation_greedy_decoding_saves(data_dir, tmp_path, monkeypatch):
    """--num_beams 1 once crashed in save_pretrained (early_stopping without beam search), after the whole run."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    tiny = [*TINY[:TINY.index("--num_beams")], *TINY[TINY.index("--num_beams") + 2:]]
    run_script(RUN_TRANSLATION, ["--output_dir", str(tmp_path / "greedy"), *tiny, "--num_beams", "1",
                                 *MODELS["gru-luong"]], monkeypatch)
    assert json.loads((tmp_path / "greedy" / "results.json").read_text())["test_num_beams"] == 1


@pytest.mark.parametrize("option", ["--max_train_samples", "--max_eval_samples"])
def test_run_translation_rejects_empty_splits_before_training(option, data_dir, tmp_path, monkeypatch):
    arguments = ["--output_dir", str(tmp_path / "out"), *TINY, option, "0"]
    with pytest.raises(ValueError, match=rf"{option} must be at least 1 \(leave it out for all rows\), got 0"):
        run_script(RUN_TRANSLATION, arguments, monkeypatch)
    assert not (tmp_path / "out-checkpoints").exists()


def test_run_translation_names_missing_language_columns(tmp_path, monkeypatch):
    pairs = [{"en": f"a dog {i}", "de": f"ein hund {i}"} for i in range(20)]
    files = {"train": pairs, "validation": [{"src": "a dog", "tgt": "ein hund"}],
             "nested": [{"translation": pair} for pair in pairs]}
    for name, rows in files.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    train = ["--output_dir", str(tmp_path / "out"), "--train_file", str(tmp_path / "train.jsonl")]
    with pytest.raises(ValueError, match=r"\['fr'\] not found in the 'train' split, which has columns \['en', 'de'\]"):
        run_script(RUN_TRANSLATION, [*train, "--source_lang", "fr"], monkeypatch)
    with pytest.raises(ValueError, match=r"not found in the 'validation' split, which has columns \['src', 'tgt'\]"):
        run_script(RUN_TRANSLATION, [*train, "--validation_file", str(tmp_path / "validation.jsonl")], monkeypatch)
    with pytest.raises(ValueError, match="nested format .* flatten it"):
        run_script(RUN_TRANSLATION, ["--output_dir", str(tmp_path / "out"), "--train_file",
                                     str(tmp_path / "nested.jsonl")], monkeypatch)


@pytest.mark.parametrize(("source", "target", "tokenization"), [("en", "zh", "zh"), ("zh", "en", "13a")])
def test_run_translation_on_tatoeba_names_what_it_used(source, target, tokenization, tmp_path, monkeypatch):
    """English<->Chinese: WordPiece on both sides, BLEU tokenized for the target language with its signature, and
    results and card that name Tatoeba, the languages and the tokenizers (never the default Multi30k)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    output_dir = tmp_path / f"{source}-{target}"
    run_script(RUN_TRANSLATION, ["--output_dir", str(output_dir), *TINY, "--dataset_name", "tatoeba_en_zh",
                                 "--source_lang", source, "--target_lang", target, "--vocabulary", "separate",
                                 "--tokenizer_type", "wordpiece", "--checkpointing_steps", "4", *MODELS["gru-luong"]],
               monkeypatch)
    results = json.loads((output_dir / "results.json").read_text())
    assert results["dataset"] == "tatoeba_en_zh" and results["languages"] == {"source": source, "target": target}
    assert results["tokenizer_types"] == {"source": "wordpiece", "target": "wordpiece"}
    assert f"|tok:{tokenization}|" in results["bleu_signature"] and "nrefs:1" in results["chrf_signature"]
    assert load_tokenizers(output_dir).target.backend_tokenizer.model.__class__.__name__ == "WordPiece"
    card = render_card(results).text
    assert "Tatoeba English-Mandarin" in card and "Multi30k" not in card
    assert f"({source} → {target})" in card and results["bleu_signature"] in card
    assert "source wordpiece" in card and "| BLEU |" in card
