"""Sequence and token classification: labels, tokenization with word-to-subword label alignment, models, and
prediction with metrics. Shared by ``scripts/run_classification.py`` and ``scripts/run_ner.py``, so that our
models and a pretrained checkpoint (the BERT baseline) go through the same data pipeline and metric code.

Token classification follows transformers' ``examples/pytorch/token-classification/run_ner_no_trainer.py``:
the words of a sentence are tokenized with ``is_split_into_words=True``, and the fast tokenizer's ``word_ids()``
tell which word each sub-token comes from. The first sub-token of a word carries the word's tag; later sub-tokens
and special tokens get -100, so each word is trained on and scored exactly once.
"""

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import datasets
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from torch.utils.data import DataLoader
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    DataCollatorWithPadding,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from .cli import check_at_least, parse_config_overrides
from .data import first_rows, load_text_dataset
from .evaluation import classification_metrics, tagging_metrics
from .paths import check_model_path
from .tokenization import KINDS, train_tokenizer
from .training import (
    TrainingArguments,
    describe_device,
    keep_model_inputs,
    make_accelerator,
    run_tokenizer,
    save_model,
    train,
)
from .translation import LengthGroupedSampler

# --model_type name -> the config's model_type (the transformers registry name).
MODEL_TYPES = {"recurrent": "recurrent", "transformer": "vanilla_transformer"}
logger = get_logger(__name__)
BIO_TAG = re.compile(r"^[BIES]-.+$")


@dataclass
class ModelArguments:
    """Which model to train: a pretrained checkpoint, or a new model of this package with its own tokenizer."""

    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "A pretrained checkpoint folder or Hub name (e.g. a BERT encoder) whose tokenizer and "
                          "weights are fine-tuned; the options below are then ignored. Default: a new model."},
    )
    model_type: str = field(default="recurrent", metadata={"help": f"New model family: one of {list(MODEL_TYPES)}."})
    embeddings_from: str | None = field(
        default=None,
        metadata={"help": "A pretrained checkpoint folder or Hub name (e.g. the bundled BERT encoder) whose input word "
                          "embeddings start the new model, as Tai et al. start from GloVe: each token of the new "
                          "model's vocabulary takes the row of the same token (or of its lowercase form); the others "
                          "keep their random start. All are fine-tuned. A recurrent model's --embedding_size becomes "
                          "the checkpoint's."},
    )
    tokenizer_name: str | None = field(
        default=None,
        metadata={"help": "Use this tokenizer (a folder or Hub name) for the new model instead of training one, e.g. "
                          "the --embeddings_from checkpoint's, so that every token finds its pretrained row."},
    )
    cell_type: str = field(default="lstm", metadata={"help": "Recurrent cell: 'rnn', 'lstm' or 'gru'."})
    bidirectional: bool = field(default=False, metadata={"help": "Recurrent: read the text in both directions."})
    num_layers: int = field(default=1, metadata={"help": "Recurrent layers, or Transformer encoder layers."})
    embedding_size: int = field(default=128, metadata={"help": "Recurrent: size of the token embeddings."})
    hidden_size: int = field(default=256, metadata={"help": "Recurrent state size, or the Transformer's d_model."})
    spelling_features: int = field(
        default=0,
        metadata={"help": "Recurrent: size of the character-CNN features of each token's spelling, concatenated to "
                          "its embedding (0 = none); they help with rare words."},
    )
    num_heads: int = field(default=4, metadata={"help": "Transformer: attention heads."})
    ffn_dim: int = field(default=512, metadata={"help": "Transformer: feed-forward hidden size."})
    dropout: float = field(
        default=0.1,
        metadata={"help": "Recurrent: dropout on embeddings, between layers and before the classifier; "
                          "Transformer: residual dropout."},
    )
    classifier_pooling: str | None = field(
        default=None, metadata={"help": "Sequence classification pooling; default: the family's own default."}
    )
    config_overrides: str | None = field(
        default=None,
        metadata={"help": "More config fields of the new model, e.g. 'norm_position=pre,position_embedding=learned'."},
    )
    tokenizer_type: str = field(default="wordpiece", metadata={"help": f"Tokenizer to train: one of {KINDS}."})
    vocab_size: int = field(default=16000, metadata={"help": "Largest vocabulary of the trained tokenizer."})
    max_seq_length: int = field(default=128, metadata={"help": "Truncate tokenized texts to this many tokens."})

    def __post_init__(self):
        if self.model_type not in MODEL_TYPES:
            raise ValueError(f"--model_type={self.model_type!r} is not supported; choose one of {list(MODEL_TYPES)}.")
        if self.tokenizer_type not in KINDS:
            raise ValueError(f"--tokenizer_type={self.tokenizer_type!r} is not supported; choose one of {KINDS}.")
        if self.model_name_or_path and (self.embeddings_from or self.tokenizer_name):
            raise ValueError("--embeddings_from and --tokenizer_name are for a new model; --model_name_or_path "
                             "fine-tunes a pretrained one with its own embeddings and tokenizer: pass one or the other.")
        if self.spelling_features and self.model_type != "recurrent":
            raise ValueError("--spelling_features is an option of --model_type recurrent.")
        check_at_least(self, "max_seq_length", 2)
        for option in ("model_name_or_path", "embeddings_from", "tokenizer_name"):
            if getattr(self, option):
                check_model_path(getattr(self, option), f"--{option}")


