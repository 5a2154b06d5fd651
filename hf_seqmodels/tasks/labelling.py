"""What text classification and token classification share: the model options (our models, or a pretrained
checkpoint such as the BERT baseline), labelled data, label lists, tokenizer, model, prediction, and the run itself,
so that both tasks, our models and a pretrained checkpoint go through the same data pipeline and metric code.
`tasks.text_classification` and `tasks.token_classification` each give `run` a `LabellingTask`: the head, the
collator, the tokenization and the scores of the task.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import datasets
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from torch.utils.data import DataLoader
from transformers import AutoModel, PreTrainedModel, PreTrainedTokenizerBase

from ..data.loading import LengthGroupedSampler
from ..data.paths import check_model_path
from ..data.pretrained_embeddings import pretrained_rows
from ..data.tokenization import DEFAULT_SPECIAL_TOKENS, KINDS, load_tokenizer, train_tokenizer
from ..models.configuration_recurrent import POOLINGS as RECURRENT_POOLINGS
from ..models.configuration_transformer import TRANSFORMER_POOLINGS
from ..models.configuration_utils import CELL_TYPES, check_choice
from ..provenance import describe_device
from ..storage.safe_loading import load_pretrained
from ..training.argument_checks import check_at_least, check_different, check_range
from ..training.arguments import TrainingArguments
from ..training.loop import finish_run, keep_model_inputs, sorted_by_length, start_run, train
from . import arguments

logger = get_logger(__name__)
POOLINGS = {"recurrent": RECURRENT_POOLINGS, "transformer": TRANSFORMER_POOLINGS}  # --model_type -> its poolings


@dataclass
class ModelArguments(arguments.ModelArguments):
    """Which model to train: a pretrained checkpoint, or a new model of this package with its own tokenizer."""

    CHOICES: ClassVar[tuple[str, ...]] = ("recurrent", "transformer")

    model_type: str = arguments.model_type_field("recurrent", CHOICES)
    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "A pretrained checkpoint folder or Hub name (e.g. a BERT encoder) whose tokenizer and "
                          "weights are fine-tuned; the options below are then ignored. Default: a new model."},
    )
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
    tokenizer_type: str = field(default="wordpiece", metadata={"help": f"Tokenizer to train: one of {KINDS}."})
    vocab_size: int = field(default=16000, metadata={"help": "Largest vocabulary of the trained tokenizer."})
    max_seq_length: int = field(default=128, metadata={"help": "Truncate tokenized texts to this many tokens."})

    def __post_init__(self):
        super().__post_init__()
        check_choice("--tokenizer_type", self.tokenizer_type, KINDS)
        check_choice("--cell_type", self.cell_type, CELL_TYPES)
        if self.classifier_pooling is not None:
            check_choice("--classifier_pooling", self.classifier_pooling, POOLINGS[self.model_type])
        for name in ("num_layers", "embedding_size", "hidden_size", "num_heads", "ffn_dim"):
            check_at_least(self, name, 1)
        check_at_least(self, "spelling_features", 0)
        check_range(self, "dropout", 0, 1, high_open=True)
        check_at_least(self, "vocab_size", len(DEFAULT_SPECIAL_TOKENS) + 1, " (more than the special tokens)")
        if self.model_type == "transformer" and self.hidden_size % self.num_heads:
            raise ValueError(f"--hidden_size={self.hidden_size} (the Transformer's d_model) must be a multiple of "
                             f"--num_heads={self.num_heads}.")
        if self.model_name_or_path and (self.embeddings_from or self.tokenizer_name or self.word_vectors):
            raise ValueError("--embeddings_from, --word_vectors and --tokenizer_name are for a new model; "
                             "--model_name_or_path fine-tunes a pretrained one with its own embeddings and tokenizer: "
                             "pass one or the other.")
        if self.embeddings_from and self.word_vectors:
            raise ValueError("--embeddings_from and --word_vectors both start the input embeddings: pass one.")
        if self.spelling_features and self.model_type != "recurrent":
            raise ValueError("--spelling_features is an option of --model_type recurrent.")
        check_at_least(self, "max_seq_length", 2)
        for option in ("model_name_or_path", "embeddings_from", "tokenizer_name"):
            if getattr(self, option):
                check_model_path(getattr(self, option), f"--{option}")


@dataclass
class DataArguments(arguments.DataArguments):
    """Where the labelled data comes from. Each task subclasses this for its default data set and columns."""

    text_column_name: str = field(
        default="sentence", metadata={"help": "The column holding the text (a string, or a list of words to tag)."}
    )
    label_column_name: str = field(
        default="label", metadata={"help": "The column holding the label (one per text, or one per word)."}
    )
    group_by_length: bool = field(
        default=True, metadata={"help": "Batch training rows of similar lengths (shuffled batches, little padding)."}
    )

    def __post_init__(self):
        super().__post_init__()
        check_different(self, "text_column_name", "label_column_name")

    def column_kinds(self) -> dict[str, str]:
        return {self.text_column_name: "text", self.label_column_name: "label"}

    def load_labelled(self) -> datasets.DatasetDict:
        """The ``train`` and ``validation`` splits, and the ``test`` split when it has labels, cut to
        ``--max_train_samples`` / ``--max_eval_samples``; refused unless each has the columns and a labelled row,
        and, for tags (one label per word), unless every tag is one of the label list (`check_tags`).
        A data set's test split without labels (GLUE's hidden ones, -1) is dropped with a warning; a --test_file
        without labels is refused."""
        raw = self.load()
        check_columns(raw, (self.text_column_name, self.label_column_name))
        if "test" in raw and not self.test_file and not has_labels(raw["test"], self.label_column_name):
            logger.warning(f"The test split of {self.dataset_name} has no labels: only the validation split is "
                           "scored.")
            raw.pop("test")
        for split, rows in raw.items():
            if not has_labels(rows, self.label_column_name):
                raise ValueError(
                    f"The {split!r} split has no labelled rows ({len(rows)} rows; a {self.label_column_name!r} of "
                    f"-1 marks an unlabelled row, as in GLUE test splits), so there is nothing to "
                    f"{'train on' if split == 'train' else 'score'}: pass a --{split}_file (or --dataset_name) with "
                    "labels."
                )
        if self.column_kinds().get(self.label_column_name) == "labels":
            labels = label_names(raw, self.label_column_name)
            for split, rows in raw.items():
                check_tags(rows, self.source(split), self.label_column_name, labels)
        return raw

    def source(self, split: str) -> str:
        """The data of ``split`` as errors name it, e.g. "The train file a.jsonl" (as `data.load_text_dataset`
        names them)."""
        files = self.files()
        if split in files:
            return f"The {split} file {files[split]}"
        if files:  # the validation split cut from the train file
            return f"The {split} split (the last rows of the train file {files['train']})"
        return f"The {split!r} split of {self.dataset_name}"


def has_labels(rows: datasets.Dataset, column: str) -> bool:
    """Whether any row of ``rows`` is labelled (-1 marks an unlabelled row, as in GLUE test splits)."""
    return any(label != -1 for label in rows[column])


def label_names(raw: datasets.DatasetDict, column: str) -> list[str]:
    """The label set of ``column`` (class labels, or tag sequences), in id order.

    A `datasets.ClassLabel` column (e.g. Hub NER sets with integer tags) keeps its own names; otherwise the
    sorted distinct values of the ``train``, ``validation`` and ``test`` splits, as strings (a label found only
    in the scored splits still gets an id, so scoring never fails on it). ``-1`` marks an unlabelled row, as in
    GLUE test splits. Numbers must be integers (see `_label_name`).
    """
    feature = raw["train"].features[column]
    feature = getattr(feature, "feature", feature)  # the element type of a sequence column
    if isinstance(feature, datasets.ClassLabel):
        return list(feature.names)
    values = set()
    for split in ("train", "validation", "test"):
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


def check_columns(raw: datasets.DatasetDict, columns: tuple[str, str]) -> None:
    for split, dataset in raw.items():
        for column in columns:
            if column not in dataset.column_names:
                raise ValueError(f"Column {column!r} not found in the {split!r} split, which has columns "
                                 f"{dataset.column_names}. Pick one with --text_column_name / --label_column_name.")


def check_tags(rows: datasets.Dataset, name: str, column: str, labels: list[str]) -> None:
    """Raise a ValueError naming ``name`` (e.g. "The train file a.jsonl"), the row (1 = the first), the column, the
    word and the tag at the first tag of ``column`` (a list of tags per row) that is not one of ``labels`` (the label
    list, `label_names`): an id of a `datasets.ClassLabel` column outside 0..n-1, or -1, which marks an unlabelled row
    of a text-classification data set and is no word's tag."""
    feature = rows.features[column]
    class_ids = isinstance(getattr(feature, "feature", feature), datasets.ClassLabel)
    names = set(labels)
    for row, tags in enumerate(rows[column], 1):
        for word, tag in enumerate(tags, 1):
            if not (0 <= tag < len(labels) if class_ids else tag != -1 and _label_name(tag, column) in names):
                unlabelled = "; -1 marks an unlabelled row of a text-classification data set, not a word's tag" \
                    if tag == -1 else ""
                raise ValueError(
                    f"{name}, row {row}, column {column!r}: the tag {tag!r} of word {word} is not one of the "
                    f"{len(labels)} tags of the label list, {labels} (their ids 0..{len(labels) - 1}){unlabelled}. "
                    "Fix or drop the row."
                )


