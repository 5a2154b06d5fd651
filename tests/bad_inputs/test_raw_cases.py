"""Three cases that used to end in a raw error (issue 49), each now a clear error where the input enters, or the right
result where transformers' own models take the input:

- a tag of -1 in a token-classification data file (a KeyError while tokenizing): refused when the data is loaded,
  with the file, the row, the column, the tag and the tags allowed (area "data files");
- ``generate`` asked of a classifier (an AttributeError): a clear error naming the classes that generate, while
  ``hasattr(model, "generate")`` and ``can_generate()`` stay False, as for BERT's heads (area "inputs");
- a cache passed to a classifier (a TypeError about an unexpected keyword): a left-to-right recurrent classifier
  continues from it as GPT2ForSequenceClassification does, so a sequence read in two chunks is classified as when
  read at once; a cache no classifier can continue (a bidirectional encoder, pooling over every token, the
  Transformer's encoder) is refused with its reason (area "inputs")."""

import importlib.util
import json

import datasets
import pytest
import torch
import transformers
from transformers import DynamicCache

import hf_seqmodels as hs
from hf_seqmodels.data.paths import REPO_ROOT
from hf_seqmodels.models.modeling_utils import output_cache
from hf_seqmodels.tasks import labelling, token_classification

from .outcomes import assert_outcome
from .test_inputs import CLASSES, MASK, SOURCE, VOCAB, model_of

NER_ROWS = [(["John", "Smith", "visited", "Paris", "."], [1, 2, 0, 3, 0]),
            (["Mary", "lives", "in", "Berlin"], [1, 0, 0, 3]),
            (["Berlin", "is", "big"], [3, 0, 0])]


def write_ner(path, rows) -> str:
    path.write_text("".join(json.dumps({"tokens": words, "ner_tags": tags}) + "\n" for words, tags in rows))
    return str(path)


def with_tag(row: int, word: int, tag) -> list:
    """`NER_ROWS` with the tag of word ``word`` (0-based) of row ``row`` replaced by ``tag``."""
    rows = [(words, list(tags)) for words, tags in NER_ROWS]
    rows[row][1][word] = tag
    return rows


def run_ner(argv: list[str]) -> dict:
    spec = importlib.util.spec_from_file_location("run_ner", REPO_ROOT / "scripts" / "run_ner.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(argv)


ALLOWED = r"is not one of the 4 tags of the label list, \['0', '1', '2', '3'\] \(their ids 0\.\.3\)"


@pytest.mark.parametrize("split", ["train", "validation"])
def test_a_tag_of_minus_one_is_refused_with_its_file_row_and_column(split, tmp_path):
    bad = write_ner(tmp_path / f"{split}.jsonl", with_tag(1, 2, -1))
    good = write_ner(tmp_path / "good.jsonl", NER_ROWS)
    files = {"train_file": bad, "validation_file": good} if split == "train" else \
        {"train_file": good, "validation_file": bad}
    data = token_classification.DataArguments(**files, label_column_name="ner_tags")
    assert_outcome("data files", data.load_labelled,
                   error=rf"The {split} file {bad}, row 2, column 'ner_tags': the tag -1 of word 3 {ALLOWED}; -1 "
                         r"marks an unlabelled row of a text-classification data set, not a word's tag")


def test_run_ner_refuses_a_tag_of_minus_one_before_training(tmp_path):
    """The script itself, as a user runs it: the error comes from loading, before any tokenizer or model."""
    train = write_ner(tmp_path / "train.jsonl", with_tag(2, 0, -1))
    validation = write_ner(tmp_path / "validation.jsonl", NER_ROWS)
    argv = ["--train_file", train, "--validation_file", validation, "--label_column_name", "ner_tags",
            "--output_dir", str(tmp_path / "out"), "--max_train_steps", "1", "--embedding_size", "8",
            "--hidden_size", "8", "--vocab_size", "300"]
    assert_outcome("data files", lambda: run_ner(argv),
                   error=rf"The train file {train}, row 3, column 'ner_tags': the tag -1 of word 1 {ALLOWED}")
    assert not (tmp_path / "out").exists()


def test_a_tag_of_minus_one_in_a_validation_split_cut_from_the_train_file_names_both(tmp_path):
    rows = NER_ROWS * 7  # 21 rows: the last 5% (2 rows) become the validation split
    rows[-1] = (rows[-1][0], [3, -1, 0])
    train = write_ner(tmp_path / "train.jsonl", rows)
    data = token_classification.DataArguments(train_file=train, label_column_name="ner_tags")
    assert_outcome("data files", data.load_labelled,
                   error=rf"The validation split \(the last rows of the train file {train}\), row 2, column "
                         rf"'ner_tags': the tag -1 of word 2 {ALLOWED}")


def test_a_class_label_id_of_minus_one_is_refused_with_the_tag_names(tmp_path):
    """A data set whose tags are `datasets.ClassLabel` ids (as Hub NER sets are), saved with its features: -1 is
    datasets' "no label", which a tagger cannot train on."""
    names = ["O", "B-PER", "B-LOC"]
    features = datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),
                                  "ner_tags": datasets.Sequence(datasets.ClassLabel(names=names))})
    good = {"tokens": [["John", "visited", "Paris"]], "ner_tags": [[1, 0, 2]]}
    bad = {"tokens": [["John", "visited", "Paris"], ["Mary", "left"]], "ner_tags": [[1, 0, 2], [1, -1]]}
    datasets.Dataset.from_dict(good, features=features).to_parquet(str(tmp_path / "train.parquet"))
    datasets.Dataset.from_dict(bad, features=features).to_parquet(str(tmp_path / "validation.parquet"))
    data = token_classification.DataArguments(dataset_name=str(tmp_path), label_column_name="ner_tags")
    assert_outcome("data files", data.load_labelled,
                   error=rf"The 'validation' split of {tmp_path}, row 2, column 'ner_tags': the tag -1 of word 2 is "
                         r"not one of the 3 tags of the label list, \['O', 'B-PER', 'B-LOC'\] \(their ids 0\.\.2\)")