@dataclass
class DataArguments:
    """Where the labelled data comes from. The scripts subclass this to change the defaults."""

    dataset_name: str | None = field(
        default=None, metadata={"help": "A bundled data set (under $HF_SEQMODELS_DATA), a local folder or a Hub name."}
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "The Hub configuration name."})
    train_file: str | None = field(default=None, metadata={"help": "json/jsonl/csv/tsv (optionally .gz)."})
    validation_file: str | None = field(default=None, metadata={"help": "Same format as --train_file."})
    text_column_name: str = field(
        default="sentence", metadata={"help": "The column holding the text (a string, or a list of words to tag)."}
    )
    label_column_name: str = field(
        default="label", metadata={"help": "The column holding the label (one per text, or one per word)."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only the first N training rows."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Keep only the first N validation rows."})
    group_by_length: bool = field(
        default=True, metadata={"help": "Batch training rows of similar lengths (shuffled batches, little padding)."}
    )

    def __post_init__(self):
        for name in ("max_train_samples", "max_eval_samples"):
            check_at_least(self, name, 1, " (leave it out for all rows)")


def label_names(raw: datasets.DatasetDict, column: str) -> list[str]:
    """The label set of ``column`` (class labels, or tag sequences), in id order.

    A `datasets.ClassLabel` column (e.g. Hub NER sets with integer tags) keeps its own names; otherwise the
    sorted distinct values of the ``train`` and ``validation`` splits, as strings (a validation-only label still
    gets an id, so scoring never fails on it). ``-1`` marks an unlabelled row, as in GLUE test splits. Numbers
    must be integers (see `_label_name`).
    """
    feature = raw["train"].features[column]
    feature = getattr(feature, "feature", feature)  # the element type of a sequence column
    if isinstance(feature, datasets.ClassLabel):
        return list(feature.names)
    values = set()
    for split in ("train", "validation"):
        for value in raw[split][column] if split in raw else []:
            values.update(value if isinstance(value, list) else [value])
    values.discard(-1)
    if len({isinstance(value, str) for value in values}) > 1:
        number, text = (next(v for v in values if isinstance(v, str) == is_text) for is_text in (False, True))
        raise ValueError(f"The label column {column!r} holds numbers and strings across the splits (e.g. {number} "
                         f"and {text!r}): write the labels of every data file the same way.")
    return [_label_name(value, column) for value in sorted(values)]


