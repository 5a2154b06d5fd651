"""int8 serving of the recurrent families (hf_seqmodels.serving.quantization): which modules become int8 and which
stay float32, the quantized model's logits against the float model's on the same inputs, beam search and greedy
decoding through our generate(), ``translate.py --int8`` / ``generate.py --int8`` and the pipeline with a
``quantization_config``, and the refusals (a Transformer, another device or dtype, training mode, quantizing twice,
saving)."""

import copy
import io
import runpy
import sys

import pytest
import torch
from torch import nn
from transformers import AutoModelForSeq2SeqLM, GenerationConfig, pipeline
from transformers.generation.utils import GenerateBeamEncoderDecoderOutput

from hf_seqmodels import (
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentForCausalLM,
    TransformerConfig,
    TransformerForConditionalGeneration,
)
from hf_seqmodels.serving import inference
from hf_seqmodels.serving.quantization import QUANTIZED_TYPES, DynamicInt8Config, quantize_for_serving
from hf_seqmodels.tasks.translation import train_tokenizers
from tests.conftest import REPO_ROOT
from tests.models.test_modeling_recurrent import RecurrentModelTester
from tests.scripts.test_use_saved_models import LINES, SENTENCES
from tests.tasks.test_translation import PAIRS, tiny_model
from tests.test_modeling_common import PAD, collate, main_output, make_model

# int8 rounds every weight to 1 of 255 steps of its row's range and every activation to 1 of 255 steps of its
# batch's range: each int8 product is off by up to about 1% of its operands' scale, and a decoding step chains
# several (recurrent kernel, bridge, attention, combination, output layer) with the recurrent state carrying the error
# to the next step. A few percent of the logits' scale is int8 precision; 5% of the float model's largest |logit| is
# the bound (tests/models/test_modeling_recurrent.py's INT8_TOLERANCE for the language model). Measured here: about
# 1% on the briefly trained translators, up to 2% on the heads' random weights; 0 would mean no int8 kernel ran.
INT8_TOLERANCE = 5e-2
HIDDEN = 16
# Translators of every kind of layer the quantization meets: both kernels it replaces and the Elman RNN it leaves,
# Bahdanau's and Luong's three scores (concat's layer read by its weight), input feeding, a tied and an untied output.
TRANSLATORS = {
    "gru, bahdanau": dict(cell_type="gru", attention_type="bahdanau"),
    "lstm, luong_general, input feeding, untied": dict(cell_type="lstm", attention_type="luong_general",
                                                       input_feeding=True, tie_word_embeddings=False),
    "lstm, luong_concat": dict(cell_type="lstm", attention_type="luong_concat"),
    "rnn, luong_dot": dict(cell_type="rnn", attention_type="luong_dot", bidirectional_encoder=False),
}
pytestmark = pytest.mark.filterwarnings("ignore:.*quantiz:DeprecationWarning", "ignore:.*quantiz:UserWarning")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def tokenizers():
    from datasets import Dataset

    return train_tokenizers(Dataset.from_dict(PAIRS), "en", "de", vocab_size=120)


def translator(tokenizers, **options):
    """A tiny attention encoder-decoder of ``options`` with tiny_model's weights, N(0, 0.5²): logits far apart, for
    exact comparisons (the scripts' outputs)."""
    model = tiny_model(tokenizers, embedding_size=HIDDEN, hidden_size=HIDDEN, **options)
    model.generation_config.update(max_new_tokens=6, num_beams=1)
    return model


def trained_translator(tokenizers, steps: int = 40, **options):
    """A translator of ``options`` from its default initialisation after ``steps`` Adam steps on the toy pairs:
    weights of a trained model's scale. (N(0, 0.5²) ones saturate the gates of these 16-wide layers, pre-activations
    of std about 2, which multiplies any rounding through the recurrence: a gap of up to 8% measured, where the weights
    the quantization is for give 1%.)"""
    torch.manual_seed(0)
    model = AttentionSeq2SeqForConditionalGeneration(translator(tokenizers, **options).config)
    batch = {**source_batch(tokenizers), "labels": target_labels(tokenizers)}
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        optimizer.zero_grad()
        model(**batch).loss.backward()
        optimizer.step()
    return model.eval()


