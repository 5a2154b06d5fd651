"""translate.py, generate.py and the demo page's function on tiny saved models: their output equals what
``model.generate`` gives for each sentence or prompt alone (n-best lists and their scores included), in the order
read; bad folders and options are clear errors."""

import io
import runpy
import sys
from pathlib import Path

import pytest
import torch
from transformers import set_seed

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.data.tokenization import save_tokenizer, train_tokenizer
from hf_seqmodels.tasks.translation import train_tokenizers
from tests.tasks.test_translation import PAIRS, tiny_model

REPO_ROOT = Path(__file__).resolve().parents[2]
TRANSLATE, GENERATE = REPO_ROOT / "scripts" / "translate.py", REPO_ROOT / "scripts" / "generate.py"
# Lines as a user's file has them: an empty and a blank line among sentences of different lengths.
LINES = ["two cats sit on a mat", "", "a dog runs", "a woman rides a bike on the beach", "   ", "the girl sings"]
SENTENCES = ["the company said it expects sales to rise", "the market fell in the first quarter"]


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def translator_dir(tmp_path_factory):
    """A tiny attention GRU encoder-decoder saved as run_translation.py saves one (greedy by default)."""
    from datasets import Dataset

    tokenizers = train_tokenizers(Dataset.from_dict(PAIRS), "en", "de", vocab_size=120)
    model = tiny_model(tokenizers)
    model.generation_config.update(max_new_tokens=6, num_beams=1)
    folder = tmp_path_factory.mktemp("translator")
    model.save_pretrained(folder)
    tokenizers.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def translator(translator_dir):
    from hf_seqmodels.serving.inference import load_translator

    return load_translator(translator_dir)


@pytest.fixture(scope="module")
def language_model_dir(tmp_path_factory):
    """A tiny LSTM language model with a word tokenizer, saved as run_clm.py saves one."""
    tokenizer = train_tokenizer(SENTENCES, "word", vocab_size=30)
    config = RecurrentConfig(vocab_size=len(tokenizer), embedding_size=8, hidden_size=8, cell_type="lstm",
                             pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                             eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = RecurrentForCausalLM(config)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.5)  # clearly separated logits: greedy decoding has no near-ties
    folder = tmp_path_factory.mktemp("language_model")
    model.save_pretrained(folder)
    save_tokenizer(tokenizer, folder)
    return folder


def run_script(path: Path, arguments: list[str], monkeypatch, stdin: str = "") -> None:
    monkeypatch.setattr(sys, "argv", [str(path), *arguments])
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    runpy.run_path(str(path), run_name="__main__")


def generate_alone(translator, sentence: str, **options):
    """The reference: ``model.generate`` on one sentence, unpadded; the texts and beam scores."""
    model, tokenizers = translator
    inputs = tokenizers.source(sentence, return_tensors="pt", return_token_type_ids=False)
    outputs = model.generate(**inputs, output_scores=True, return_dict_in_generate=True, **options)
    texts = [text.strip() for text in tokenizers.target.batch_decode(outputs.sequences, skip_special_tokens=True)]
    scores = outputs.get("sequences_scores")
    return texts, None if scores is None else scores.tolist()


def test_translate_nbest_from_stdin_equals_generate(translator, translator_dir, monkeypatch, capsys):
    arguments = [str(translator_dir), "--num_beams", "3", "--num_return_sequences", "2", "--batch_size", "2",
                 "--max_new_tokens", "5"]
    run_script(TRANSLATE, arguments, monkeypatch, stdin="\n".join(LINES) + "\n")

    printed = capsys.readouterr().out.split("\n")
    assert printed.pop() == ""  # the output ends with a line end
    expected_lines = []
    for number, line in enumerate(LINES):
        if not line.strip():
            expected_lines.append(None)
            continue
        texts, scores = generate_alone(translator, line, num_beams=3, num_return_sequences=2, max_new_tokens=5)
        expected_lines.extend((number, text, score) for text, score in zip(texts, scores))
    assert len(printed) == len(expected_lines)
    for line, expected in zip(printed, expected_lines):
        if expected is None:
            assert line == ""
            continue
        number, score, text = line.split("\t")
        assert (int(number), text) == expected[:2]
        assert float(score) == pytest.approx(expected[2], abs=1e-4)


def test_translate_file_with_saved_defaults_equals_generate(translator, translator_dir, tmp_path, monkeypatch):
    source, target = tmp_path / "in.en", tmp_path / "out.de"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    run_script(TRANSLATE, [str(translator_dir), "--input", str(source), "--output", str(target)], monkeypatch)
    expected = [generate_alone(translator, line)[0][0] if line.strip() else "" for line in LINES]
    assert target.read_text(encoding="utf-8").split("\n") == [*expected, ""]


def test_translate_draws_one_attention_picture_per_sentence(translator_dir, tmp_path, monkeypatch, capsys):
    pictures = tmp_path / "attention"
    run_script(TRANSLATE, [str(translator_dir), "--attention_dir", str(pictures)], monkeypatch,
               stdin="a dog runs\n\ntwo men talk\n")
    assert sorted(path.name for path in pictures.iterdir()) == ["1.png", "3.png"]
    assert all(path.read_bytes().startswith(b"\x89PNG") for path in pictures.iterdir())


def test_translate_attention_needs_a_model_with_attention(tmp_path, monkeypatch, translator_dir):
    from hf_seqmodels.tasks.translation import load_tokenizers

    tokenizers = load_tokenizers(translator_dir)
    model = tiny_model(tokenizers, attention_type="none")
    model.generation_config.max_new_tokens = 4
    model.save_pretrained(tmp_path / "plain")
    tokenizers.save_pretrained(tmp_path / "plain")
    with pytest.raises(ValueError, match="--attention_dir: this 'attention_seq2seq' model returns no attention"):
        run_script(TRANSLATE, [str(tmp_path / "plain"), "--attention_dir", str(tmp_path / "pictures")],
                   monkeypatch, stdin="a dog runs\n")