def _label_name(value, column: str) -> str:
    """The class name of a raw label: its string form, except that an integer-valued float is named like the
    integer (pandas writes 1 as 1.0 in some columns), so 1.0 in one split and 1 in another are one class.

    Raises:
        ValueError: for a non-integer number (a regression target such as STS-B's similarity scores).
    """
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(
                f"The label column {column!r} holds non-integer numbers (e.g. {value}), like a regression data set "
                "(e.g. STS-B). This script trains classifiers: the labels must be class names or integers. "
                "Regression is not supported here (the models' sequence-classification heads do support it, with "
                "config problem_type='regression' and num_labels=1, in a training loop of your own)."
            )
        value = int(value)
    return str(value)


def is_bio(labels: list[str]) -> bool:
    """Whether the tags are an entity scheme seqeval can score (IOB1/IOB2/IOBES: ``O`` and ``B-X``/``I-X``...)."""
    return any(BIO_TAG.match(label) for label in labels) and all(
        label == "O" or BIO_TAG.match(label) for label in labels
    )


def align_labels_with_word_ids(word_ids: list[int | None], word_labels: list[int]) -> list[int]:
    """Per-token labels from per-word labels: the first sub-token of each word gets the word's label; later
    sub-tokens of the same word and special tokens (``word_id is None``) get -100, which the loss and the metrics
    ignore. Words cut off by truncation simply have no token.

    Example: ``word_ids=[None, 0, 0, 1, None]``, ``word_labels=[3, 7]`` -> ``[-100, 3, -100, 7, -100]``.
    """
    labels, previous = [], None
    for word_id in word_ids:
        labels.append(-100 if word_id is None or word_id == previous else word_labels[word_id])
        previous = word_id
    return labels


def _check_columns(raw: datasets.DatasetDict, columns: tuple[str, str]) -> None:
    for split, dataset in raw.items():
        for column in columns:
            if column not in dataset.column_names:
                raise ValueError(f"Column {column!r} not found in the {split!r} split, which has columns "
                                 f"{dataset.column_names}. Pick one with --text_column_name / --label_column_name.")


def _label_mapper(feature, labels: list[str], column: str):
    """A function from a raw label to its id: a ClassLabel value is already its id, anything else is looked up
    by its `_label_name` (so the integer 1, the float 1.0 and the string "1" all map to the id of "1")."""
    if isinstance(getattr(feature, "feature", feature), datasets.ClassLabel):
        return int
    index = {name: i for i, name in enumerate(labels)}
    return lambda value: index[_label_name(value, column)]


def tokenize_for_classification(
    raw: datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    text_column: str,
    label_column: str,
    labels: list[str],
    max_length: int,
) -> datasets.DatasetDict:
    """Tokenize ``text_column`` and turn ``label_column`` into the label ids (positions in ``labels``).

    Labels are mapped by name, so string labels and integer labels (whose names are their decimal strings, or a
    ClassLabel's names) give the same ids. Rows labelled -1 (unlabelled) are dropped.
    """
    _check_columns(raw, (text_column, label_column))
    to_id = _label_mapper(raw["train"].features[label_column], labels, label_column)
    raw = raw.filter(lambda batch: [label != -1 for label in batch[label_column]], batched=True, desc="Labelled rows")

    def tokenize(batch):
        encoded = tokenizer(batch[text_column], truncation=True, max_length=max_length)
        encoded["labels"] = [to_id(label) for label in batch[label_column]]
        return encoded

    columns = next(iter(raw.values())).column_names
    return raw.map(tokenize, batched=True, remove_columns=columns, desc="Tokenizing")


