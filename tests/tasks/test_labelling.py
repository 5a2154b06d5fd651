"""The labelling tasks (hf_seqmodels.tasks.labelling, text_classification and token_classification): word-to-subword
label alignment, label sets, tag schemes, label mapping, prediction and the metrics, on hand-made examples with
hand-computed answers; the model options, and new models that start from pretrained word embeddings."""

import json

import datasets
import pytest
import torch
from accelerate import Accelerator
from transformers import (
    AutoModelForTokenClassification,
    AutoTokenizer,
    BertConfig,
    BertModel,
    DataCollatorForTokenClassification,
)

from hf_seqmodels import RecurrentConfig, RecurrentForTokenClassification
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.tasks.labelling import (
    DataArguments,
    ModelArguments,
    label_names,
    make_model,
    make_tokenizer,
    predict,
    pretrained_rows,
)
from hf_seqmodels.tasks.text_classification import tokenize_for_classification
from hf_seqmodels.tasks.token_classification import (
    align_labels_with_word_ids,
    is_bio,
    token_scores,
    tokenize_for_tagging,
)

WORDS = [["Johanson", "lives", "in", "Kraków", "!"], ["unbelievably", "good", "pierogi"]]
TAGS = [["B-PER", "O", "O", "B-LOC", "O"], ["O", "O", "B-MISC"]]


@pytest.mark.parametrize(
    "word_ids, word_labels, expected",
    [
        ([None, 0, 0, 1, None], [3, 7], [-100, 3, -100, 7, -100]),  # special tokens and a continuation
        ([0, 1, 1, 1, 2], [5, 6, 7], [5, 6, -100, -100, 7]),  # no special tokens, a 3-piece word
        ([None, 0, 1, 1], [1, 2, 3], [-100, 1, 2, -100]),  # truncated: word 2 has no token
        ([0, 0, 0], [4], [4, -100, -100]),
        ([None, None], [], [-100, -100]),  # empty sentence
    ],
)
def test_align_labels_hand_made(word_ids, word_labels, expected):
    assert align_labels_with_word_ids(word_ids, word_labels) == expected


def check_alignment(tokenizer, specials: bool) -> list[list[int]]:
    """Align WORDS/TAGS with ``tokenizer`` and compare with the reference: every word tokenized on its own, its
    first piece labelled, the other pieces and the special tokens (one at each end when ``specials``) -100."""
    raw = tagging_dataset()
    labels = label_names(raw, "tags")
    rows = tokenize_for_tagging(raw, tokenizer, "tokens", "tags", labels, max_length=64)["train"]["labels"]
    for row, words, tags in zip(rows, WORDS, TAGS):
        expected = [-100] if specials else []
        for word, tag in zip(words, tags):
            pieces = tokenizer(word, add_special_tokens=False)["input_ids"]
            expected += [labels.index(tag)] + [-100] * (len(pieces) - 1)
        assert row == expected + ([-100] if specials else [])
    return rows


def tagging_dataset():
    return datasets.DatasetDict(
        {split: datasets.Dataset.from_dict({"tokens": WORDS, "tags": TAGS}) for split in ("train", "validation")}
    )


def test_alignment_with_the_bert_tokenizer(data_dir):
    folder = data_dir / "models" / "all-MiniLM-L6-v2"
    if not folder.is_dir():
        pytest.skip("the bundled BERT checkpoint is absent")
    rows = check_alignment(AutoTokenizer.from_pretrained(folder), specials=True)
    assert rows[0].count(-100) > 2  # "johanson" is split into pieces: the continuation case is exercised


def test_alignment_with_a_trained_wordpiece_tokenizer():
    # A vocabulary this small keeps "lives" whole but splits the rarer words into pieces.
    tokenizer = train_tokenizer([" ".join(words) for words in WORDS] + ["lives in good"], "wordpiece", vocab_size=60)
    rows = check_alignment(tokenizer, specials=False)
    assert all(len(row) > len(words) for row, words in zip(rows, WORDS))  # some words are split into pieces


