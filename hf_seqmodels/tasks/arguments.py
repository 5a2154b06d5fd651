"""The arguments every task shares, and the one way from ``--model_type`` + ``--config_overrides`` to a config.

Each task module subclasses `ModelArguments` and `DataArguments` for its own options and defaults, and lists its
argument classes in ``ARGUMENTS`` (the order of its ``run``) and its training defaults in ``TRAINING_DEFAULTS``.
`task_parser` and `parse_dict` turn a command line or a dict of fields into those dataclasses.

Model types (``--model_type``), the same in every task: ``recurrent``, ``attention_seq2seq`` and ``transformer``;
translation also takes ``marian`` (transformers' MarianMTModel sized by our Transformer's fields).
The Transformer's config.json says ``model_type="transformer"`` (before, ``"vanilla_transformer"``: such folders
still load, and that old spelling of the option still works, with a warning).
"""

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import ClassVar

import datasets
from transformers import AutoConfig, HfArgumentParser, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

from ..data.loading import check_file_formats, first_rows, load_text_dataset
from ..data.pretrained_embeddings import FORMATS as VECTOR_FORMATS
from ..data.pretrained_embeddings import load_word_vectors, vectors_dimension
from ..models.configuration_attention_seq2seq import AttentionSeq2SeqConfig
from ..models.configuration_recurrent import RecurrentConfig
from ..models.configuration_transformer import TransformerConfig
from ..models.configuration_utils import check_choice
from ..training.argument_checks import check_at_least, parse_config_overrides

# --model_type -> the config's model_type (the Auto-class registry name). "marian" (translation only) takes our
# Transformer's fields, which `translation.marian_config` turns into transformers' MarianConfig.
MODEL_TYPES = {"recurrent": "recurrent", "attention_seq2seq": "attention_seq2seq", "transformer": "transformer",
               "marian": "transformer"}
# A family's former model_type (configuration_utils.CheckedConfig.former_model_types) -> what to write instead.
OLD_MODEL_TYPES = {former: config.model_type for config in (RecurrentConfig, AttentionSeq2SeqConfig, TransformerConfig)
                   for former in config.former_model_types}


def model_type_field(default: str, choices: tuple[str, ...]):
    return field(default=default, metadata={"help": f"The model family: one of {choices}."})


def dataset_name_field(default: str | None):
    return field(default=default,
                 metadata={"help": "A bundled data set (under $HF_SEQMODELS_DATA), a local folder or a Hub name."})


@dataclass
class ModelArguments:
    """Which model family to build (``model_type``, one of the subclass's ``CHOICES``) and which of its config
    fields to change from the family's defaults (``config_overrides``)."""

    CHOICES: ClassVar[tuple[str, ...]] = tuple(MODEL_TYPES)

    model_type: str = model_type_field("recurrent", CHOICES)
    config_overrides: str | None = field(
        default=None,
        metadata={"help": "Config fields to change from the family's defaults as 'field=value,...', e.g. "
                          "'cell_type=lstm,hidden_size=512' or 'd_model=256,num_heads=4'; they win over the "
                          "task's own model options."},
    )
    word_vectors: str | None = field(
        default=None,
        metadata={"help": "A word vectors file (word2vec text or binary, GloVe, fastText .vec; optionally .gz) whose "
                          "vectors start the new model's input embeddings: each token takes the vector of the same "
                          "word, or else of its lowercase form; the others keep their random start. The recurrent "
                          "families' embedding_size becomes the vectors' dimension; a Transformer's d_model must "
                          "equal it. Pair with --tokenizer_type word."},
    )
    word_vectors_format: str = field(default="auto",
                                     metadata={"help": f"The --word_vectors format: one of {VECTOR_FORMATS}."})

    def __post_init__(self):
        check_choice("--word_vectors_format", self.word_vectors_format, VECTOR_FORMATS)
        if self.word_vectors is not None and not Path(self.word_vectors).is_file():
            raise ValueError(f"--word_vectors {self.word_vectors}: no such file.")
        if self.model_type in OLD_MODEL_TYPES:
            new = OLD_MODEL_TYPES[self.model_type]
            warnings.warn(f"--model_type {self.model_type} is an old name: write --model_type {new}.", FutureWarning,
                          stacklevel=2)
            self.model_type = new
        check_choice("--model_type", self.model_type, self.CHOICES)
        parse_config_overrides(MODEL_TYPES[self.model_type], self.config_overrides)  # refused now, not after loading

    def config(self, tokenizer: PreTrainedTokenizerBase, **fields) -> PretrainedConfig:
        """A config of ``model_type`` sized to ``tokenizer`` (its vocabulary and pad/bos/eos ids), with ``fields``
        (the task's own sizes and options), overridden by ``config_overrides``."""
        fields = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
                  "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id, **fields}
        name = MODEL_TYPES[self.model_type]
        if self.word_vectors and name != "transformer":  # the recurrent families take the vectors' size
            fields["embedding_size"] = vectors_dimension(self.word_vectors, self.word_vectors_format)
        return AutoConfig.for_model(name, **{**fields, **parse_config_overrides(name, self.config_overrides)})

    def load_word_vectors(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                          target_tokenizer: PreTrainedTokenizerBase | None = None) -> dict | None:
        """Start ``model``'s input embeddings from ``--word_vectors`` (`word_vectors.load_word_vectors`; an
        encoder-decoder's decoder reads ``target_tokenizer``'s vocabulary). Returns the coverage for results.json,
        None without the option."""
        if self.word_vectors is None:
            return None
        return load_word_vectors(model, self.word_vectors, self.word_vectors_format, tokenizer, target_tokenizer)