def tokenize_for_tagging(
    raw: datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    tokens_column: str,
    tags_column: str,
    labels: list[str],
    max_length: int,
) -> datasets.DatasetDict:
    """Tokenize pre-split words (``tokens_column``) and align their tags (``tags_column``) to the sub-tokens with
    `align_labels_with_word_ids`. Needs a fast tokenizer (for ``word_ids``)."""
    if not tokenizer.is_fast:
        raise ValueError(f"{type(tokenizer).__name__} is not a fast tokenizer: word-to-subword label alignment "
                         "needs word_ids(). Use a tokenizer with a tokenizer.json.")
    _check_columns(raw, (tokens_column, tags_column))
    to_id = _label_mapper(raw["train"].features[tags_column], labels, tags_column)

    def tokenize(batch):
        encoded = tokenizer(batch[tokens_column], is_split_into_words=True, truncation=True, max_length=max_length)
        encoded["labels"] = []
        for i, (words, tags) in enumerate(zip(batch[tokens_column], batch[tags_column])):
            if len(words) != len(tags):
                raise ValueError(f"A row has {len(words)} words but {len(tags)} tags: {words} / {tags}.")
            tag_ids = [to_id(tag) for tag in tags]
            encoded["labels"].append(align_labels_with_word_ids(encoded.word_ids(i), tag_ids))
        return encoded

    columns = next(iter(raw.values())).column_names
    return raw.map(tokenize, batched=True, remove_columns=columns, desc="Tokenizing and aligning labels")


def make_tokenizer(model_args: ModelArguments, texts) -> PreTrainedTokenizerBase:
    """The pretrained checkpoint's tokenizer (``--model_name_or_path``), the one named by ``--tokenizer_name``, or
    a new one trained on ``texts`` (strings, or lists of words, which are joined with spaces)."""
    if model_args.model_name_or_path or model_args.tokenizer_name:
        return AutoTokenizer.from_pretrained(model_args.model_name_or_path or model_args.tokenizer_name)
    texts = (" ".join(text) if isinstance(text, list) else text for text in texts)
    return train_tokenizer(texts, model_args.tokenizer_type, model_args.vocab_size)


def make_model(model_args: ModelArguments, auto_class, tokenizer: PreTrainedTokenizerBase, labels: list[str]):
    """Load the pretrained checkpoint with a new head for ``labels``, or build a new model of ``--model_type``
    sized to the tokenizer. ``auto_class`` is `AutoModelForSequenceClassification` or
    `AutoModelForTokenClassification`."""
    label_options = {
        "num_labels": len(labels),
        "id2label": dict(enumerate(labels)),
        "label2id": {label: i for i, label in enumerate(labels)},
    }
    if model_args.model_name_or_path:
        return auto_class.from_pretrained(model_args.model_name_or_path, **label_options)
    if tokenizer.pad_token_id is None:
        raise ValueError("The tokenizer has no pad_token: batches of different lengths need one.")
    model_type = MODEL_TYPES[model_args.model_type]
    config_class = type(AutoConfig.for_model(model_type))
    table, table_vocab = pretrained_word_embeddings(model_args.embeddings_from) if model_args.embeddings_from \
        else (None, None)
    if model_args.model_type == "recurrent":
        options = {
            "embedding_size": model_args.embedding_size if table is None else table.shape[1],
            "hidden_size": model_args.hidden_size,
            "num_layers": model_args.num_layers,
            "cell_type": model_args.cell_type,
            "bidirectional": model_args.bidirectional,
            "embedding_dropout": model_args.dropout,
            "dropout": model_args.dropout if model_args.num_layers > 1 else 0.0,
            "output_dropout": model_args.dropout,
            "spelling_features": model_args.spelling_features,
        }
    else:
        options = {
            "d_model": model_args.hidden_size,
            "num_heads": model_args.num_heads,
            "encoder_layers": model_args.num_layers,
            "ffn_dim": model_args.ffn_dim,
            "dropout": model_args.dropout,
            "max_position_embeddings": model_args.max_seq_length,
            "is_encoder_decoder": False,
        }
    if model_args.classifier_pooling is not None:
        options["classifier_pooling"] = model_args.classifier_pooling
    options.update(parse_config_overrides(config_class.model_type, model_args.config_overrides))
    config = config_class(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **options,
        **label_options,
    )
    model = auto_class.from_config(config)
    if model_args.spelling_features:
        model.base_model.set_token_spellings(tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))))
    if table is not None:
        embeddings = model.get_input_embeddings().weight
        if embeddings.shape[1] != table.shape[1]:
            raise ValueError(f"{model_args.embeddings_from} has {table.shape[1]}-dimensional word embeddings but the "
                             f"new model's are {embeddings.shape[1]}-dimensional: pass --hidden_size "
                             f"{table.shape[1]} (the Transformer's d_model is its embedding size).")
        rows = pretrained_rows(tokenizer.get_vocab(), table_vocab)
        with torch.no_grad():
            embeddings[list(rows)] = table[list(rows.values())]
        logger.info(f"{len(rows)} of {len(tokenizer)} tokens start from {model_args.embeddings_from}'s embeddings")
    return model