@pytest.mark.parametrize("tags", [
    pytest.param({"train": NER_ROWS, "validation": NER_ROWS}, id="integer tags"),
    pytest.param({"train": [(words, [str(tag) for tag in tags]) for words, tags in NER_ROWS],
                  "validation": [(["a", "b"], ["-1", "2"])]}, id="the class name '-1'"),
])
def test_good_tags_load_and_map_to_their_ids(tags, tmp_path):
    """Valid tags still load: integers 0..n-1 (ids of themselves), and a class named "-1" (a string, not the
    unlabelled -1). Each word's id, as the tagger trains on it, is the index of its tag in the label list."""
    files = {f"{split}_file": write_ner(tmp_path / f"{split}.jsonl", rows) for split, rows in tags.items()}
    data = token_classification.DataArguments(**files, label_column_name="ner_tags")

    def check(raw):
        labels = labelling.label_names(raw, "ner_tags")
        to_id = labelling.label_mapper(raw["train"].features["ner_tags"], labels, "ner_tags")
        return all([labels[to_id(tag)] for tag in row] == [str(tag) for tag in row]
                   for split in raw for row in raw[split]["ner_tags"])
    assert_outcome("data files", data.load_labelled, check=check)


CLASSIFIERS = [cls for cls in CLASSES if "Classification" in cls.__name__]
BERT = transformers.BertConfig(vocab_size=VOCAB, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=8, num_labels=3)


def bert_of(model_class):
    """transformers' own head of the same kind, to compare what `hasattr` and `can_generate` answer."""
    kind = "SequenceClassification" if model_class.__name__.endswith("SequenceClassification") else \
        "TokenClassification"
    return getattr(transformers, f"BertFor{kind}")(BERT)


@pytest.mark.parametrize("model_class", CLASSIFIERS, ids=lambda cls: cls.__name__)
def test_a_classifier_asked_to_generate_names_the_classes_that_generate(model_class):
    model = model_of(model_class)
    family = model_class.__name__.split("For")[0]
    seq2seq = "AttentionSeq2SeqForConditionalGeneration" if family == "Recurrent" else \
        "TransformerForConditionalGeneration"
    assert_outcome("inputs", lambda: model.generate(input_ids=SOURCE, attention_mask=MASK, max_new_tokens=2),
                   error=rf"^{model_class.__name__} is a classifier: it does not generate text .* To generate text, "
                         rf"use {family}ForCausalLM \(a language model\) or {seq2seq} \(a sequence-to-sequence")
    # What pipelines, Trainer and PEFT ask keeps transformers' answer for its own classifiers.
    bert = bert_of(model_class)
    assert hasattr(model, "generate") is hasattr(bert, "generate") is False
    assert getattr(model, "generate", None) is None
    assert model_class.can_generate() is model.can_generate() is type(bert).can_generate() is False
    with pytest.raises(AttributeError):  # code that catches the AttributeError of old still does
        model.generate  # noqa: B018
    assert model(input_ids=SOURCE).logits is not None  # other attributes, submodules among them, are found


def test_a_model_that_generates_still_generates():
    model = model_of(hs.RecurrentForCausalLM)
    assert_outcome("inputs", lambda: model.generate(input_ids=SOURCE, attention_mask=MASK, max_new_tokens=2),
                   check=lambda ids: tuple(ids.shape) == (2, SOURCE.shape[1] + 2))


RECURRENT_HEADS = [hs.RecurrentForSequenceClassification, hs.RecurrentForTokenClassification]
ROWS = [[5, 6, 7, 8, 9, 10, 11], [12, 13, 14, 15, 4]]  # two lengths: the batch holds padding


def recurrent_head(model_class, **config):
    torch.manual_seed(0)
    return model_class(hs.RecurrentConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8, num_layers=2,
                                          num_labels=3, pad_token_id=0, **config)).eval()


