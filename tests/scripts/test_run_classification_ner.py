"""run_classification.py and run_ner.py end to end on tiny slices: the bundled SST-2 and UD English-EWT with our
models, a BIO-tagged file with seqeval, and a BERT checkpoint through the same pipeline. Each run's reported
scores are recomputed here from the saved folder, reloaded through the Auto classes."""

import importlib.util
import json

import datasets
import pytest
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    pipeline,
)

from hf_seqmodels.data.paths import REPO_ROOT
from hf_seqmodels.tasks import labelling
from tests.tasks.test_labelling import tiny_bert  # noqa: F401  (a fixture)

TINY = ["--max_train_steps", "4", "--per_device_train_batch_size", "8", "--per_device_eval_batch_size", "16",
        "--logging_steps", "2", "--embedding_size", "16", "--hidden_size", "16", "--num_heads", "2", "--ffn_dim", "32",
        "--vocab_size", "300"]
NER_ROWS = [
    (["John", "Smith", "visited", "Paris", "."], ["B-PER", "I-PER", "O", "B-LOC", "O"]),
    (["Mary", "lives", "in", "New", "York", "City"], ["B-PER", "O", "O", "B-LOC", "I-LOC", "I-LOC"]),
    (["The", "United", "Nations", "met", "."], ["O", "B-ORG", "I-ORG", "O", "O"]),
    (["Berlin", "is", "big"], ["B-LOC", "O", "O"]),
]


def script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def first_piece_predictions(model, tokenizer, words: list[str]) -> list[int]:
    """The reference tagging: each word's prediction is the one at its first sub-token."""
    encoded = tokenizer([words], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        predicted = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).logits[0].argmax(-1)
    word_ids, seen, result = encoded.word_ids(0), set(), []
    for position, word in enumerate(word_ids):
        if word is not None and word not in seen:
            seen.add(word)
            result.append(predicted[position].item())
    assert len(result) == len(words)
    return result


def write_ner_files(folder, splits=("train", "validation")):
    for split in splits:
        with open(folder / f"{split}.jsonl", "w") as handle:
            for words, tags in NER_ROWS if split != "test" else NER_ROWS[::-1]:
                handle.write(json.dumps({"tokens": words, "ner_tags": tags}) + "\n")
    return [*(option for split in splits for option in (f"--{split}_file", str(folder / f"{split}.jsonl"))),
            "--label_column_name", "ner_tags"]


def crf_predictions(model, tokenizer, words: list[str]) -> list[int]:
    """The reference tagging of a CRF model: the Viterbi path over the first sub-token of each word."""
    encoded = tokenizer([words], is_split_into_words=True, return_tensors="pt")
    word_ids = encoded.word_ids(0)
    first = torch.tensor([[word is not None and word != previous for previous, word in zip([None, *word_ids],
                                                                                            word_ids)]])
    emissions = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).logits
    path, _ = model.crf.decode(emissions[first][None])  # the chain alone, decoded by the CRF itself
    return path[0].tolist()


def write_classification_files(folder, train_labels: list, validation_labels: list) -> list[str]:
    """Rows of two-word sentences with the given labels, in train.jsonl and validation.jsonl."""
    for split, labels in (("train", train_labels), ("validation", validation_labels)):
        with open(folder / f"{split}.jsonl", "w") as handle:
            for i, label in enumerate(labels):
                sentence = f"word{i % 5} {'good' if i % 2 else 'bad'}"
                handle.write(json.dumps({"sentence": sentence, "label": label}) + "\n")
    return ["--train_file", str(folder / "train.jsonl"), "--validation_file", str(folder / "validation.jsonl")]