@pytest.mark.parametrize("arguments, message", [
    (["--num_beams", "2", "--num_return_sequences", "3"],
     r"--num_return_sequences=3 is more than the 2 beam\(s\) asked.*Raise --num_beams to at least 3"),
    (["--num_return_sequences", "2"], r"more than the 1 beam\(s\) the model decodes with by default"),
    (["--batch_size", "0"], "--batch_size must be an integer of at least 1, got 0"),
    (["--max_new_tokens", "0"], "--max_new_tokens must be an integer of at least 1, got 0"),
])
def test_translate_refuses_bad_options(arguments, message, translator_dir, monkeypatch):
    with pytest.raises(ValueError, match=message):
        run_script(TRANSLATE, [str(translator_dir), *arguments], monkeypatch, stdin="a dog runs\n")


def test_translate_and_generate_need_their_kind_of_model_folder(translator_dir, language_model_dir, tmp_path,
                                                                 monkeypatch):
    with pytest.raises(ValueError, match="there is no such folder .* Pass a model folder saved by "
                                         "scripts/run_translation.py"):
        run_script(TRANSLATE, [str(tmp_path / "missing")], monkeypatch)
    with pytest.raises(ValueError, match=r"holds no model \(no config.json in it\)"):
        run_script(TRANSLATE, [str(tmp_path)], monkeypatch)
    with pytest.raises(ValueError, match=r"holds a 'recurrent' model \['RecurrentForCausalLM'\], not a translation"):
        run_script(TRANSLATE, [str(language_model_dir)], monkeypatch)
    with pytest.raises(ValueError, match="holds a 'attention_seq2seq' model .*, not a language model: pass a folder "
                                         "saved by scripts/run_clm.py"):
        run_script(GENERATE, [str(translator_dir), "--prompt", "the market"], monkeypatch)
    with pytest.raises(ValueError, match="--input='/nowhere.txt': no such file"):
        run_script(TRANSLATE, [str(translator_dir), "--input", "/nowhere.txt"], monkeypatch)


def lm_generate(folder, prompt: str, **options) -> list[str]:
    """The reference: the saved model's ``generate`` after the eos that starts every run_clm.py sentence."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    inputs = tokenizer(f"{tokenizer.eos_token} {prompt}", return_tensors="pt", return_token_type_ids=False)
    return [text.strip() for text in tokenizer.batch_decode(model.generate(**inputs, **options),
                                                              skip_special_tokens=True)]


def test_generate_greedy_from_stdin_equals_generate(language_model_dir, monkeypatch, capsys):
    run_script(GENERATE, [str(language_model_dir), "--max_new_tokens", "6"], monkeypatch,
               stdin="the company\nthe market fell\n")
    expected = [*lm_generate(language_model_dir, "the company", max_new_tokens=6, do_sample=False),
                *lm_generate(language_model_dir, "the market fell", max_new_tokens=6, do_sample=False)]
    assert capsys.readouterr().out.split("\n") == [*expected, ""]


def test_generate_samples_are_reproducible_with_a_seed(language_model_dir, monkeypatch, capsys):
    arguments = [str(language_model_dir), "--prompt", "the market", "--prompt", "sales", "--do_sample",
                 "--num_return_sequences", "3", "--top_k", "10", "--top_p", "0.9", "--temperature", "1.5",
                 "--max_new_tokens", "8"]
    run_script(GENERATE, [*arguments, "--seed", "3"], monkeypatch)
    first = capsys.readouterr().out
    run_script(GENERATE, [*arguments, "--seed", "3"], monkeypatch)
    assert capsys.readouterr().out == first
    run_script(GENERATE, [*arguments, "--seed", "4"], monkeypatch)
    assert capsys.readouterr().out != first

    set_seed(3)
    options = dict(do_sample=True, num_return_sequences=3, top_k=10, top_p=0.9, temperature=1.5, max_new_tokens=8)
    expected = [*lm_generate(language_model_dir, "the market", **options),
                *lm_generate(language_model_dir, "sales", **options)]
    assert first.split("\n") == [*expected, ""]


@pytest.mark.parametrize("arguments, message", [
    (["--top_k", "5"], "--top_k shape.* and decoding is greedy: add --do_sample"),
    (["--num_return_sequences", "2"], "greedy decoding gives one continuation per prompt; add --do_sample"),
    (["--do_sample", "--temperature", "0"], "--temperature must be a finite number above 0, got 0.0"),
    (["--do_sample", "--top_p", "1.5"], r"--top_p must be in \(0, 1\], got 1.5"),
    (["--do_sample", "--top_k", "0"], "--top_k must be an integer of at least 1, got 0"),
])
def test_generate_refuses_bad_options(arguments, message, language_model_dir, monkeypatch):
    with pytest.raises(ValueError, match=message):
        run_script(GENERATE, [str(language_model_dir), "--prompt", "the market", *arguments], monkeypatch)


@pytest.mark.slow
def test_demo_translates_and_draws_the_attention(translator, translator_dir):
    pytest.importorskip("gradio")
    from hf_seqmodels.serving.inference import translation_demo

    page = translation_demo(translator_dir)
    translation, picture = page.translate_sentence("a dog runs")
    assert translation == generate_alone(translator, "a dog runs")[0][0]
    assert picture.format == "PNG" and min(picture.size) > 100
    assert page.translate_sentence("  ") == ("", None)
