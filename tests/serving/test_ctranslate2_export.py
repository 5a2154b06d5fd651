"""The CTranslate2 export of our Transformer (hf_seqmodels.serving.ctranslate2_export) decodes as our ``generate()`` does:
greedy and beam-5 outputs token-identical (and beam scores equal) on tiny random models of every configuration it
supports, encoder-decoders and decoder-only language models; configs it cannot express are refused naming the field;
the script refuses to overwrite a folder it did not write; ``translate.py --engine ctranslate2`` prints what our
engine prints. Skipped without ctranslate2 (``pip install -e ".[serve]"``)."""

import json
import runpy
import shutil
import sys

import pytest
import torch
from transformers import GenerationConfig

ctranslate2 = pytest.importorskip("ctranslate2")

from hf_seqmodels import TransformerConfig, TransformerForCausalLM, TransformerForConditionalGeneration  # noqa: E402
from hf_seqmodels.data.tokenization import save_tokenizer, train_tokenizer  # noqa: E402
from hf_seqmodels.serving import inference  # noqa: E402
from hf_seqmodels.serving.ctranslate2_export import (
    EXPORT_FILE,
    CTranslate2Translator,
    as_translated,
    check_exportable,
    export_ctranslate2,
)
from hf_seqmodels.tasks.translation import train_tokenizers  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402
from tests.tasks.test_translation import PAIRS  # noqa: E402

MAX_NEW_TOKENS = 10
# Every option the export maps onto CTranslate2's spec, each in both of its states somewhere.
TRANSLATORS = {
    "pre-norm, sinusoidal, shared and tied embeddings": dict(
        joint=True, norm_position="pre", share_encoder_decoder_embeddings=True),
    "post-norm, learned positions, separate vocabularies, untied, unscaled, gelu": dict(
        joint=False, norm_position="post", position_embedding="learned", tie_word_embeddings=False,
        scale_embedding=False, activation="gelu"),
    "post-norm, sinusoidal, joint vocabulary not shared, gelu_new": dict(
        joint=True, norm_position="post", activation="gelu_new", layer_norm_eps=1e-6),
    "pre-norm, learned positions, silu, two end tokens": dict(
        joint=True, norm_position="pre", position_embedding="learned", activation="silu", eos_token_id=[3, 7]),
}
LANGUAGE_MODELS = {
    "pre-norm, sinusoidal": dict(norm_position="pre"),
    "post-norm, learned positions, untied, gelu": dict(norm_position="post", position_embedding="learned",
                                                        tie_word_embeddings=False, activation="gelu"),
}
PROMPTS = ["a dog", "two cats sit", "the girl", "a woman rides a", "ein mann liest", "two men talk on the beach"]


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def tiny_weights(model, batch: dict, seed: int, steps: int = 40) -> None:
    """Random weights, then a few steps of training on ``batch`` (the tiny corpus), so that outputs end with an end
    token at different lengths, as translations do, instead of repeating one token or stopping at once."""
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        model(**batch).loss.backward()
        optimizer.step()
    model.eval()


def labels_of(tokenizer, texts: list[str]) -> torch.Tensor:
    ids = tokenizer(texts, padding=True, return_tensors="pt")
    return ids["input_ids"].masked_fill(ids["attention_mask"] == 0, -100)


def tiny_config(tokenizer, eos_token_id=None, **options) -> TransformerConfig:
    return TransformerConfig(
        vocab_size=len(tokenizer), d_model=16, num_heads=2, encoder_layers=2, decoder_layers=2, ffn_dim=32,
        dropout=0.0, max_position_embeddings=256, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id if eos_token_id is None else eos_token_id, **options)


def end_ids(config) -> list[int]:
    return config.eos_token_id if isinstance(config.eos_token_id, list) else [config.eos_token_id]