def test_a_bilstm_crf_through_the_script_and_the_pipeline(tmp_path):
    output = tmp_path / "ner-crf"
    results = script("run_ner").main(
        ["--model_type", "recurrent", "--bidirectional", "--use_crf", "--crf_constrain_bio", "--learning_rate", "0.05",
         "--output_dir", str(output), *write_ner_files(tmp_path, ("train", "validation", "test")), *TINY])
    assert results["arguments"]["use_crf"] and results["arguments"]["crf_constrain_bio"]
    model = AutoModelForTokenClassification.from_pretrained(output).eval()
    tokenizer = AutoTokenizer.from_pretrained(output)
    assert model.config.use_crf and model.config.crf_constrain_bio
    # Both splits' scores are those of the Viterbi paths of the saved model (the test split holds the rows reversed).
    for prefix, rows in (("eval", NER_ROWS), ("test", NER_ROWS[::-1])):
        correct = total = 0
        for words, tags in rows:
            predicted = crf_predictions(model, tokenizer, words)
            correct += sum(model.config.id2label[p] == tag for p, tag in zip(predicted, tags))
            total += len(tags)
        assert results[f"{prefix}_accuracy"] == pytest.approx(correct / total)
    assert results["test_rows"] == len(NER_ROWS) and "test_seqeval_f1" in results
    # The saved folder's pipeline tags with Viterbi, one tag per word, each word's pieces with its tag.
    words = ["Mary", "visited", "New", "York", "."]
    tagger = pipeline("token-classification", model=str(output), trust_remote_code=True, ignore_labels=[])
    assert type(tagger).__name__ == "CRFTokenClassificationPipeline"
    expected = [model.config.id2label[tag] for tag in crf_predictions(model, tokenizer, words)]
    word_ids = tokenizer([words], is_split_into_words=True).word_ids(0)
    found = {entity["index"]: entity["entity"] for entity in tagger(" ".join(words))}
    assert found == {i: expected[word] for i, word in enumerate(word_ids) if word is not None}


def test_wnut17_with_entity_f1_on_the_test_split(tmp_path):
    results = script("run_ner").main(
        ["--dataset_name", "wnut17", "--label_column_name", "ner_tags", "--max_train_samples", "32",
         "--max_eval_samples", "8", "--output_dir", str(tmp_path / "wnut"), *TINY])
    assert results["tag_scheme"] == "BIO" and "B-person" in results["labels"] and results["test_rows"] == 8
    assert {"eval_seqeval_f1", "test_seqeval_f1", "test_accuracy"} <= set(results)


@pytest.mark.slow
def test_sst2_with_a_bidirectional_gru(tmp_path, data_dir):
    output = tmp_path / "sst2"
    results = script("run_classification").main(
        ["--model_type", "recurrent", "--cell_type", "gru", "--bidirectional", "--tokenizer_type", "word",
         "--classifier_pooling", "max", "--max_train_samples", "64", "--max_eval_samples", "24",
         "--output_dir", str(output), *TINY])
    assert results == json.loads((output / "results.json").read_text())
    assert results["steps"] == 4 and results["eval_rows"] == 24 and results["labels"] == ["0", "1"]
    assert results["arguments"]["cell_type"] == "gru"
    # Recompute the accuracy from the saved folder, one sentence at a time (no padding).
    tokenizer = AutoTokenizer.from_pretrained(output)
    model = AutoModelForSequenceClassification.from_pretrained(output).eval()
    assert model.config.bidirectional and model.config.num_labels == 2
    validation = datasets.load_dataset("json", data_files=str(data_dir / "sst2" / "validation.jsonl.gz"))["train"]
    correct = 0
    for row in validation.select(range(24)):
        with torch.no_grad():
            logits = model(**tokenizer(row["sentence"], return_tensors="pt")).logits
        correct += int(logits.argmax(-1).item() == row["label"])
    assert results["eval_accuracy"] == pytest.approx(correct / 24)
    assert 0 <= results["eval_f1"] <= 1 and results["num_parameters"] == model.num_parameters()
    # SST-2's test split is labelled: the final model is scored on its first 24 rows too.
    test = datasets.load_dataset("json", data_files=str(data_dir / "sst2" / "test.jsonl.gz"))["train"]
    with torch.no_grad():
        correct = sum(int(model(**tokenizer(row["sentence"], return_tensors="pt")).logits.argmax(-1).item()
                          == row["label"]) for row in test.select(range(24)))
    assert results["test_rows"] == 24 and results["test_accuracy"] == pytest.approx(correct / 24)


