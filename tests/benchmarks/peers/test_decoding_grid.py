"""The decoding grid's rows (benchmarks.peers.decoding_grid.ENGINES): the main job's grid keeps its rows, commands and
files; the Transformer's times ours through generate(), GenerationMixin's loop and CTranslate2 (float32, int8) beside
Marian's generate() and each peer's own decoder, and its rows of ours translate as plain generate() does."""

import argparse
import json
import sys
from pathlib import Path

import pytest

from benchmarks.peers import (
    decoding_grid,
    report,
    report_decoding,
    serve_ours,
    serving,
    toolkits,
)
from benchmarks.peers.architectures import RNN, TRANSFORMER
from benchmarks.peers.data import PreparedData
from benchmarks.peers.recipe import Recipe
from benchmarks.peers.transformer_recipe import TransformerRecipe
from tests.benchmarks.peers.test_report import make_results
from tests.benchmarks.peers.test_serving import PAIRS, prepared  # noqa: F401  (the fixture)

DATA = PreparedData(Path("/data"), "en", "de")


@pytest.fixture
def peers_at_home(monkeypatch):
    """The peers' interpreters at /peers/<name>/bin/python, whether or not their environments exist."""
    monkeypatch.setattr(toolkits, "peer_program", lambda name, program="python": Path(f"/peers/{name}/bin/{program}"))


def command(engine: decoding_grid.Engine, recipe=None) -> list[str]:
    recipe = recipe or Recipe.main_job(29_000)
    return decoding_grid.server_command(engine, Path("/model"), DATA, recipe, 2, 1)


def search(recipe) -> list[str]:
    return ["--model", "/model", "--source", "/data/test.en", "--tokenizer", "/data/tokenizer/tokenizer.json",
            "--threads", "2", "--num_beams", str(recipe.num_beams), "--length_penalty", str(recipe.length_penalty),
            "--max_new_tokens", str(recipe.max_new_tokens)]


def test_the_main_jobs_grid_keeps_its_rows_commands_and_files(peers_at_home):
    """Ours, ours in int8, JoeyNMT and eole, each its toolkit's own server, none but the int8 row told a name."""
    recipe = Recipe.main_job(29_000)
    engines = {engine.name: engine for engine in decoding_grid.ENGINES[RNN.name]}
    assert list(engines) == ["ours", "ours_int8", "joeynmt", "eole"]
    assert command(engines["ours"]) == [sys.executable, "-m", "benchmarks.peers.serve_ours", *search(recipe)]
    assert command(engines["ours_int8"]) == [sys.executable, "-m", "benchmarks.peers.serve_ours", *search(recipe),
                                             "--int8", "--name", "ours_int8"]
    assert command(engines["joeynmt"]) == ["/peers/joeynmt/bin/python", "-m", "benchmarks.peers.serve_joeynmt",
                                           *search(recipe)]
    eole = command(engines["eole"])
    assert eole[:3 + len(search(recipe))] == ["/peers/eole/bin/python", "-m", "benchmarks.peers.serve_eole",
                                              *search(recipe)]
    assert eole[3 + len(search(recipe))] == "--" and "--name" not in eole
    args = decoding_grid.parse(["--models", "ours=/model"])
    assert (args.data, args.work, args.out) == (toolkits.REPO_ROOT / "outputs/peers/data",
                                                toolkits.REPO_ROOT / "outputs/peers/decoding",
                                                toolkits.REPO_ROOT / "results/peers_decoding.json")
    assert RNN.decoding_results == report_decoding.RESULTS