@pytest.fixture(scope="module", params=list(TRANSLATORS))
def exported_translator(request, tmp_path_factory):
    """(our model, the CTranslate2Translator of its export, the source ids of the test sentences)."""
    from datasets import Dataset

    options = dict(TRANSLATORS[request.param])
    tokenizers = train_tokenizers(Dataset.from_dict(PAIRS), "en", "de", vocab_size=120, joint=options.pop("joint"))
    config = tiny_config(tokenizers.target, source_vocab_size=None if tokenizers.joint else len(tokenizers.source),
                         **options)
    torch.manual_seed(len(request.param))
    model = TransformerForConditionalGeneration(config)
    inputs = tokenizers.source(PAIRS["en"], padding=True, return_tensors="pt", return_token_type_ids=False)
    tiny_weights(model, {**inputs, "labels": labels_of(tokenizers.target, PAIRS["de"])}, seed=len(request.param))
    model.generation_config.update(max_new_tokens=MAX_NEW_TOKENS, num_beams=5, early_stopping=True)
    folder = tmp_path_factory.mktemp("translator")
    model.save_pretrained(folder / "model")
    tokenizers.save_pretrained(folder / "model")
    export_ctranslate2(folder / "model", folder / "ct2")
    sources = tokenizers.source(PAIRS["en"] + [PAIRS["en"][1] + " " + PAIRS["en"][6]])["input_ids"]
    return model, CTranslate2Translator(folder / "ct2", intra_threads=1), sources


@pytest.mark.parametrize("num_beams", [1, 5])
def test_translations_are_token_identical(exported_translator, num_beams):
    """Every sentence alone through our generate() gives the tokens CTranslate2 gives for it in one padded batch;
    with 5 beams, the whole 5-best list and its scores. (CTranslate2's beam search stops once `num_beams`
    hypotheses are finished: generate()'s ``early_stopping=True``, which the saved generation config sets here.)"""
    model, translator, sources = exported_translator
    eos = end_ids(model.config)
    exported = translator.translate_ids(sources, num_beams=num_beams, num_return_sequences=num_beams)
    lengths = []
    for source, hypotheses in zip(sources, exported):
        ours = model.generate(torch.tensor([source]), num_beams=num_beams, num_return_sequences=num_beams,
                              output_scores=True, return_dict_in_generate=True)
        assert [ids for ids, _ in hypotheses] == [as_translated(row.tolist(), eos) for row in ours.sequences]
        if num_beams > 1:
            assert [score for _, score in hypotheses] == pytest.approx(ours.sequences_scores.tolist(), abs=1e-4)
        lengths.append(len(hypotheses[0][0]))
    # Not trivial: translations of several lengths, some ended by an end token before the limit.
    assert len(set(lengths)) > 2 and max(lengths) > 3, lengths
    assert any(len(ids) < MAX_NEW_TOKENS and ids[-1] in eos for ids, _ in (found[0] for found in exported))


def test_translate_nbest_matches_ours(exported_translator):
    """The n-best lists of the two engines through `inference.translate_nbest`: same texts, same scores."""
    model, translator, _ = exported_translator
    texts = PAIRS["en"][:5] + ["", "   "]
    ours = inference.translate_nbest(model, translator.tokenizers, texts, num_return_sequences=2, batch_size=3,
                                     num_beams=4)
    theirs = inference.translate_nbest(translator, translator.tokenizers, texts, num_return_sequences=2,
                                       batch_size=3, num_beams=4)
    assert [[h.text for h in hyps] for hyps in theirs] == [[h.text for h in hyps] for hyps in ours]
    assert [[h.score for h in hyps] for hyps in theirs] == [
        [pytest.approx(h.score, abs=1e-4) for h in hyps] for hyps in ours]
    assert theirs[5] == [] and len(theirs[0]) == 2