@dataclass
class DataArguments:
    """Where the data comes from. Each task subclasses this for its columns and its default data set."""

    dataset_name: str | None = dataset_name_field(None)
    dataset_config_name: str | None = field(default=None, metadata={"help": "The Hub configuration name."})
    train_file: str | None = field(default=None, metadata={"help": "json/jsonl/csv/tsv (optionally .gz)."})
    validation_file: str | None = field(default=None, metadata={"help": "Same format as --train_file."})
    test_file: str | None = field(default=None, metadata={"help": "Same format as --train_file."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only the first N training rows."})
    max_eval_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N validation and test rows."}
    )
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenizing."})

    def __post_init__(self):
        check_at_least(self, "preprocessing_num_workers", 1)
        for name in ("max_train_samples", "max_eval_samples"):
            check_at_least(self, name, 1, " (leave it out for all rows)")
        check_file_formats(self.file_options())

    def file_options(self) -> dict[str, str | None]:
        """``--train_file``, ``--validation_file`` and ``--test_file`` -> their paths (None when not given)."""
        return {"--train_file": self.train_file, "--validation_file": self.validation_file,
                "--test_file": self.test_file}

    def column_kinds(self) -> dict[str, str]:
        """The columns the task reads -> their kind (`data_checks.VALUE_KINDS`); `load` refuses other values."""
        return {}

    def files(self) -> dict[str, str]:
        """Split -> the data file given for it."""
        files = {"train": self.train_file, "validation": self.validation_file, "test": self.test_file}
        return {split: path for split, path in files.items() if path}

    def load(self) -> datasets.DatasetDict:
        """The splits (`data.load_text_dataset`), cut to ``max_train_samples`` / ``max_eval_samples``."""
        raw = load_text_dataset(self.dataset_name, self.dataset_config_name, self.files(), columns=self.column_kinds())
        return first_rows(raw, self.max_train_samples, self.max_eval_samples)


def task_parser(task: ModuleType) -> HfArgumentParser:
    """The command-line parser of ``task`` (a module of `hf_seqmodels.tasks`): its ``ARGUMENTS``, with its
    ``TRAINING_DEFAULTS``."""
    parser = HfArgumentParser(task.ARGUMENTS)
    parser.set_defaults(**task.TRAINING_DEFAULTS)
    return parser


def parse_dict(task: ModuleType, fields: dict) -> tuple:
    """``task``'s argument dataclasses from a dict of fields (unknown fields are refused), with the task's training
    defaults for the fields not given: what its script would parse from the same options."""
    return HfArgumentParser(task.ARGUMENTS).parse_dict({**task.TRAINING_DEFAULTS, **fields})