def test_the_transformers_grid_has_ours_through_every_engine_and_each_peers_own(peers_at_home):
    recipe = TransformerRecipe.main_job(29_000)
    engines = {engine.name: engine for engine in decoding_grid.ENGINES[TRANSFORMER.name]}
    assert list(engines) == ["ours", "ours_generationmixin", "ours_ctranslate2_float32", "ours_ctranslate2_int8",
                             "marian", "joeynmt", "eole"]
    assert {engine.toolkit for engine in engines.values()} == set(TRANSFORMER.toolkits)
    ours = [sys.executable, "-m", "benchmarks.peers.serve_ours", *search(recipe)]
    assert command(engines["ours"], recipe) == ours
    assert command(engines["ours_generationmixin"], recipe) == [*ours, "--generationmixin", "--name",
                                                                "ours_generationmixin"]
    assert command(engines["marian"], recipe) == [*ours, "--name", "marian"]
    for quantization in ("float32", "int8"):
        assert command(engines[f"ours_ctranslate2_{quantization}"], recipe) == [
            sys.executable, "-m", "benchmarks.peers.serve_ctranslate2", *search(recipe), "--quantization",
            quantization, "--name", f"ours_ctranslate2_{quantization}"]
    assert command(engines["joeynmt"], recipe)[:3] == ["/peers/joeynmt/bin/python", "-m",
                                                       "benchmarks.peers.serve_joeynmt"]
    args = decoding_grid.parse(["--architecture", "transformer", "--models", "ours=/model"])
    assert (args.data, args.work, args.out) == (toolkits.REPO_ROOT / "outputs/peers_transformer/data",
                                                toolkits.REPO_ROOT / "outputs/peers_transformer/decoding",
                                                toolkits.REPO_ROOT / "results/peers_transformer_decoding.json")


def test_the_rows_that_run_follow_the_models_given_and_strangers_are_refused():
    every = [engine.name for engine in decoding_grid.ENGINES[TRANSFORMER.name]]
    assert [engine.name for engine in decoding_grid.chosen(TRANSFORMER, {"ours": 1, "eole": 1}, None)] == [
        "ours", "ours_generationmixin", "ours_ctranslate2_float32", "ours_ctranslate2_int8", "eole"]
    assert [engine.name for engine in decoding_grid.chosen(TRANSFORMER, dict.fromkeys(TRANSFORMER.toolkits),
                                                           ["eole", "ours_ctranslate2_int8"])] == [
        "ours_ctranslate2_int8", "eole"]  # in the grid's order
    assert [engine.name for engine in decoding_grid.chosen(TRANSFORMER, dict.fromkeys(TRANSFORMER.toolkits),
                                                           None)] == every
    with pytest.raises(SystemExit, match="--models gives no model of ours"):
        decoding_grid.chosen(TRANSFORMER, {"eole": 1}, ["ours_ctranslate2_int8"])
    with pytest.raises(SystemExit, match="not rows of the rnn grid"):
        decoding_grid.chosen(RNN, {"ours": 1}, ["ours_ctranslate2_int8"])
    with pytest.raises(SystemExit, match="marian=/m"):
        decoding_grid.named(["marian=/m"], "models", RNN.toolkits)  # the main job's comparison has no Marian
    assert decoding_grid.named(["marian=/m"], "models", TRANSFORMER.toolkits) == {"marian": "/m"}


def test_the_generationmixin_row_asks_generate_for_transformers_own_loop(prepared, monkeypatch):  # noqa: F811
    """serve_ours's generate() calls: our loop by default (no ``custom_generate``), GenerationMixin's with
    ``--generationmixin`` (``custom_generate=None``)."""
    from hf_seqmodels.tasks import translation

    _, model_dir = prepared
    loops, load = [], translation.load_translation_model

    def loading(folder):
        model = load(folder)
        generate = model.generate
        model.generate = lambda **kwargs: loops.append(kwargs.get("custom_generate", "ours")) or generate(**kwargs)
        return model

    monkeypatch.setattr(translation, "load_translation_model", loading)
    for flag in (False, True):
        decode = serve_ours.load(argparse.Namespace(model=model_dir, num_beams=2, length_penalty=1.0,
                                                    max_new_tokens=4, generationmixin=flag, int8=False))
        assert len(decode([en for en, _ in PAIRS], 4)) == len(PAIRS)
    assert loops == ["ours", "ours", None, None]  # two batches of 4 and 1 each time