def pretrained_word_embeddings(name_or_path: str) -> tuple[torch.Tensor, dict[str, int]]:
    """The input word-embedding table ``(vocab, dim)`` of a pretrained checkpoint (e.g. BERT's word-piece
    embeddings) and its tokenizer's vocabulary (token -> row); the rest of the checkpoint is dropped."""
    table = AutoModel.from_pretrained(name_or_path).get_input_embeddings().weight.detach()
    vocab = {token: i for token, i in AutoTokenizer.from_pretrained(name_or_path).get_vocab().items() if i < len(table)}
    return table, vocab


def pretrained_rows(vocab: dict[str, int], pretrained_vocab: dict[str, int]) -> dict[int, int]:
    """Token id -> pretrained row, for the tokens of ``vocab`` found in ``pretrained_vocab``: the same string, or
    else its lowercase form (so "Paris" and "paris" both start from an uncased model's "paris"). A leading
    SentencePiece "▁" is dropped first, so word-initial BPE pieces find whole words."""
    rows = {}
    for token, i in vocab.items():
        bare = token[1:] if token.startswith("\u2581") and len(token) > 1 else token
        for candidate in (bare, bare.lower()):
            if candidate in pretrained_vocab:
                rows[i] = pretrained_vocab[candidate]
                break
    return rows


@torch.no_grad()
def predict(accelerator: Accelerator, model: PreTrainedModel, dataset, collate_fn, batch_size: int) -> dict:
    """Run ``model`` over ``dataset`` (rows with ``labels``) and return the arg-max predictions.

    Returns:
        ``predictions`` and ``references``: one label id per row for sequence classification, or one list per
        row (the positions whose label is not -100) for token classification; ``seconds`` spent (all processes
        run in parallel) and ``rows``.
    """
    model = accelerator.unwrap_model(model)
    was_training = model.training
    model.eval()
    loader = accelerator.prepare(DataLoader(dataset, batch_size=batch_size, collate_fn=collate_fn))
    predictions, references = [], []
    start = time.monotonic()
    for batch in loader:
        labels = batch.pop("labels")
        predicted = model(**batch).logits.argmax(-1)
        if predicted.dim() == 2:  # tokens: pad to the longest row of any process before gathering
            predicted = accelerator.pad_across_processes(predicted, dim=1, pad_index=-100)
            labels = accelerator.pad_across_processes(labels, dim=1, pad_index=-100)
        predicted, labels = accelerator.gather_for_metrics((predicted, labels))
        if predicted.dim() == 2:
            keep = labels != -100
            predictions += [row[mask].tolist() for row, mask in zip(predicted, keep)]
            references += [row[mask].tolist() for row, mask in zip(labels, keep)]
        else:
            predictions += predicted.tolist()
            references += labels.tolist()
    seconds = time.monotonic() - start
    model.train(was_training)
    return {"predictions": predictions, "references": references, "seconds": seconds, "rows": len(dataset)}