def test_truncation_drops_the_labels_of_cut_words():
    tokenizer = train_tokenizer([" ".join(WORDS[0])], "word", vocab_size=20)
    raw = tagging_dataset()
    labels = label_names(raw, "tags")
    row = tokenize_for_tagging(raw, tokenizer, "tokens", "tags", labels, max_length=3)["train"][0]
    assert row["labels"] == [labels.index(tag) for tag in TAGS[0][:3]]


def test_words_and_tags_must_match():
    raw = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"tokens": [["a", "b"]], "tags": [["O"]]})})
    tokenizer = train_tokenizer(["a b"], "word", vocab_size=20)
    with pytest.raises(ValueError, match="2 words but 1 tags"):
        tokenize_for_tagging(raw, tokenizer, "tokens", "tags", ["O"], max_length=8)


def test_label_names():
    strings = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"label": ["pos", "neg"]}),
        "validation": datasets.Dataset.from_dict({"label": ["neutral"]}),
    })
    assert label_names(strings, "label") == ["neg", "neutral", "pos"]
    ints = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"label": [1, 0, 1]}),
        "validation": datasets.Dataset.from_dict({"label": [1, -1]}),  # -1 = unlabelled (GLUE test)
    })
    assert label_names(ints, "label") == ["0", "1"]
    ints["test"] = datasets.Dataset.from_dict({"label": [2]})  # a label of the test split alone still gets an id
    assert label_names(ints, "label") == ["0", "1", "2"]
    features = datasets.Features({"tags": datasets.Sequence(datasets.ClassLabel(names=["O", "B-X", "I-X"]))})
    class_labels = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"tags": [[0, 1]]}, features=features)})
    assert label_names(class_labels, "tags") == ["O", "B-X", "I-X"]
    assert label_names(tagging_dataset(), "tags") == ["B-LOC", "B-MISC", "B-PER", "O"]


def test_integer_valued_float_labels_are_the_integers_classes():
    tokenizer = train_tokenizer(["a b c"], "word", vocab_size=20)
    raw = datasets.DatasetDict({  # pandas writes a column of integers with gaps as floats
        "train": datasets.Dataset.from_dict({"sentence": ["a", "b", "c"], "label": [1.0, 0.0, -1.0]}),
        "validation": datasets.Dataset.from_dict({"sentence": ["a", "b"], "label": [0, 1]}),
    })
    labels = label_names(raw, "label")
    assert labels == ["0", "1"]
    tokenized = tokenize_for_classification(raw, tokenizer, "sentence", "label", labels, max_length=8)
    assert tokenized["train"]["labels"] == [1, 0] and tokenized["validation"]["labels"] == [0, 1]


def test_non_integer_labels_are_refused():
    regression = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"score": [0.0, 3.8, 1.5]})})
    with pytest.raises(ValueError, match=r"'score' holds non-integer numbers \(e.g. 1.5\).*class names or integers.*"
                                         r"problem_type='regression'"):
        label_names(regression, "score")


def test_numbers_and_strings_across_splits_are_refused():
    raw = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"label": [1, 0]}),
                                "validation": datasets.Dataset.from_dict({"label": ["pos"]})})
    with pytest.raises(ValueError, match=r"'label' holds numbers and strings across the splits \(e.g. [01] and "
                                         r"'pos'\)"):
        label_names(raw, "label")


def test_is_bio():
    assert is_bio(["O", "B-PER", "I-PER", "B-LOC"])
    assert is_bio(["O", "S-PER", "E-LOC"])  # IOBES
    assert not is_bio(["NOUN", "VERB", "DET"])  # UPOS
    assert not is_bio(["O"])
    assert not is_bio(["O", "B-PER", "NOUN"])