@pytest.fixture(scope="module")
def translator_dir(tokenizers, tmp_path_factory):
    """A tiny attention GRU encoder-decoder saved as run_translation.py saves one (greedy by default)."""
    folder = tmp_path_factory.mktemp("translator")
    translator(tokenizers).save_pretrained(folder)
    tokenizers.save_pretrained(folder)
    return folder


def source_batch(tokenizers, texts=PAIRS["en"]) -> dict:
    return tokenizers.source(texts, padding=True, return_tensors="pt", return_token_type_ids=False)


def target_labels(tokenizers) -> torch.Tensor:
    targets = tokenizers.target(PAIRS["de"], padding=True, return_tensors="pt")
    return targets["input_ids"].masked_fill(targets["attention_mask"] == 0, -100)


def float_logits_of(model, batch: dict, decoder_input_ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(**batch, decoder_input_ids=decoder_input_ids, use_cache=False).logits


def assert_int8_close(found: torch.Tensor, expected: torch.Tensor) -> None:
    """Within `INT8_TOLERANCE` of the float logits' scale, and not equal to them: the int8 kernels ran."""
    gap = (found - expected).abs().max().item()
    assert 0 < gap <= INT8_TOLERANCE * expected.abs().max().item(), (gap, expected.abs().max().item())


def typed_modules(model: nn.Module, types) -> set[str]:
    return {name for name, module in model.named_modules() if type(module) in types}


@pytest.mark.parametrize("options", list(TRANSLATORS.values()), ids=list(TRANSLATORS))
def test_linear_layers_and_recurrent_kernels_become_int8(tokenizers, options):
    """Every nn.Linear (the output layer, tied or not, included) and every LSTM/GRU kernel of the translator becomes
    its int8 module; the Elman RNN's kernel, the embeddings and Luong's concat layer (read by its weight) stay as
    they were; a tied embedding keeps its float32 values."""
    model = translator(tokenizers, **options)
    embedding = model.model.decoder.embed_tokens.weight.detach().clone()
    replaced = typed_modules(model, QUANTIZED_TYPES) - {"model.decoder.attention.concat_layer"}
    kept = {name: type(module) for name, module in model.named_modules() if name not in replaced}
    assert {"lm_head", "model.decoder.bridge"} <= replaced
    quantize_for_serving(model)
    modules = dict(model.named_modules())
    for name in replaced:
        assert isinstance(modules[name], tuple(QUANTIZED_TYPES.values())), name
    assert {name: type(modules[name]) for name in kept} == kept
    assert not typed_modules(model, QUANTIZED_TYPES) - {"model.decoder.attention.concat_layer"}
    kernels = [type(stack.layers[0].rnn) for stack in (model.model.encoder.rnn, model.model.decoder.rnn)]
    if options["cell_type"] == "rnn":
        assert kernels == [nn.RNN, nn.RNN]
    else:
        assert kernels == [QUANTIZED_TYPES[getattr(nn, options["cell_type"].upper())]] * 2
    assert model.model.decoder.embed_tokens.weight.dtype == torch.float32
    torch.testing.assert_close(model.model.decoder.embed_tokens.weight, embedding, rtol=0, atol=0)


@pytest.mark.parametrize("options", list(TRANSLATORS.values()), ids=list(TRANSLATORS))
def test_logits_close_to_float32(tokenizers, options):
    """On a padded batch: the teacher-forced logits of every target position, and the logits greedy generate()
    chose from (its cached decoding steps through the int8 kernels) against the float model's on the same
    sequences."""
    model = trained_translator(tokenizers, **options)
    quantized = quantize_for_serving(copy.deepcopy(model))
    batch = source_batch(tokenizers)
    targets = target_labels(tokenizers).clamp(min=model.config.pad_token_id)
    decoder_inputs = torch.cat([torch.full_like(targets[:, :1], model.config.decoder_start_token_id),
                                targets[:, :-1]], dim=1)
    assert_int8_close(float_logits_of(quantized, batch, decoder_inputs), float_logits_of(model, batch, decoder_inputs))

    out = quantized.generate(**batch, max_new_tokens=5, min_new_tokens=5, output_logits=True,
                             return_dict_in_generate=True)
    assert_int8_close(torch.stack(out.logits, dim=1), float_logits_of(model, batch, out.sequences[:, :-1]))


def test_beam_search_and_greedy_give_valid_translations(tokenizers):
    """Beam search (5 beams, 3 returned) and greedy search return what the float model's return (the output class,
    the shapes), each hypothesis the start token, vocabulary ids, and an end token followed by padding only (an end
    token, in transformers' beam search) or the length limit; the beams' scores are finite and best first."""
    model = trained_translator(tokenizers, cell_type="lstm", attention_type="luong_general", input_feeding=True)
    quantized = quantize_for_serving(copy.deepcopy(model))
    batch = source_batch(tokenizers, PAIRS["en"][:4])
    config = model.config
    options = dict(num_beams=5, num_return_sequences=3, max_new_tokens=6, length_penalty=1.0, output_scores=True,
                   return_dict_in_generate=True)
    beams, float_beams = quantized.generate(**batch, **options), model.generate(**batch, **options)
    assert type(beams) is type(float_beams) is GenerateBeamEncoderDecoderOutput
    assert beams.sequences.shape[0] == float_beams.sequences.shape[0] == 12
    assert torch.isfinite(beams.sequences_scores).all()
    scores = beams.sequences_scores.view(4, 3)
    assert (scores[:, :-1] >= scores[:, 1:]).all()
    greedy = quantized.generate(**batch, max_new_tokens=6)
    assert greedy.shape == model.generate(**batch, max_new_tokens=6).shape
    for row in [*beams.sequences.tolist(), *greedy.tolist()]:
        assert row[0] == config.decoder_start_token_id and all(0 <= token < config.vocab_size for token in row)
        ended = row.index(config.eos_token_id) if config.eos_token_id in row else len(row) - 1
        assert ended == 6 or set(row[ended + 1:]) <= {config.pad_token_id, config.eos_token_id}, row
    texts = tokenizers.target.batch_decode(beams.sequences, skip_special_tokens=True)
    assert all(text.strip() for text in texts)


@pytest.mark.parametrize("model_class", [*RecurrentModelTester.all_model_classes, "adaptive softmax"],
                         ids=lambda cls: getattr(cls, "__name__", cls))
@pytest.mark.parametrize("cell_type", ["lstm", "gru"])
def test_every_recurrent_head_quantizes(cell_type, model_class):
    """Every head of the recurrent family: no float linear layer or LSTM/GRU kernel is left (but the adaptive
    softmax's, which reads its layers' weights), and its outputs on a padded batch are the float model's within
    int8 precision; the language model generates with beam search. Weights N(0, 0.3²): make_model's 0.5 saturates
    the gates of these 8-12-wide layers (5% measured for the bidirectional GRU), 0.3 keeps them working (2%)."""
    tester = RecurrentModelTester(cell_type)
    changes = {}
    if model_class == "adaptive softmax":
        model_class, changes = RecurrentForCausalLM, dict(adaptive_softmax_cutoffs=[6], tie_word_embeddings=False)
    config = tester.get_config(model_class, **changes)
    model = make_model(model_class, config, std=0.3)
    quantized = quantize_for_serving(copy.deepcopy(model))
    left = typed_modules(quantized, QUANTIZED_TYPES)
    assert all(name.startswith("lm_head.") for name in left) and bool(left) == bool(changes), left
    batch = collate(tester.get_examples(config), PAD)
    with torch.no_grad():
        assert_int8_close(main_output(quantized(**batch)), main_output(model(**batch)))
    if model_class is RecurrentForCausalLM:
        left_padded = collate(tester.get_examples(config), PAD, padding_side="left")
        beams = quantized.generate(**left_padded, num_beams=3, max_new_tokens=3, min_new_tokens=3)
        torch.testing.assert_close(beams[:, :-3], left_padded["input_ids"])


def run_script(name: str, arguments: list[str], monkeypatch, capsys, stdin: str = "") -> str:
    monkeypatch.setattr(sys, "argv", [name, *arguments])
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    runpy.run_path(str(REPO_ROOT / "scripts" / name), run_name="__main__")
    return capsys.readouterr().out


def test_translate_script_int8(translator_dir, monkeypatch, capsys):
    """translate.py --int8 prints the n-best lists of the quantized model (its beam scores, not the float model's),
    in the order read, an empty line for an empty one."""
    arguments = [str(translator_dir), "--num_beams", "3", "--num_return_sequences", "2", "--batch_size", "2"]
    printed = run_script("translate.py", [*arguments, "--int8"], monkeypatch, capsys, "\n".join(LINES) + "\n")
    model, tokenizers = inference.load_translator(translator_dir)
    expected = {name: inference.format_translations(inference.translate_nbest(
        candidate, tokenizers, LINES, num_return_sequences=2, batch_size=2, num_beams=3), nbest=True)
        for name, candidate in (("float32", model), ("int8", quantize_for_serving(copy.deepcopy(model))))}
    lines = printed.splitlines()
    assert len(lines) == len(expected["int8"]) == 2 * 4 + 2
    scores = [[float(line.split("\t")[1]) for line in found if line] for found in (lines, expected["int8"],
                                                                                     expected["float32"])]
    assert scores[0] == pytest.approx(scores[1], abs=1e-4) and scores[0] != pytest.approx(scores[2], abs=1e-4)
    assert [line.split("\t")[::2] for line in lines] == [line.split("\t")[::2] for line in expected["int8"]]


def test_generate_script_int8(monkeypatch, capsys, tmp_path):
    """generate.py --int8 continues the prompts as the quantized language model does."""
    from hf_seqmodels.data.tokenization import save_tokenizer, train_tokenizer

    tokenizer = train_tokenizer(SENTENCES, "word", vocab_size=30)
    config = RecurrentModelTester("lstm").get_config(
        RecurrentForCausalLM, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    make_model(RecurrentForCausalLM, config).save_pretrained(tmp_path)
    save_tokenizer(tokenizer, tmp_path)
    printed = run_script("generate.py", [str(tmp_path), "--int8", "--max_new_tokens", "5"], monkeypatch, capsys,
                         "the company\nthe market fell\n")
    model, tokenizer = inference.load_language_model(tmp_path, int8=True)
    assert isinstance(model.lm_head, QUANTIZED_TYPES[nn.Linear])
    expected = inference.continue_prompts(model, tokenizer, ["the company", "the market fell"], max_new_tokens=5)
    assert printed.splitlines() == [texts[0] for texts in expected]


def test_pipeline_and_from_pretrained_take_the_quantization_config(translator_dir):
    """pipeline("translation", model_kwargs={"quantization_config": DynamicInt8Config()}) and from_pretrained with
    it load the model quantized as quantize_for_serving quantizes it: the same translation, beam search included."""
    translate = pipeline("translation", model=str(translator_dir), trust_remote_code=True,
                         model_kwargs={"quantization_config": DynamicInt8Config()})
    assert isinstance(translate.model.lm_head, QUANTIZED_TYPES[nn.Linear])
    loaded = AutoModelForSeq2SeqLM.from_pretrained(translator_dir, quantization_config=DynamicInt8Config())
    assert isinstance(loaded.model.encoder.rnn.layers[0].rnn, QUANTIZED_TYPES[nn.GRU])
    reference = quantize_for_serving(AutoModelForSeq2SeqLM.from_pretrained(translator_dir).eval())
    _, tokenizers = inference.load_translator(translator_dir)
    for text in PAIRS["en"][:3]:
        batch = source_batch(tokenizers, [text])
        expected = tokenizers.target.decode(reference.generate(**batch, num_beams=3)[0], skip_special_tokens=True)
        assert translate(text, num_beams=3) == [{"translation_text": expected.strip()}]
        torch.testing.assert_close(loaded.generate(**batch, num_beams=3), reference.generate(**batch, num_beams=3))


def test_a_quantized_model_is_never_saved(translator_dir, tmp_path):
    """save_pretrained refuses a quantized model before writing anything, however it was quantized."""
    loaded = AutoModelForSeq2SeqLM.from_pretrained(translator_dir, quantization_config=DynamicInt8Config())
    for number, model in enumerate([loaded, inference.load_translator(translator_dir, int8=True)[0]]):
        with pytest.raises(ValueError, match="cannot be saved: .* Save the float32 model and quantize when loading"):
            model.save_pretrained(tmp_path / str(number))
        assert not (tmp_path / str(number)).exists()


def tiny_transformer():
    config = TransformerConfig(vocab_size=20, d_model=8, num_heads=2, encoder_layers=1, decoder_layers=1, ffn_dim=16,
                               pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return TransformerForConditionalGeneration(config).eval()


@pytest.mark.parametrize("change, message", [
    ("transformer", r"a Transformer is served in int8 by its CTranslate2 export: python scripts/export_ctranslate2.py"),
    ("not ours", r"quantizes the models of types \('attention_seq2seq', 'recurrent'\).* got Linear"),
    ("meta device", r"on \['meta'\]: dynamic int8 quantization runs on the CPU. Move it there first"),
    ("bfloat16", r"weights are \['torch.bfloat16'\]: int8 quantization rounds float32 weights"),
    ("training", r"in training mode.* Call model.eval\(\) first"),
    ("quantized twice", r"is quantized already: quantize a float32 model, once"),
])
def test_refusals_name_what_to_change(tokenizers, change, message):
    model = translator(tokenizers)
    model = {"transformer": tiny_transformer, "not ours": lambda: nn.Linear(2, 2),
             "meta device": lambda: model.to("meta"), "bfloat16": lambda: model.to(torch.bfloat16),
             "training": model.train, "quantized twice": lambda: quantize_for_serving(model)}[change]()
    modules_before = [type(module) for module in model.modules()]
    with pytest.raises(ValueError, match=message):
        quantize_for_serving(model)
    assert [type(module) for module in model.modules()] == modules_before  # nothing changed


@pytest.mark.parametrize("options, message", [
    (dict(device_map="cuda"), r"device_map=.*cuda.*: dynamic int8 quantization runs on the CPU"),
    (dict(dtype=torch.bfloat16), r"dtype=torch.bfloat16: int8 quantization rounds float32 weights"),
])
def test_from_pretrained_refuses_another_device_or_dtype(translator_dir, options, message):
    with pytest.raises(ValueError, match=message):
        AutoModelForSeq2SeqLM.from_pretrained(translator_dir, quantization_config=DynamicInt8Config(), **options)


def test_int8_options_of_other_engines_are_refused(translator_dir, tmp_path):
    with pytest.raises(ValueError, match="--int8 quantizes our recurrent model .* quantized when it is made"):
        inference.load_translator(translator_dir, "ctranslate2", int8=True)
    model = tiny_transformer()
    model.generation_config = GenerationConfig(max_new_tokens=4, decoder_start_token_id=1)
    model.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="export_ctranslate2.py <model folder> <export folder> --quantization int8"):
        inference.load_translator(tmp_path, int8=True)
    with pytest.raises(ValueError, match="takes no options"):
        DynamicInt8Config(bits=4)

