"""The text-classification task (one label per text; SST-2 sentiment by default): the data defaults, tokenization,
the scores, and `run`. The rest (model options, labels, tokenizer, model, prediction) is `tasks.labelling`'s.

    from hf_seqmodels.tasks import text_classification as tc
    results = tc.run(tc.ModelArguments(bidirectional=True), tc.DataArguments(),
                     TrainingArguments(output_dir="outputs/sst2-bilstm"))

`run` follows transformers' examples/pytorch/text-classification/run_glue_no_trainer.py: load the data, train a
tokenizer (or take the checkpoint's), tokenize, train with Accelerate, score the validation split with `evaluate`,
and save model, tokenizer and results.json.
"""

from dataclasses import dataclass

import datasets
from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding, PreTrainedTokenizerBase

from ..evaluation import classification_metrics
from ..training.arguments import TrainingArguments
from . import arguments, labelling
from .labelling import ModelArguments

TRAINING_DEFAULTS = {}


@dataclass
class DataArguments(labelling.DataArguments):
    dataset_name: str | None = arguments.dataset_name_field("sst2")


ARGUMENTS = (ModelArguments, DataArguments, TrainingArguments)


def tokenize_for_classification(
    raw: datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    text_column: str,
    label_column: str,
    labels: list[str],
    max_length: int,
    num_proc: int | None = None,
) -> datasets.DatasetDict:
    """Tokenize ``text_column`` and turn ``label_column`` into the label ids (positions in ``labels``).

    Labels are mapped by name, so string labels and integer labels (whose names are their decimal strings, or a
    ClassLabel's names) give the same ids. Rows labelled -1 (unlabelled) are dropped.
    """
    labelling.check_columns(raw, (text_column, label_column))
    to_id = labelling.label_mapper(raw["train"].features[label_column], labels, label_column)
    raw = raw.filter(lambda batch: [label != -1 for label in batch[label_column]], batched=True, desc="Labelled rows")

    def tokenize(batch):
        encoded = tokenizer(batch[text_column], truncation=True, max_length=max_length)
        encoded["labels"] = [to_id(label) for label in batch[label_column]]
        return encoded

    columns = next(iter(raw.values())).column_names
    return raw.map(tokenize, batched=True, remove_columns=columns, num_proc=num_proc, desc="Tokenizing")


def sequence_scores(output: dict) -> dict:
    """Accuracy and macro-F1 of `predict`'s output for sequence classification."""
    return classification_metrics(output["predictions"], output["references"], average="macro")


TASK = labelling.LabellingTask(
    name="text-classification",
    auto_class=AutoModelForSequenceClassification,
    collator_class=DataCollatorWithPadding,
    tokenize=tokenize_for_classification,
    score=lambda output, labels: sequence_scores(output),
    example_row=0,
    tag_scheme=lambda labels: None,
)


def run(model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments) -> dict:
    """Train a text classifier and score it on the validation split; see `labelling.run`."""
    return labelling.run(TASK, model_args, data_args, training_args)