def test_classification_labels_map_by_name_and_unlabelled_rows_go():
    tokenizer = train_tokenizer(["a b c"], "word", vocab_size=20)
    raw = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"sentence": ["a b", "c"], "label": [1, 0]}),
        "validation": datasets.Dataset.from_dict({"sentence": ["a", "b", "c"], "label": [0, -1, 1]}),
    })
    labels = label_names(raw, "label")
    tokenized = tokenize_for_classification(raw, tokenizer, "sentence", "label", labels, max_length=8)
    assert tokenized["train"]["labels"] == [1, 0]
    assert tokenized["validation"]["labels"] == [0, 1]
    strings = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"sentence": ["a", "b"], "label": ["y", "n"]})})
    assert tokenize_for_classification(strings, tokenizer, "sentence", "label", ["n", "y"], 8)["train"]["labels"] == [1, 0]
    with pytest.raises(ValueError, match="Column 'text' not found"):
        tokenize_for_classification(raw, tokenizer, "text", "label", labels, max_length=8)


def test_token_scores_by_hand():
    labels = ["B-LOC", "B-PER", "I-PER", "O"]
    ids = {tag: i for i, tag in enumerate(labels)}
    references = [[ids[t] for t in ("B-PER", "I-PER", "O", "B-LOC")]]
    predictions = [[ids[t] for t in ("B-PER", "O", "O", "B-LOC")]]
    scores = token_scores({"predictions": predictions, "references": references}, labels)
    assert scores["accuracy"] == pytest.approx(3 / 4)
    # per tag F1: B-PER 1, I-PER 0, O (P 1/2, R 1) 2/3, B-LOC 1
    assert scores["f1"] == pytest.approx((1 + 0 + 2 / 3 + 1) / 4)
    # entities: reference {PER 0-1, LOC 3}, predicted {PER 0-0, LOC 3}: one of two right each way
    assert scores["seqeval_precision"] == pytest.approx(0.5)
    assert scores["seqeval_recall"] == pytest.approx(0.5)
    assert scores["seqeval_f1"] == pytest.approx(0.5)
    upos = token_scores({"predictions": [[0, 1]], "references": [[0, 0]]}, ["NOUN", "VERB"])
    assert upos["accuracy"] == 0.5 and not any(key.startswith("seqeval") for key in upos)


def test_predict_keeps_exactly_the_labelled_positions():
    torch.manual_seed(0)
    tokenizer = train_tokenizer([" ".join(words) for words in WORDS], "wordpiece", vocab_size=60)
    raw = tagging_dataset()
    labels = label_names(raw, "tags")
    tokenized = tokenize_for_tagging(raw, tokenizer, "tokens", "tags", labels, max_length=64)["validation"]
    config = RecurrentConfig(vocab_size=len(tokenizer), embedding_size=8, hidden_size=8, bidirectional=True,
                             pad_token_id=tokenizer.pad_token_id, num_labels=len(labels))
    model = RecurrentForTokenClassification(config).eval()
    output = predict(Accelerator(cpu=True), model, tokenized, DataCollatorForTokenClassification(tokenizer), 2)
    assert output["rows"] == 2
    for row, words, tags, predicted, reference in zip(tokenized, WORDS, TAGS, output["predictions"],
                                                      output["references"]):
        assert reference == [labels.index(tag) for tag in tags]  # one per word, in order
        logits = model(input_ids=torch.tensor([row["input_ids"]])).logits[0]  # alone: no padding
        first = [i for i, label in enumerate(row["labels"]) if label != -100]
        assert predicted == logits[first].argmax(-1).tolist()


def test_model_arguments_refuse_options_of_another_model():
    with pytest.raises(ValueError, match="--spelling_features is an option of --model_type recurrent"):
        ModelArguments(model_type="transformer", spelling_features=8)
    with pytest.raises(ValueError, match="pass one or the other"):
        ModelArguments(model_name_or_path="a", embeddings_from="b")


@pytest.fixture
def tiny_bert(tmp_path, data_dir):
    """A tiny BERT with the real WordPiece tokenizer, standing in for the 22M-parameter checkpoint."""
    tokenizer_folder = data_dir / "models" / "all-MiniLM-L6-v2"
    if not tokenizer_folder.is_dir():
        pytest.skip("the bundled BERT checkpoint is absent")
    checkpoint = tmp_path / "tiny-bert"
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    BertModel(config).save_pretrained(checkpoint)  # an encoder without a head, like the real one
    tokenizer.save_pretrained(checkpoint)
    return checkpoint