def label_mapper(feature, labels: list[str], column: str):
    """A function from a raw label to its id: a ClassLabel value is already its id, anything else is looked up
    by its `_label_name` (so the integer 1, the float 1.0 and the string "1" all map to the id of "1")."""
    if isinstance(getattr(feature, "feature", feature), datasets.ClassLabel):
        return int
    index = {name: i for i, name in enumerate(labels)}
    return lambda value: index[_label_name(value, column)]


def make_tokenizer(model_args: ModelArguments, texts) -> PreTrainedTokenizerBase:
    """The pretrained checkpoint's tokenizer (``--model_name_or_path``), the one named by ``--tokenizer_name``, or
    a new one trained on ``texts`` (strings, or lists of words, which are joined with spaces)."""
    if model_args.model_name_or_path:
        return load_tokenizer(model_args.model_name_or_path, "--model_name_or_path")
    if model_args.tokenizer_name:
        return load_tokenizer(model_args.tokenizer_name, "--tokenizer_name")
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
        return load_pretrained(auto_class, model_args.model_name_or_path, new_head=True, **label_options)
    if tokenizer.pad_token_id is None:
        raise ValueError("The tokenizer has no pad_token: batches of different lengths need one.")
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
    config = model_args.config(tokenizer, **options, **label_options)
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
    table = load_pretrained(AutoModel, name_or_path, new_head=True).get_input_embeddings().weight.detach()
    vocab = {token: i for token, i in load_tokenizer(name_or_path, "--embeddings_from").get_vocab().items()
             if i < len(table)}
    return table, vocab


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
        predicted = predicted_labels(model, batch, labels)
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


