"""hf_seqmodels.tasks.translation: tokenizers that end texts with eos, batched translation == one sentence at a
time, the saved translation pipeline, attention matrices and pictures, and a resumed run with BLEU checkpoints."""

import re
import shutil
from pathlib import Path

import datasets
import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, DataCollatorForSeq2Seq, pipeline

from hf_seqmodels import (
    AttentionSeq2SeqConfig,
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentConfig,
    RecurrentForCausalLM,
    TransformerConfig,
    TransformerForSequenceClassification,
)
from hf_seqmodels.data.loading import LengthGroupedSampler
from hf_seqmodels.data.paths import check_model_path
from hf_seqmodels.data.tokenization import CONTINUATION_MARK
from hf_seqmodels.evaluation import translation_metrics
from hf_seqmodels.tasks.translation import (
    CUSTOM_PIPELINES,
    DataArguments,
    attention_figure,
    attention_matrix,
    implausible_bleu_warning,
    is_degenerate,
    label_fonts,
    load_tokenizers,
    load_translation_model,
    model_name,
    tokenize_pairs,
    train_tokenizers,
    translate,
    translation_scores,
)
from hf_seqmodels.training.loop import BestModel, TrainingArguments, make_accelerator, train

PAIRS = {
    "en": ["a dog runs", "two cats sit on a mat", "a man reads a book", "the girl sings", "a red car",
           "dogs run on the beach", "a woman rides a bike", "two men talk"],
    "de": ["ein hund rennt", "zwei katzen sitzen auf einer matte", "ein mann liest ein buch", "das mädchen singt",
           "ein rotes auto", "hunde rennen am strand", "eine frau fährt fahrrad", "zwei männer reden"],
}


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def raw():
    data = datasets.Dataset.from_dict(PAIRS)
    return datasets.DatasetDict({"train": data, "validation": data.select(range(4))})


@pytest.fixture(scope="module")
def tokenizers(raw):
    return train_tokenizers(raw["train"], "en", "de", vocab_size=120)


def tiny_model(tokenizers, seed=0, **changes):
    target = tokenizers.target
    options = dict(
        vocab_size=len(target), source_vocab_size=None if tokenizers.joint else len(tokenizers.source),
        embedding_size=8, hidden_size=8, attention_type="bahdanau", dropout=0.0, pad_token_id=target.pad_token_id,
        bos_token_id=target.bos_token_id, eos_token_id=target.eos_token_id)
    config = AttentionSeq2SeqConfig(**{**options, **changes})
    config.custom_pipelines = CUSTOM_PIPELINES
    torch.manual_seed(seed)
    model = AttentionSeq2SeqForConditionalGeneration(config)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.5)  # clearly separated logits: no near-ties between batched and alone
    return model.eval()


def test_tokenizers_end_texts_with_eos_and_round_trip(raw, tokenizers, tmp_path):
    ids = tokenizers.source("a dog runs")["input_ids"]
    assert ids[-1] == tokenizers.source.eos_token_id and ids.count(tokenizers.source.eos_token_id) == 1
    assert tokenizers.target.decode(tokenizers.target("ein hund rennt")["input_ids"], skip_special_tokens=True) == \
        "ein hund rennt"
    tokenizers.save_pretrained(tmp_path / "joint")
    assert load_tokenizers(tmp_path / "joint").joint and not (tmp_path / "joint" / "source_tokenizer").exists()

    separate = train_tokenizers(raw["train"], "en", "de", vocab_size=60, joint=False)
    assert separate.source.get_vocab() != separate.target.get_vocab()
    separate.save_pretrained(tmp_path / "separate")
    loaded = load_tokenizers(tmp_path / "separate")
    assert not loaded.joint
    assert loaded.source("two cats")["input_ids"] == separate.source("two cats")["input_ids"]
    assert loaded.target("zwei katzen")["input_ids"] == separate.target("zwei katzen")["input_ids"]


def test_tokenize_pairs_truncates_and_keeps_eos(raw, tokenizers):
    tokenized = tokenize_pairs(raw, tokenizers, "en", "de", max_source_length=4, max_target_length=5)
    assert tokenized["train"].column_names == ["input_ids", "labels"]
    for row in tokenized["train"]:
        assert len(row["input_ids"]) <= 4 and len(row["labels"]) <= 5
        assert row["labels"][-1] == tokenizers.target.eos_token_id
    with pytest.raises(ValueError, match=r"Language column\(s\) \['fr'\] not found"):
        tokenize_pairs(raw, tokenizers, "en", "fr", 8, 8)
    empty = datasets.DatasetDict({"train": raw["train"], "validation": raw["validation"].select([])})
    with pytest.raises(ValueError, match="'validation' split has no sentence pairs left .* raise --max_eval_samples"):
        tokenize_pairs(empty, tokenizers, "en", "de", 8, 8)
    # Splits loaded from separate files may carry other columns besides the two languages.
    extra = datasets.DatasetDict({"train": raw["train"],
                                  "validation": raw["validation"].add_column("id", list(range(4)))})
    assert all(split.column_names == ["input_ids", "labels"]
               for split in tokenize_pairs(extra, tokenizers, "en", "de", 8, 8).values())


