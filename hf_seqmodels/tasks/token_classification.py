"""The token-classification task (one tag per word: UD English-EWT UPOS by default, or any BIO-tagged NER data in
the same token/tag column format): the data defaults, word-to-subword label alignment, the scores, and `run`. The
rest (model options, labels, tokenizer, model, prediction) is `tasks.labelling`'s.

    from hf_seqmodels.tasks import token_classification as tc
    results = tc.run(tc.ModelArguments(bidirectional=True), tc.DataArguments(),
                     TrainingArguments(output_dir="outputs/upos-bilstm"))

`run` follows transformers' examples/pytorch/token-classification/run_ner_no_trainer.py: the words of a sentence are
tokenized with ``is_split_into_words=True``, and the fast tokenizer's ``word_ids()`` tell which word each sub-token
comes from. The first sub-token of a word carries the word's tag; later sub-tokens and special tokens get -100, so
each word is trained on and scored exactly once. With BIO tags the scores include seqeval's entity F1.

``--use_crf`` puts a linear-chain CRF over a new model's tag scores (the BiLSTM-CRF of Lample et al., 2016): it
trains on the CRF's likelihood over each sentence's words and predicts their Viterbi path; ``--crf_constrain_bio``
forbids it the tag sequences BIO does not allow (``O`` followed by ``I-x``). A data set with a labelled test split
(UD English-EWT, WNUT-17) is also scored on it (``test_*`` in results.json); the validation split alone chooses the
model.
"""

import re
from dataclasses import dataclass, field

import datasets
from transformers import (
    AutoModelForTokenClassification,
    DataCollatorForTokenClassification,
    PretrainedConfig,
    PreTrainedTokenizerBase,
)

from ..evaluation import classification_metrics, tagging_metrics
from ..training.arguments import TrainingArguments
from . import arguments, labelling

TRAINING_DEFAULTS = {}
BIO_TAG = re.compile(r"^[BIES]-.+$")


@dataclass
class ModelArguments(labelling.ModelArguments):
    use_crf: bool = field(
        default=False,
        metadata={"help": "A new model: put a linear-chain CRF over the tag scores (BiLSTM-CRF), trained on the "
                          "likelihood of each sentence's tags and predicting their Viterbi path."},
    )
    crf_constrain_bio: bool = field(
        default=False,
        metadata={"help": "With --use_crf and BIO tags: forbid the CRF the tag sequences BIO does not allow (I-x "
                          "after O or after another type, I-x first), in training and prediction."},
    )

    def __post_init__(self):
        super().__post_init__()
        if self.crf_constrain_bio and not self.use_crf:
            raise ValueError("--crf_constrain_bio constrains the CRF of --use_crf: pass --use_crf too.")
        if self.use_crf and self.model_name_or_path:
            raise ValueError("--use_crf adds a CRF to a new model; --model_name_or_path fine-tunes a pretrained "
                             "checkpoint with its own softmax head: pass one or the other.")

    def config(self, tokenizer: PreTrainedTokenizerBase, **fields) -> PretrainedConfig:
        """`arguments.ModelArguments.config` with the CRF options (``use_crf``, ``crf_constrain_bio``)."""
        return super().config(tokenizer, use_crf=self.use_crf, crf_constrain_bio=self.crf_constrain_bio, **fields)


@dataclass
class DataArguments(labelling.DataArguments):
    dataset_name: str | None = arguments.dataset_name_field("ud_english_ewt")
    text_column_name: str = field(default="tokens", metadata={"help": "The column holding each sentence's words."})
    label_column_name: str = field(default="upos", metadata={"help": "The column holding one tag per word."})

    def column_kinds(self) -> dict[str, str]:
        return {self.text_column_name: "words", self.label_column_name: "labels"}


ARGUMENTS = (ModelArguments, DataArguments, TrainingArguments)


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


def tokenize_for_tagging(
    raw: datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    tokens_column: str,
    tags_column: str,
    labels: list[str],
    max_length: int,
    num_proc: int | None = None,
) -> datasets.DatasetDict:
    """Tokenize pre-split words (``tokens_column``) and align their tags (``tags_column``) to the sub-tokens with
    `align_labels_with_word_ids`. Needs a fast tokenizer (for ``word_ids``)."""
    if not tokenizer.is_fast:
        raise ValueError(f"{type(tokenizer).__name__} is not a fast tokenizer: word-to-subword label alignment "
                         "needs word_ids(). Use a tokenizer with a tokenizer.json.")
    labelling.check_columns(raw, (tokens_column, tags_column))
    to_id = labelling.label_mapper(raw["train"].features[tags_column], labels, tags_column)

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
    return raw.map(tokenize, batched=True, remove_columns=columns, num_proc=num_proc,
                   desc="Tokenizing and aligning labels")


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


TASK = labelling.LabellingTask(
    name="token-classification",
    auto_class=AutoModelForTokenClassification,
    collator_class=DataCollatorForTokenClassification,
    tokenize=tokenize_for_tagging,
    score=token_scores,
    example_row=[0],
    tag_scheme=lambda labels: "BIO" if is_bio(labels) else "tags",
)


def run(model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments) -> dict:
    """Train a tagger and score it on the validation split (and a labelled test split); see `labelling.run`."""
    return labelling.run(TASK, model_args, data_args, training_args)