def predicted_labels(model: PreTrainedModel, batch: dict, labels: torch.Tensor) -> torch.Tensor:
    """The model's predictions for ``batch``: the arg-max of the logits, or for a tagger with a CRF
    (``config.use_crf``) its Viterbi path over the labelled positions, as in training."""
    if getattr(model.config, "use_crf", False):
        return model.viterbi_tags(**batch, tag_mask=labels != -100)
    return model(**batch).logits.argmax(-1)


def eval_prefixed(scores: dict, prefix: str = "eval") -> dict:
    return {f"{prefix}_{key}": value for key, value in scores.items()}


def evaluation_results(accelerator: Accelerator, output: dict, scores: dict, model: PreTrainedModel) -> dict:
    """The fields every labelling task adds to ``results.json``: ``eval_<metric>`` scores, parameters,
    inference throughput (validation rows per second, batched) and the device."""
    return {
        **eval_prefixed(scores),
        "eval_rows": output["rows"],
        "eval_samples_per_second": output["rows"] / max(output["seconds"], 1e-9),
        "num_parameters": accelerator.unwrap_model(model).num_parameters(),
        "device": describe_device(accelerator.device),
        "num_processes": accelerator.num_processes,
    }


@dataclass(frozen=True)
class LabellingTask:
    """What a labelling task brings to `run`."""

    name: str  # the pipeline task, written to results.json: "text-classification" or "token-classification"
    auto_class: type  # AutoModelForSequenceClassification or AutoModelForTokenClassification
    collator_class: type
    tokenize: Callable  # (raw, tokenizer, text column, label column, labels, max length, processes) -> DatasetDict
    score: Callable[[dict, list[str]], dict]  # (`predict`'s output, labels) -> scores
    example_row: list  # one row of predictions or references, to name the scores
    tag_scheme: Callable[[list[str]], str | None]  # labels -> the results' "tag_scheme"