def test_batched_translation_matches_one_sentence_at_a_time(tokenizers):
    model = tiny_model(tokenizers)
    texts = PAIRS["en"]
    options = {"num_beams": 3, "max_new_tokens": 6}
    batched = translate(model, tokenizers, texts, batch_size=3, **options)
    assert batched == [translate(model, tokenizers, [text], **options)[0] for text in texts]


def test_our_models_translate_through_our_loop_with_transformers_outputs(tokenizers, monkeypatch):
    """translate() decodes our models with our loop (their generate()'s default: finished sentences leave the
    batch), with the translations of transformers' own loop (``custom_generate=None``)."""
    from hf_seqmodels.models import decoding

    model = tiny_model(tokenizers, seed=3)
    calls = []
    for name in ("beam_search", "greedy_or_sample"):
        search = getattr(decoding, name)
        monkeypatch.setattr(decoding, name, lambda *args, _search=search, _name=name, **kwargs: (
            calls.append(_name), _search(*args, **kwargs))[1])
    texts = PAIRS["en"] * 2
    batches = -(-len(texts) // 4)
    for options, search in (({"num_beams": 3, "max_new_tokens": 8}, "beam_search"),
                            ({"num_beams": 1, "max_new_tokens": 8}, "greedy_or_sample")):
        calls.clear()
        ours = translate(model, tokenizers, texts, batch_size=4, **options)
        assert calls == [search] * batches, calls  # once per batch
        assert ours == translate(model, tokenizers, texts, batch_size=4, custom_generate=None, **options)
        assert calls == [search] * batches, calls


def test_translation_scores_against_the_references(tokenizers):
    model = tiny_model(tokenizers)
    scores, translations = translation_scores(model, tokenizers, PAIRS["en"], PAIRS["de"], prefix="test_",
                                              max_new_tokens=6)
    assert set(scores) == {"test_bleu", "test_chrf", "test_degenerate"} and len(translations) == len(PAIRS["en"])
    assert scores["test_degenerate"] == is_degenerate(translations)
    perfect, _ = translation_scores(model, tokenizers, PAIRS["en"], translations, max_new_tokens=6)
    assert perfect["bleu"] == pytest.approx(100.0) or not any(t.split() for t in translations)


def test_saved_translation_pipeline(tokenizers, tmp_path):
    model = tiny_model(tokenizers)
    model.generation_config.update(num_beams=2, max_new_tokens=5)
    model.save_pretrained(tmp_path)
    tokenizers.save_pretrained(tmp_path)
    translator = pipeline("translation", model=str(tmp_path), trust_remote_code=True)
    expected = translate(AutoModelForSeq2SeqLM.from_pretrained(tmp_path), tokenizers, PAIRS["en"][:2])
    assert translator(PAIRS["en"][:2]) == [{"translation_text": text} for text in expected]
    assert translator(PAIRS["en"][0]) == [{"translation_text": expected[0]}]


def test_pipeline_of_a_separate_source_vocabulary_needs_its_source_tokenizer(raw, tmp_path):
    separate = train_tokenizers(raw["train"], "en", "de", vocab_size=120, joint=False)
    tiny_model(separate).save_pretrained(tmp_path)
    separate.save_pretrained(tmp_path)
    assert len(pipeline("translation", model=str(tmp_path), trust_remote_code=True).source_tokenizer) == len(
        separate.source)
    shutil.rmtree(tmp_path / "source_tokenizer")
    with pytest.raises(ValueError, match="has no source_tokenizer/ to read it with"):
        pipeline("translation", model=str(tmp_path), trust_remote_code=True)


def test_attention_matrix(tokenizers):
    model = tiny_model(tokenizers)
    source_labels, target_labels, weights = attention_matrix(model, tokenizers, "two cats sit", max_new_tokens=5)
    assert weights.shape == (len(target_labels), len(source_labels))
    assert source_labels[-1] == tokenizers.source.eos_token
    torch.testing.assert_close(weights.sum(-1), torch.ones(len(target_labels)))
    plain = tiny_model(tokenizers, attention_type="none")
    assert attention_matrix(plain, tokenizers, "two cats sit", max_new_tokens=5)[2] is None


def test_attention_picture_labels_its_axes_with_the_pieces_as_a_reader_sees_them(tokenizers):
    """The source axis shows the tokenizer's own pieces without the "▁" that starts a word, a piece inside a word
    marked as such ("▁c", "ats" read "c", "…ats"), and eos; the target axis, the picture's title and the model's name
    carry no raw mark or identifier either."""
    from matplotlib import pyplot as plt

    text = "two cats sit on a mattress"
    figure = attention_figure(tiny_model(tokenizers), tokenizers, text, max_new_tokens=5)
    axes = figure.axes[0]
    source = [label.get_text() for label in axes.get_xticklabels()]
    target = [label.get_text() for label in axes.get_yticklabels()]
    plt.close(figure)
    pieces = tokenizers.source.tokenize(text)
    assert source == [piece[1:] if piece.startswith("▁") else CONTINUATION_MARK + piece
                      for piece in pieces] + [tokenizers.source.eos_token]
    assert target and "▁" not in "".join(target)
    assert axes.get_title() == "attention seq2seq (GRU): bahdanau attention"
    assert model_name(TransformerConfig(vocab_size=10)) == "Transformer"


def holders(character: str) -> set[str]:
    """The installed font families whose files have a glyph for ``character`` (placeholder fonts aside)."""
    from matplotlib import font_manager

    return {entry.name for entry in font_manager.fontManager.ttflist if not entry.name.startswith("Last Resort")
            and ord(character) in font_manager.get_font(entry.fname).get_charmap()}


@pytest.mark.parametrize("character", ["\u210a", "\u8fc7"], ids=["script-g", "cjk"])
def test_attention_plot_labels_fall_back_to_fonts_that_have_their_characters(character, recwarn):
    """The tick labels' fonts: matplotlib's default (DejaVu Sans, without these characters), then an installed font
    that has the character: the STIX fonts matplotlib ships have the script g; a CJK character, where no font has it
    (as on the CI machine), is named in a warning instead of drawn as an empty box."""
    assert label_fonts(["two", "Katzen", "sitzen"]) == ["DejaVu Sans"] and not recwarn
    fonts = label_fonts(["two", f"x{character}"])
    assert fonts[0] == "DejaVu Sans" and character not in "".join(fonts)
    if holders(character):
        assert len(fonts) == 2 and fonts[1] in holders(character) and not recwarn
    else:
        assert fonts == ["DejaVu Sans"] and len(recwarn) == 1 and character in str(recwarn[0].message)


def test_implausible_bleu_warning():
    references = ["Zwei Hunde laufen durch den Schnee.", "Ein Mann fährt Fahrrad.", "Kinder spielen im Park."]
    degenerate = ["Zwei Zwei Zwei Zwei Zwei"] * 3  # what decoding without the cache produced under transformers 5.24
    scores = {f"test_{name}": value for name, value in translation_metrics(degenerate, references).items()}
    warning = implausible_bleu_warning(scores, degenerate)
    assert warning is not None and "3 of 3 are 'Zwei Zwei Zwei Zwei Zwei'" in warning
    perfect = {f"test_{name}": value for name, value in translation_metrics(references, references).items()}
    assert implausible_bleu_warning(perfect, references) is None


def test_check_model_path_takes_folders_and_hub_ids(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs" / "run").mkdir(parents=True)
    for name in ("outputs/run", str(tmp_path / "outputs"), "gpt2", "sentence-transformers/all-MiniLM-L6-v2"):
        check_model_path(name)  # the Hub is not asked
    for name in ("outputs/does-not-exist", "./my model", "a/b/c"):
        folder = re.escape(f"--model_name_or_path={name!r}: there is no such folder ({tmp_path / Path(name)})")
        with pytest.raises(ValueError, match=f"{folder}.* or a Hub repository id 'user/name'"):
            check_model_path(name)


def test_load_translation_model_refuses_other_models(tokenizers, tmp_path):
    tiny_model(tokenizers).save_pretrained(tmp_path / "translation")
    assert isinstance(load_translation_model(tmp_path / "translation"), AttentionSeq2SeqForConditionalGeneration)
    RecurrentForCausalLM(RecurrentConfig(vocab_size=10, embedding_size=4, hidden_size=4)).save_pretrained(
        tmp_path / "lm")
    with pytest.raises(ValueError, match=r"holds a 'recurrent' model \['RecurrentForCausalLM'\], not a translation"):
        load_translation_model(tmp_path / "lm")
    # The Transformer's config is registered for seq2seq too: a classifier must not load with an untrained decoder.
    classifier = TransformerConfig(vocab_size=10, d_model=8, ffn_dim=8, num_heads=2, encoder_layers=1,
                                   decoder_layers=1, num_labels=2)
    TransformerForSequenceClassification(classifier).save_pretrained(tmp_path / "classifier")
    with pytest.raises(ValueError, match=r"TransformerForSequenceClassification'\], not a translation model: pass a "
                                         "folder saved by scripts/run_translation.py"):
        load_translation_model(tmp_path / "classifier")
    with pytest.raises(ValueError, match="model_dir='.*missing': there is no such folder"):
        load_translation_model(tmp_path / "missing")


def test_resumed_run_with_bleu_checkpoints_matches_a_straight_run(raw, tokenizers, tmp_path):
    """Length-grouped batches, the best model by validation BLEU and early stopping all survive a resume."""
    tokenized = tokenize_pairs(raw, tokenizers, "en", "de", 16, 16)
    collator = DataCollatorForSeq2Seq(tokenizers.source, label_pad_token_id=-100)

    def run(folder, **options):
        args = TrainingArguments(output_dir=str(folder), per_device_train_batch_size=2, learning_rate=1e-2,
                                 num_train_epochs=3, metric_for_best_model="eval_chrf", early_stopping_patience=2,
                                 label_smoothing_factor=0.1, checkpoint_dir=str(tmp_path / "checkpoints"), **options)
        model = tiny_model(tokenizers, dropout=0.3).train()
        sampler = LengthGroupedSampler([len(ids) for ids in tokenized["train"]["input_ids"]], 2, seed=0,
                                       group_batches=2)

        def chrf(model):
            return translation_scores(model, tokenizers, raw["validation"]["en"], raw["validation"]["de"],
                                      prefix="eval_", max_new_tokens=6)[0]

        results = train(make_accelerator(args), model, tokenized["train"], tokenized["validation"], collator, args,
                        evaluate_fn=chrf, train_sampler=sampler)
        return model, results

    straight, results = run(tmp_path / "straight", checkpointing_steps="6")  # 4 steps per epoch
    resumed, resumed_results = run(tmp_path / "resumed",
                                   resume_from_checkpoint=str(tmp_path / "checkpoints" / "step_6"))
    assert resumed_results["best_step"] == results["best_step"]
    assert resumed_results["eval_chrf"] == pytest.approx(results["eval_chrf"])
    for (name, expected), got in zip(straight.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(got, expected, msg=name)


def test_degenerate_translations():
    """More than half empty, or one translation for more than half the sentences: unusable, whatever BLEU says."""
    assert is_degenerate(["", "", "Ein Hund."])
    assert is_degenerate(["Ein Mann.", "Ein Mann.", "Ein Mann.", "Zwei Hunde."])
    assert not is_degenerate(["Ein Mann.", "Ein Mann.", "Zwei Hunde.", "Kinder spielen."])  # half is not more
    assert not is_degenerate(["Ein Mann."])  # one sentence cannot repeat
    assert is_degenerate([""]) and not is_degenerate([])


def test_best_model_never_keeps_a_degenerate_evaluation():
    model = torch.nn.Linear(2, 2)
    best = BestModel("eval_bleu", True, model)
    best.update({"step": 10, "eval_bleu": 3.0, "eval_degenerate": True})  # e.g. every translation "Ein Mann."
    assert best.entry is None and best.evaluations_since == 0  # patience does not run before a usable model
    best.update({"step": 20, "eval_bleu": 1.5, "eval_degenerate": False})
    assert best.entry["step"] == 20
    best.update({"step": 30, "eval_bleu": 9.0, "eval_degenerate": True})
    assert best.entry["step"] == 20 and best.evaluations_since == 1


def test_tokenizer_types_per_side_and_bleu_tokenization_by_target_language():
    args = DataArguments(dataset_name="tatoeba_en_zh", source_lang="en", target_lang="zh", vocabulary="separate",
                         tokenizer_type="bpe", target_tokenizer_type="wordpiece")
    assert args.tokenizer_types() == ("bpe", "wordpiece") and args.bleu_tokenize == "zh"
    assert DataArguments(source_lang="zh", target_lang="en").bleu_tokenize == "13a"
    assert DataArguments(target_lang="zh-Hant", bleu_tokenize="char").bleu_tokenize == "char"
    with pytest.raises(ValueError, match="pass --vocabulary separate"):
        DataArguments(vocabulary="joint", source_tokenizer_type="char")
    with pytest.raises(ValueError, match="bleu_tokenize"):
        DataArguments(bleu_tokenize="moses")