@pytest.fixture(scope="module", params=list(LANGUAGE_MODELS))
def exported_language_model(request, tmp_path_factory):
    tokenizer = train_tokenizer(PAIRS["en"] + PAIRS["de"], "word", vocab_size=60)
    config = tiny_config(tokenizer, **LANGUAGE_MODELS[request.param])
    torch.manual_seed(len(request.param))
    model = TransformerForCausalLM(config)
    texts = [f"{tokenizer.eos_token} {text} {tokenizer.eos_token}" for text in PAIRS["en"] + PAIRS["de"]]
    inputs = tokenizer(texts, padding=True, return_tensors="pt", return_token_type_ids=False)
    tiny_weights(model, {**inputs, "labels": labels_of(tokenizer, texts)}, seed=len(request.param))
    folder = tmp_path_factory.mktemp("language_model")
    model.save_pretrained(folder / "model")
    save_tokenizer(tokenizer, folder / "model")
    export_ctranslate2(folder / "model", folder / "ct2")
    return model, tokenizer, ctranslate2.Generator(str(folder / "ct2"), intra_threads=1)


@pytest.mark.parametrize("num_beams", [1, 5])
def test_language_model_continuations_are_token_identical(exported_language_model, num_beams):
    """Prompts of different lengths in one batch through CTranslate2's Generator: the continuations our generate()
    gives each prompt alone."""
    model, tokenizer, generator = exported_language_model
    prompts = [tokenizer(f"{tokenizer.eos_token} {prompt}")["input_ids"] for prompt in PROMPTS]
    results = generator.generate_batch([tokenizer.convert_ids_to_tokens(ids) for ids in prompts],
                                       beam_size=num_beams, max_length=MAX_NEW_TOKENS, min_length=0,
                                       include_prompt_in_result=False, end_token=end_ids(model.config),
                                       return_end_token=True)
    lengths = []
    for prompt, result in zip(prompts, results):
        ours = model.generate(torch.tensor([prompt]), num_beams=num_beams, max_new_tokens=MAX_NEW_TOKENS)
        assert result.sequences_ids[0] == as_translated(ours[0].tolist(), end_ids(model.config), skip=len(prompt))
        lengths.append(len(result.sequences_ids[0]))
    assert len(set(lengths)) > 1 and max(lengths) > 3, lengths


@pytest.mark.parametrize("quantization", ["int8", "int8_float32"])
def test_quantized_export_translates(exported_translator, tmp_path, quantization):
    """An int8 export loads and translates every sentence (its tokens may differ: int8 is scored by BLEU in the
    benchmark, not by identity); its record names the quantization."""
    model, translator, sources = exported_translator
    folder = translator.record["model_dir"]
    export_ctranslate2(folder, tmp_path / "ct2", quantization=quantization)
    assert json.loads((tmp_path / "ct2" / EXPORT_FILE).read_text())["quantization"] == quantization
    quantized = CTranslate2Translator(tmp_path / "ct2", intra_threads=1)
    assert len(quantized.translate_ids(sources)) == len(sources)


@pytest.mark.parametrize("field, value, head", [
    ("architectures", ["TransformerForSequenceClassification"], None),
    ("model_type", "attention_seq2seq", None),
    ("decoder_start_token_id", None, TransformerForConditionalGeneration),
])
def test_unexpressible_configs_are_refused_naming_the_field(field, value, head):
    config = TransformerConfig(vocab_size=20, d_model=8, num_heads=2, pad_token_id=0, eos_token_id=2,
                               bos_token_id=1, architectures=[head.__name__] if head else None)
    setattr(config, field, value)
    if field == "decoder_start_token_id":
        config.bos_token_id = None
    with pytest.raises(ValueError, match=f"`{field}`"):
        check_exportable(config)


def test_generation_defaults_it_cannot_pass_on_are_refused(exported_translator, tmp_path):
    _, translator, _ = exported_translator
    shutil.copytree(translator.record["model_dir"], tmp_path / "model")
    defaults = GenerationConfig.from_pretrained(tmp_path / "model")
    defaults.update(do_sample=True, top_k=5)
    defaults.save_pretrained(tmp_path / "model")
    with pytest.raises(ValueError, match="`do_sample`=True"):
        export_ctranslate2(tmp_path / "model", tmp_path / "ct2")