@pytest.mark.slow
def test_upos_with_a_bilstm(tmp_path, data_dir):
    output = tmp_path / "upos"
    results = script("run_ner").main(
        ["--model_type", "recurrent", "--bidirectional", "--max_train_samples", "64", "--max_eval_samples", "16",
         "--output_dir", str(output), *TINY])
    assert results["tag_scheme"] == "tags" and "ADJ" in results["labels"] and len(results["labels"]) <= 17
    assert not any(key.startswith("eval_seqeval") for key in results)
    tokenizer = AutoTokenizer.from_pretrained(output)
    model = AutoModelForTokenClassification.from_pretrained(output).eval()
    validation = datasets.load_dataset("json", data_files=str(data_dir / "ud_english_ewt" / "validation.jsonl.gz"))
    correct = total = 0
    for row in validation["train"].select(range(16)):
        predicted = first_piece_predictions(model, tokenizer, row["tokens"])
        correct += sum(model.config.id2label[p] == tag for p, tag in zip(predicted, row["upos"]))
        total += len(row["upos"])
    assert results["eval_accuracy"] == pytest.approx(correct / total)


def test_bio_file_with_a_transformer(tmp_path):
    output = tmp_path / "ner"
    results = script("run_ner").main(
        ["--model_type", "transformer", "--num_layers", "1", "--output_dir", str(output),
         *write_ner_files(tmp_path), *TINY])
    assert results["tag_scheme"] == "BIO"
    assert {"eval_seqeval_f1", "eval_seqeval_precision", "eval_seqeval_recall"} <= set(results)
    assert results["labels"] == ["B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER", "O"]
    config = json.loads((output / "config.json").read_text())
    assert config["model_type"] == "transformer" and config["encoder_layers"] == 1


def test_a_bert_checkpoint_through_the_same_pipeline(tmp_path, tiny_bert):
    checkpoint, tokenizer = tiny_bert, AutoTokenizer.from_pretrained(tiny_bert)
    output = tmp_path / "ner-bert"
    results = script("run_ner").main(
        ["--model_name_or_path", str(checkpoint), "--output_dir", str(output), "--learning_rate", "1e-3",
         *write_ner_files(tmp_path), *TINY])
    assert results["model_type"] == "bert" and results["vocab_size"] == len(tokenizer)
    model = AutoModelForTokenClassification.from_pretrained(output).eval()
    reloaded = AutoTokenizer.from_pretrained(output)
    correct = total = 0
    for words, tags in NER_ROWS:
        predicted = first_piece_predictions(model, reloaded, words)
        correct += sum(model.config.id2label[p] == tag for p, tag in zip(predicted, tags))
        total += len(tags)
    assert results["eval_accuracy"] == pytest.approx(correct / total)


def test_word_embeddings_through_the_script(tmp_path, tiny_bert):
    output = tmp_path / "ner-emb"
    results = script("run_ner").main(["--model_type", "recurrent", "--bidirectional", "--embeddings_from",
                                      str(tiny_bert), "--tokenizer_name", str(tiny_bert), "--spelling_features", "4",
                                      "--output_dir", str(output), *write_ner_files(tmp_path), *TINY])
    assert results["vocab_size"] == len(AutoTokenizer.from_pretrained(tiny_bert))
    assert AutoTokenizer.from_pretrained(output).get_vocab() == AutoTokenizer.from_pretrained(tiny_bert).get_vocab()
    model = AutoModelForTokenClassification.from_pretrained(output)
    assert model.config.model_type == "recurrent" and model.config.embedding_size == 16
    token_id = AutoTokenizer.from_pretrained(output).convert_tokens_to_ids("##ing")
    spelled = model.model.spelling.spellings[token_id]
    assert bytes((spelled[spelled > 0] - 1).tolist()).decode() == "##ing"  # the spellings came with the folder
    # The BERT tokenizer's token_type_ids, which the recurrent model does not take, are gone from the saved
    # tokenizer, so that a pipeline over the folder runs (forward refuses arguments it does not use).
    assert "token_type_ids" not in AutoTokenizer.from_pretrained(output)("a sentence")
    tags = pipeline("token-classification", model=str(output), ignore_labels=[])("John lives in Paris")
    assert tags and all(tag["entity"] in model.config.label2id for tag in tags)