def read_in_two_chunks(model, split: int, cache_name: str) -> list[torch.Tensor]:
    """Each row's logits from reading the padded batch of `ROWS` in two chunks, the second continuing the cache of
    the first (passed under ``cache_name``): the sequence's logits, or each real token's."""
    ids = torch.tensor([row + [0] * (len(ROWS[0]) - len(row)) for row in ROWS])
    mask = (ids != 0).long()
    with torch.no_grad():
        first = model(input_ids=ids[:, :split], attention_mask=mask[:, :split], use_cache=True)
        second = model(input_ids=ids[:, split:], attention_mask=mask, **{cache_name: output_cache(first)})
    if isinstance(model, hs.RecurrentForSequenceClassification):
        return list(second.logits)
    return [torch.cat([first.logits[i], second.logits[i]])[:len(row)] for i, row in enumerate(ROWS)]


@pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated")
@pytest.mark.parametrize("cache_name", ["cache", "past_key_values"])
@pytest.mark.parametrize("cell_type", ["lstm", "gru"])
@pytest.mark.parametrize("model_class", RECURRENT_HEADS, ids=lambda cls: cls.__name__)
def test_a_recurrent_classifier_continues_a_cache_as_the_whole_sequence(model_class, cell_type, cache_name):
    """Reference: each row read alone, at once, without a cache and without padding."""
    model = recurrent_head(model_class, cell_type=cell_type)
    with torch.no_grad():
        alone = [model(input_ids=torch.tensor([row])).logits[0] for row in ROWS]
    for split in (1, 3, 5):
        assert_outcome("inputs", lambda: read_in_two_chunks(model, split, cache_name),
                       check=lambda rows: all(torch.allclose(got, want, atol=1e-6) for got, want in zip(rows, alone)))


@pytest.mark.parametrize("model_class", RECURRENT_HEADS, ids=lambda cls: cls.__name__)
def test_a_recurrent_classifier_keeps_its_output_without_a_cache(model_class):
    """No cache asked for: the output is the head's transformers class, with the same tuple as before."""
    model = recurrent_head(model_class)
    expected = (transformers.modeling_outputs.SequenceClassifierOutput,
                transformers.modeling_outputs.TokenClassifierOutput)[model_class is hs.RecurrentForTokenClassification]

    def check(output):
        return isinstance(output, expected) and output_cache(output) is None and len(output.to_tuple()) == 1
    assert_outcome("inputs", lambda: model(input_ids=SOURCE), check=check)


def cache_after_two_tokens(model):
    return output_cache(model(input_ids=SOURCE[:, :2], use_cache=True))


def filled_dynamic_cache(model) -> DynamicCache:
    """A Transformer cache holding the keys and values of two tokens, in every layer."""
    cache, heads = DynamicCache(), model.config.num_heads
    for layer in range(model.config.encoder_layers):
        states = torch.zeros(SOURCE.shape[0], heads, 2, model.config.d_model // heads)
        cache.update(states, states, layer)
    return cache


BAD_CACHES = {  # (the classifier, the cache it is given, the message)
    "a bidirectional recurrent encoder": (
        lambda: recurrent_head(hs.RecurrentForTokenClassification, bidirectional=True), cache_after_two_tokens,
        r"`past_key_values` cannot be continued by a bidirectional model: its backward direction reads every "
        r"sequence from the end"),
    "mean pooling": (
        lambda: recurrent_head(hs.RecurrentForSequenceClassification, classifier_pooling="mean"),
        cache_after_two_tokens,
        r"`cache` / `past_key_values`: this classifier pools with classifier_pooling='mean', over the outputs at "
        r"every token.* use classifier_pooling='last'"),
    **{f"{cls.__name__}, {kind} cache": (
        lambda cls=cls: model_of(cls), make,
        rf"`cache` / `past_key_values`: {cls.__name__} cannot continue from a cache. Its encoder's self-attention is "
        r"bidirectional")
       for cls in (hs.TransformerForSequenceClassification, hs.TransformerForTokenClassification)
       for kind, make in (("empty", lambda model: DynamicCache()),
                          ("filled", filled_dynamic_cache))},
}


@pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated")
@pytest.mark.parametrize("cache_name", ["cache", "past_key_values"])
@pytest.mark.parametrize("case", BAD_CACHES)
def test_a_cache_a_classifier_cannot_continue_is_refused(case, cache_name):
    make_model, make_cache, message = BAD_CACHES[case]
    model = make_model()
    cache = make_cache(model)
    assert_outcome("inputs", lambda: model(input_ids=SOURCE[:, 2:], **{cache_name: cache}), error=message)


@pytest.mark.parametrize("options", [{"use_cache": False}, {"use_cache": True}, {"cache": None},
                                     {"past_key_values": None}], ids=str)
@pytest.mark.parametrize("model_class", [hs.TransformerForSequenceClassification,
                                         hs.TransformerForTokenClassification], ids=lambda cls: cls.__name__)
def test_a_transformer_classifier_takes_what_bert_takes(model_class, options):
    """BERT's heads take `use_cache` and an absent cache, and ignore them: so do ours, with unchanged logits."""
    bert_of(model_class)(input_ids=SOURCE, **options)  # the reference takes them
    model = model_of(model_class)
    with torch.no_grad():
        expected = model(input_ids=SOURCE).logits
    assert_outcome("inputs", lambda: model(input_ids=SOURCE, **options).logits,
                   check=lambda logits: torch.equal(logits, expected))