def sequence_scores(output: dict) -> dict:
    """Accuracy and macro-F1 of `predict`'s output for sequence classification."""
    return classification_metrics(output["predictions"], output["references"], average="macro")


def token_scores(output: dict, labels: list[str]) -> dict:
    """Token accuracy and macro-F1 over all scored words; with BIO tags also seqeval's entity precision, recall
    and F1 (prefixed ``seqeval_``)."""
    flat_predictions = [p for row in output["predictions"] for p in row]
    flat_references = [r for row in output["references"] for r in row]
    scores = classification_metrics(flat_predictions, flat_references, average="macro")
    if is_bio(labels):
        tags = lambda rows: [[labels[i] for i in row] for row in rows]  # noqa: E731
        entity = tagging_metrics(tags(output["predictions"]), tags(output["references"]))
        scores.update({f"seqeval_{key}": value for key, value in entity.items()})
    return scores


def _eval_prefixed(scores: dict) -> dict:
    return {f"eval_{key}": value for key, value in scores.items()}


def evaluation_results(accelerator: Accelerator, output: dict, scores: dict, model: PreTrainedModel) -> dict:
    """The fields every classification script adds to ``results.json``: ``eval_<metric>`` scores, parameters,
    inference throughput (validation rows per second, batched) and the device."""
    return {
        **_eval_prefixed(scores),
        "eval_rows": output["rows"],
        "eval_samples_per_second": output["rows"] / max(output["seconds"], 1e-9),
        "num_parameters": accelerator.unwrap_model(model).num_parameters(),
        "device": describe_device(accelerator.device),
        "num_processes": accelerator.num_processes,
    }


# task -> (Auto class of the head, collator, tokenize function, scoring function)
TASKS = {
    "text-classification": (
        AutoModelForSequenceClassification, DataCollatorWithPadding, tokenize_for_classification,
        lambda output, labels: sequence_scores(output),
    ),
    "token-classification": (
        AutoModelForTokenClassification, DataCollatorForTokenClassification, tokenize_for_tagging, token_scores,
    ),
}


def _load_labelled_data(data_args: DataArguments) -> datasets.DatasetDict:
    """The ``train`` and ``validation`` splits (a ``test`` split is dropped: GLUE test labels are hidden), cut to
    ``--max_train_samples``/``--max_eval_samples``; refused unless both have the columns and a labelled row."""
    files = {"train": data_args.train_file, "validation": data_args.validation_file}
    raw = load_text_dataset(data_args.dataset_name, data_args.dataset_config_name,
                            {k: v for k, v in files.items() if v})
    raw.pop("test", None)
    raw = first_rows(raw, data_args.max_train_samples, data_args.max_eval_samples)
    _check_columns(raw, (data_args.text_column_name, data_args.label_column_name))
    for split, rows in raw.items():
        if not any(label != -1 for label in rows[data_args.label_column_name]):
            raise ValueError(
                f"The {split!r} split has no labelled rows ({len(rows)} rows; a {data_args.label_column_name!r} of "
                f"-1 marks an unlabelled row, as in GLUE test splits), so there is nothing to "
                f"{'train on' if split == 'train' else 'score'}: pass a --{split}_file (or --dataset_name) with labels."
            )
    return raw


def _check_metric_for_best_model(metric: str | None, task: str, labels: list[str]) -> None:
    """Refuse, before training, a ``--metric_for_best_model`` that no evaluation reports: `training.train`'s
    ``eval_loss`` and ``eval_perplexity``, and the task's scores (``eval_accuracy``...). The scores' names are
    read off the scoring of one row, so that they are exactly the keys of the results."""
    if metric is None:
        return
    score = TASKS[task][-1]
    row = [[0]] if task == "token-classification" else [0]
    names = ["eval_loss", "eval_perplexity", *_eval_prefixed(score({"predictions": row, "references": row}, labels))]
    if metric not in names:
        raise ValueError(f"--metric_for_best_model={metric!r} is not a metric of the {task} evaluations; choose one "
                         f"of {names}.")