def test_vocabulary_size_mismatch_is_refused(tmp_path):
    tokenizer = train_tokenizer(PAIRS["en"], "word", vocab_size=40)
    config = TransformerConfig(vocab_size=len(tokenizer) + 3, d_model=8, num_heads=2, pad_token_id=0,
                               bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    model = TransformerForCausalLM(config)
    model.save_pretrained(tmp_path / "model")
    save_tokenizer(tokenizer, tmp_path / "model")
    with pytest.raises(ValueError, match="`vocab_size`"):
        export_ctranslate2(tmp_path / "model", tmp_path / "ct2")
    assert not (tmp_path / "ct2").exists()


def run_script(name: str, arguments: list[str], monkeypatch, capsys) -> str:
    monkeypatch.setattr(sys, "argv", [name, *arguments])
    runpy.run_path(str(REPO_ROOT / "scripts" / name), run_name="__main__")
    return capsys.readouterr().out


def test_export_script_and_translate_engine(exported_translator, tmp_path, monkeypatch, capsys):
    """export_ctranslate2.py refuses a non-empty folder it did not write and replaces one it wrote; translate.py
    --engine ctranslate2 on the export prints what it prints on the model folder."""
    model, translator, _ = exported_translator
    model_dir = translator.record["model_dir"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not written by an export"):
        run_script("export_ctranslate2.py", [model_dir, str(tmp_path / "other")], monkeypatch, capsys)
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"
    for _ in range(2):  # the second run replaces the first export
        run_script("export_ctranslate2.py", [model_dir, str(tmp_path / "ct2")], monkeypatch, capsys)
    lines = "\n".join(PAIRS["en"][:4] + ["", PAIRS["en"][5]]) + "\n"
    (tmp_path / "input.txt").write_text(lines)
    ours = run_script("translate.py", [model_dir, "--input", str(tmp_path / "input.txt"), "--num_beams", "3"],
                      monkeypatch, capsys)
    theirs = run_script("translate.py", [str(tmp_path / "ct2"), "--engine", "ctranslate2", "--input",
                                         str(tmp_path / "input.txt"), "--num_beams", "3"], monkeypatch, capsys)
    assert theirs == ours and len(ours.splitlines()) == 6


@pytest.mark.parametrize("engine, num_threads, option", [("onnx", 0, "--engine"), ("ctranslate2", -1, "--num_threads")])
def test_bad_engine_options_are_refused(engine, num_threads, option, tmp_path):
    with pytest.raises(ValueError, match=option):
        inference.load_translator(tmp_path, engine, num_threads)


@pytest.mark.parametrize("exported_translator", [next(iter(TRANSLATORS))], indirect=True)
def test_speed_benchmark_reports_every_engine(exported_translator, tmp_path):
    """benchmarks/peers/ctranslate2_speed.py on a tiny model: a row per engine, and the float32 export's tokens
    counted identical to generate()'s on every sentence."""
    from benchmarks.peers.ctranslate2_speed import ENGINES, main

    _, translator, _ = exported_translator
    shutil.copytree(translator.record["model_dir"], tmp_path / "model")
    (tmp_path / "model" / "results.json").write_text(json.dumps(
        {"steps": 40, "train_runtime_s": 1.0, "test_bleu": 0.0, "arguments": {"seed": 0}}))
    result = main(["--model_dir", str(tmp_path / "model"), "--max_sentences", "5", "--batch_size", "2",
                   "--rounds", "1", "--timing_stride", "1", "--threads", "1", "--out", str(tmp_path / "out")])
    rows = {row["engine"]: row for row in result["rows"]}
    assert list(rows) == list(ENGINES)
    assert rows["ctranslate2 float32"]["greedy_identical_to_generate_pct"] == 100.0
    assert rows["ctranslate2 float32"]["beam_identical_to_generate_pct"] == 100.0
    assert (tmp_path / "out.md").read_text().count("| ctranslate2 ") == 2