def test_pretrained_rows_are_found_by_token_string():
    pretrained = {"[PAD]": 0, "paris": 1, "##ing": 2, "the": 3, "Berlin": 4}
    vocab = {"<pad>": 0, "Paris": 1, "paris": 2, "##ing": 3, "\u2581the": 4, "Berlin": 5, "berlin": 6, "xyz": 7}
    assert pretrained_rows(vocab, pretrained) == {1: 1, 2: 1, 3: 2, 4: 3, 5: 4}


@pytest.mark.parametrize("model_type", ["recurrent", "transformer"])
def test_a_new_model_starts_from_pretrained_word_embeddings(tiny_bert, model_type):
    table = BertModel.from_pretrained(tiny_bert).get_input_embeddings().weight
    pretrained_vocab = AutoTokenizer.from_pretrained(tiny_bert).get_vocab()
    options = {"model_type": model_type, "embeddings_from": str(tiny_bert), "embedding_size": 128,
               "hidden_size": 16, "num_heads": 2, "ffn_dim": 32, "tokenizer_type": "wordpiece", "vocab_size": 200}
    # The checkpoint's own tokenizer: every row is the checkpoint's.
    tokenizer = make_tokenizer(ModelArguments(**options, tokenizer_name=str(tiny_bert)), texts=None)
    assert tokenizer.get_vocab() == pretrained_vocab  # no tokenizer trained
    model = make_model(ModelArguments(**options), AutoModelForTokenClassification, tokenizer, ["A", "B"])
    torch.testing.assert_close(model.get_input_embeddings().weight, table, rtol=0, atol=0)
    if model_type == "recurrent":  # the embedding size follows the table, whatever --embedding_size says
        assert model.config.embedding_size == 16
    else:
        with pytest.raises(ValueError, match="16-dimensional word embeddings.*pass --hidden_size 16"):
            make_model(ModelArguments(**{**options, "hidden_size": 32}), AutoModelForTokenClassification,
                       tokenizer, ["A", "B"])
    # A cased tokenizer trained on the data: known tokens start from their (lowercase) pretrained rows.
    trained = make_tokenizer(ModelArguments(**options), ["Paris is big", "paris is bigger", "Zzqx walks"] * 20)
    model = make_model(ModelArguments(**options), AutoModelForTokenClassification, trained, ["A", "B"])
    weight, vocab = model.get_input_embeddings().weight, trained.get_vocab()
    assert model.config.vocab_size == len(trained)
    torch.testing.assert_close(weight[vocab["Paris"]], table[pretrained_vocab["paris"]], rtol=0, atol=0)
    torch.testing.assert_close(weight[vocab["paris"]], table[pretrained_vocab["paris"]], rtol=0, atol=0)
    assert "zzqx" not in pretrained_vocab and not any(torch.equal(weight[vocab["Zzqx"]], row) for row in table)


def write_split_files(folder, test_labels: list[int]) -> None:
    for split, labels in (("train", [0, 1]), ("validation", [1, 0]), ("test", test_labels)):
        with open(folder / f"{split}.jsonl", "w") as handle:
            for label in labels:
                handle.write(json.dumps({"sentence": "a b", "label": label}) + "\n")


def test_a_labelled_test_split_is_kept_and_an_unlabelled_one_dropped_or_refused(tmp_path):
    write_split_files(tmp_path, [1, 1, 0])
    raw = DataArguments(dataset_name=str(tmp_path), max_eval_samples=2).load_labelled()
    assert set(raw) == {"train", "validation", "test"} and raw["test"]["label"] == [1, 1]
    write_split_files(tmp_path, [-1, -1])  # GLUE's hidden test labels
    assert set(DataArguments(dataset_name=str(tmp_path)).load_labelled()) == {"train", "validation"}
    files = {f"{split}_file": str(tmp_path / f"{split}.jsonl") for split in ("train", "validation", "test")}
    with pytest.raises(ValueError, match=r"The 'test' split has no labelled rows .*pass a --test_file"):
        DataArguments(**files).load_labelled()