def check_metric_for_best_model(metric: str | None, task: LabellingTask, labels: list[str]) -> None:
    """Refuse, before training, a ``--metric_for_best_model`` that no evaluation reports: `training.train`'s
    ``eval_loss`` and ``eval_perplexity``, and the task's scores (``eval_accuracy``...). The scores' names are
    read off the scoring of one row, so that they are exactly the keys of the results."""
    if metric is None:
        return
    row = [task.example_row]
    names = ["eval_loss", "eval_perplexity", *eval_prefixed(task.score({"predictions": row, "references": row},
                                                                        labels))]
    if metric not in names:
        raise ValueError(f"--metric_for_best_model={metric!r} is not a metric of the {task.name} evaluations; choose "
                         f"one of {names}.")


def run(task: LabellingTask, model_args: ModelArguments, data_args: DataArguments,
        training_args: TrainingArguments) -> dict:
    """Load the data, make the tokenizer and model, train with `training.train`, score the validation split (and
    the test split when the data has a labelled one) and save model, tokenizer and ``results.json`` to
    ``training_args.output_dir``. Every evaluation during training scores the validation split too, so
    ``--metric_for_best_model`` can be any of the results' scores (e.g. ``eval_accuracy``, or ``eval_seqeval_f1``
    for BIO tags); the validation split alone chooses the model, the test split scores only the final one.

    Returns:
        The results written to ``results.json``: `training.train`'s fields, ``eval_<metric>`` scores (and
        ``test_<metric>`` with ``test_rows``), ``num_parameters``, ``eval_samples_per_second``, ``device``,
        ``labels`` and the ``arguments``.
    """
    start = time.monotonic()
    accelerator, checkpoints = start_run(training_args)
    with accelerator.main_process_first():
        raw = data_args.load_labelled()
        labels = label_names(raw, data_args.label_column_name)
        check_metric_for_best_model(training_args.metric_for_best_model, task, labels)
        tokenizer = checkpoints.tokenizer(lambda: make_tokenizer(model_args, raw["train"][data_args.text_column_name]))
        tokenized = task.tokenize(raw, tokenizer, data_args.text_column_name, data_args.label_column_name, labels,
                                  model_args.max_seq_length, data_args.preprocessing_num_workers)
    model = make_model(model_args, task.auto_class, tokenizer, labels)
    vectors_coverage = model_args.load_word_vectors(model, tokenizer)
    tokenized = keep_model_inputs(tokenized, tokenizer, model)
    collator = task.collator_class(tokenizer)
    validation = sorted_by_length(tokenized["validation"])

    sampler = None
    if data_args.group_by_length:
        sampler = LengthGroupedSampler([len(ids) for ids in tokenized["train"]["input_ids"]],
                                       training_args.per_device_train_batch_size, seed=training_args.seed)

    def validation_scores(unwrapped: PreTrainedModel) -> dict:  # each evaluation reports the results' scores too
        output = predict(accelerator, unwrapped, validation, collator, training_args.per_device_eval_batch_size)
        return eval_prefixed(task.score(output, labels))

    results = train(accelerator, model, tokenized["train"], validation, collator, training_args,
                    evaluate_fn=validation_scores, train_sampler=sampler, tokenizer=tokenizer, checkpoints=checkpoints)
    output = predict(accelerator, model, validation, collator, training_args.per_device_eval_batch_size)
    results.update(evaluation_results(accelerator, output, task.score(output, labels), model))
    if "test" in tokenized:
        test = predict(accelerator, model, sorted_by_length(tokenized["test"]), collator,
                       training_args.per_device_eval_batch_size)
        results.update(eval_prefixed(task.score(test, labels), "test"), test_rows=test["rows"])
    fields = {
        "task": task.name,
        "model_type": model.config.model_type,
        "dataset": data_args.dataset_name or data_args.train_file,
        "labels": labels,
        "tag_scheme": task.tag_scheme(labels),
        "vocab_size": len(tokenizer),
    }
    # num_processes and device are already among the evaluation's results, and stay where they are.
    return finish_run(accelerator, checkpoints, training_args, (model_args, data_args), model, tokenizer, results,
                      fields, start=start, splits=["validation", *(["test"] if "test" in tokenized else [])],
                      word_vectors_coverage=vectors_coverage)