def run(task: str, model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments) -> dict:
    """The whole script: load the data, make the tokenizer and model, train with `training.train`, score the
    validation split and save model, tokenizer and ``results.json`` to ``training_args.output_dir``. Every
    evaluation during training scores the validation split too, so ``--metric_for_best_model`` can be any of the
    results' scores (e.g. ``eval_accuracy``, or ``eval_seqeval_f1`` for BIO tags).

    Args:
        task: "text-classification" (one label per text) or "token-classification" (one tag per word).

    Returns:
        The results written to ``results.json``: `training.train`'s fields, ``eval_<metric>`` scores,
        ``num_parameters``, ``eval_samples_per_second``, ``device``, ``labels`` and the ``arguments``.
    """
    if task not in TASKS:
        raise ValueError(f"task={task!r} is not supported; choose one of {list(TASKS)}.")
    auto_class, collator_class, tokenize, score = TASKS[task]
    start = time.monotonic()
    accelerator = make_accelerator(training_args)
    with accelerator.main_process_first():
        raw = _load_labelled_data(data_args)
        labels = label_names(raw, data_args.label_column_name)
        _check_metric_for_best_model(training_args.metric_for_best_model, task, labels)
        tokenizer = run_tokenizer(training_args,
                                  lambda: make_tokenizer(model_args, raw["train"][data_args.text_column_name]))
        tokenized = tokenize(raw, tokenizer, data_args.text_column_name, data_args.label_column_name, labels,
                             model_args.max_seq_length)
    model = make_model(model_args, auto_class, tokenizer, labels)
    tokenized = keep_model_inputs(tokenized, tokenizer, model)
    collator = collator_class(tokenizer)
    # Validation rows in length order batch with little padding; no score depends on the order.
    lengths = [len(ids) for ids in tokenized["validation"]["input_ids"]]
    validation = tokenized["validation"].select(sorted(range(len(lengths)), key=lengths.__getitem__))

    sampler = None
    if data_args.group_by_length:
        sampler = LengthGroupedSampler([len(ids) for ids in tokenized["train"]["input_ids"]],
                                       training_args.per_device_train_batch_size, seed=training_args.seed)

    def validation_scores(unwrapped: PreTrainedModel) -> dict:  # each evaluation reports the results' scores too
        output = predict(accelerator, unwrapped, validation, collator, training_args.per_device_eval_batch_size)
        return _eval_prefixed(score(output, labels))

    results = train(accelerator, model, tokenized["train"], validation, collator, training_args,
                    evaluate_fn=validation_scores, train_sampler=sampler, tokenizer=tokenizer)
    output = predict(accelerator, model, validation, collator, training_args.per_device_eval_batch_size)
    results.update(evaluation_results(accelerator, output, score(output, labels), model))
    results.update(
        task=task,
        model_type=model.config.model_type,
        dataset=data_args.dataset_name or data_args.train_file,
        labels=labels,
        tag_scheme=("BIO" if is_bio(labels) else "tags") if task == "token-classification" else None,
        vocab_size=len(tokenizer),
        wall_time_s=time.monotonic() - start,
        arguments={**asdict(model_args), **asdict(data_args), **asdict(training_args)},
    )
    save_model(accelerator, model, tokenizer, training_args.output_dir, results)
    if accelerator.is_main_process:
        print(json.dumps({k: v for k, v in results.items() if k not in ("eval_history", "arguments")}, indent=2))
    return results


__all__ = [
    "DataArguments",
    "ModelArguments",
    "align_labels_with_word_ids",
    "evaluation_results",
    "is_bio",
    "label_names",
    "make_model",
    "make_tokenizer",
    "predict",
    "pretrained_rows",
    "pretrained_word_embeddings",
    "run",
    "sequence_scores",
    "token_scores",
    "tokenize_for_classification",
    "tokenize_for_tagging",
]