def test_bad_arguments_fail_early(tmp_path):
    with pytest.raises(ValueError, match="`--model_type`='lstm' is not supported"):
        script("run_classification").main(["--model_type", "lstm", "--output_dir", str(tmp_path)])
    with pytest.raises(ValueError, match="Column 'words' not found"):
        script("run_ner").main(["--text_column_name", "words", "--output_dir", str(tmp_path / "x"),
                                *write_ner_files(tmp_path), *TINY])
    with pytest.raises(ValueError, match="'nope=1' is not 'field=value'"):
        script("run_classification").main(["--config_overrides", "nope=1", "--max_train_samples", "8",
                                           "--max_eval_samples", "8", "--output_dir", str(tmp_path / "y"), *TINY])


def test_best_model_on_accuracy(tmp_path):
    output = tmp_path / "best"
    results = script("run_classification").main(
        ["--metric_for_best_model", "eval_accuracy", "--output_dir", str(output),
         *write_classification_files(tmp_path, [0, 1] * 8, [0, 1, 1, 0, 1, 0]), *TINY])
    history = results["eval_history"]
    assert len(history) == 2 and all({"eval_accuracy", "eval_f1", "eval_loss"} <= set(entry) for entry in history)
    best = max(history, key=lambda entry: entry["eval_accuracy"])  # the first of equals, as BestModel keeps it
    # The final scores are recomputed after training: the best evaluation's weights were restored.
    assert results["best_step"] == best["step"] and results["eval_accuracy"] == pytest.approx(best["eval_accuracy"])


def test_early_stopping_on_the_seqeval_f1(tmp_path):
    # With a learning rate of 0 no evaluation is better than the first: patience 1 stops after the second.
    results = script("run_ner").main(
        ["--metric_for_best_model", "eval_seqeval_f1", "--early_stopping_patience", "1", "--learning_rate", "0",
         "--output_dir", str(tmp_path / "ner"), *write_ner_files(tmp_path), *TINY])
    assert results["stopped_early"] and results["steps"] == 2 and results["best_step"] == 1
    assert all("eval_seqeval_f1" in entry for entry in results["eval_history"])


@pytest.mark.parametrize(
    "train_labels, validation_labels, options, message",
    [
        ([0.37, 1.5, 4.0], [2.25], [], r"'label' holds non-integer numbers \(e.g. 0.37\).*class names or integers"),
        ([0, 1], [0, 1], ["--max_train_samples", "0"], "--max_train_samples must be at least 1"),
        ([0, 1], [0, 1], ["--max_eval_samples", "0"], "--max_eval_samples must be at least 1"),
        ([-1, -1], [0, 1], [], r"'train' split has no labelled rows \(2 rows; a 'label' of -1.*--train_file"),
        ([0, 1], [-1], [], r"'validation' split has no labelled rows \(1 rows; .*--validation_file"),
        ([0, 1], [0, 1], ["--metric_for_best_model", "eval_bleu"],
         r"'eval_bleu' is not a metric .*\['eval_loss', 'eval_perplexity', 'eval_accuracy', 'eval_f1'\]"),
        ([0, 1], [0, 1], ["--model_name_or_path", "tests/no-such-run"],
         r"--model_name_or_path='tests/no-such-run': there is no such folder"),
        ([0, 1], [0, 1], ["--tokenizer_name", "./no such tokenizer"], r"--tokenizer_name='./no such tokenizer': there is"),
    ],
)
def test_bad_data_is_refused_before_training(tmp_path, monkeypatch, train_labels, validation_labels, options,
                                             message):
    def no_tokenizer(*args):
        raise AssertionError("a tokenizer was made before the bad input was refused")

    monkeypatch.setattr(labelling, "make_tokenizer", no_tokenizer)
    with pytest.raises(ValueError, match=message):
        script("run_classification").main(["--output_dir", str(tmp_path / "out"), *options,
                                           *write_classification_files(tmp_path, train_labels, validation_labels)])