@pytest.fixture(scope="module")
def transformer_dir(prepared, tmp_path_factory):  # noqa: F811
    """A tiny Transformer of ``prepared``'s tokenizer, trained a few steps on its pairs (outputs of several lengths)
    and saved with it."""
    from hf_seqmodels import TransformerForConditionalGeneration
    from hf_seqmodels.tasks import translation
    from tests.serving.test_ctranslate2_export import (
        labels_of,
        tiny_config,
        tiny_weights,
    )

    data, _ = prepared
    tokenizers = translation.load_tokenizers(data.tokenizer_dir)
    model = TransformerForConditionalGeneration(tiny_config(
        tokenizers.target, source_vocab_size=None if tokenizers.joint else len(tokenizers.source)))
    sources = [en for en, _ in PAIRS]
    inputs = tokenizers.source(sources, padding=True, return_tensors="pt", return_token_type_ids=False)
    tiny_weights(model, {**inputs, "labels": labels_of(tokenizers.target, [de for _, de in PAIRS])}, seed=3)
    folder = tmp_path_factory.mktemp("transformer") / "model"
    model.save_pretrained(folder)
    tokenizers.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_ours_through_generationmixin_and_ctranslate2_translates_as_plain_generate(
        prepared, transformer_dir, tmp_path):  # noqa: F811
    """Our rows of the Transformer's grid, beside each other: the translations of generate() (our loop),
    generate(custom_generate=None) and CTranslate2 float32 are those of plain generate() on one sentence at a time
    (their digests); int8 translates every sentence."""
    pytest.importorskip("ctranslate2")
    from transformers import AutoModelForSeq2SeqLM

    from hf_seqmodels.tasks import translation

    data, _ = prepared
    out = tmp_path / "results" / TRANSFORMER.decoding_results
    results = decoding_grid.main(["--architecture", "transformer", "--models", f"ours={transformer_dir}", "--data",
                                  str(data.folder), "--batch_sizes", "1", "4", "--threads", "1", "--rounds", "1",
                                  "--work", str(tmp_path / "work"), "--out", str(out)])
    rows = ["ours", "ours_generationmixin", "ours_ctranslate2_float32", "ours_ctranslate2_int8"]
    assert list(results["engines"]) == rows and results["architecture"] == "transformer"
    assert [(m["batch_size"], m["toolkit"]) for m in results["measurements"]] == [(size, name) for size in (1, 4)
                                                                                  for name in rows]
    model = AutoModelForSeq2SeqLM.from_pretrained(transformer_dir).eval()
    tokenizers = translation.load_tokenizers(transformer_dir)
    expected = [tokenizers.target.decode(model.generate(**tokenizers.source([en], return_tensors="pt"),
                                                        num_beams=5, length_penalty=1.0, max_new_tokens=64,
                                                        early_stopping=True)[0], skip_special_tokens=True).strip()
                for en, _ in PAIRS]
    assert len(set(expected)) > 1 and any(expected)
    digests = {(m["batch_size"], m["toolkit"]): m["sha1"] for m in results["measurements"]}
    for size in (1, 4):
        for name in rows[:3]:
            assert digests[size, name] == serving.digest(expected), (size, name)
    assert all(m["sentences"] == len(PAIRS) for m in results["measurements"])
    # the Transformer's report renders the grid once its results sit beside its results file
    (out.parent / TRANSFORMER.results).write_text(json.dumps(make_results()))
    report.main(["--out", str(out.parent), "--architecture", "transformer"])
    rendered = (out.parent / f"{TRANSFORMER.stem}.md").read_text()
    assert f"## Decoding, every engine timed alike (results/{TRANSFORMER.decoding_results})" in rendered
    assert "- ours_ctranslate2_int8 (model: ours): our model exported to CTranslate2" in rendered
