"""Loading text data sets and preparing them for causal language modelling.

`load_text_dataset` resolves, in this order: explicit ``data_files`` (json/jsonl, csv/tsv or txt, optionally
compressed), a data set bundled under `paths.data_dir()` (e.g. ``"ptb"``), and anything
`datasets.load_dataset` accepts (a local folder or a Hub name).

`LengthGroupedSampler` orders training rows so that batches carry little padding; `TokenBatchSampler` makes
batches of similar lengths holding at most a number of tokens.

`tokenize_for_lm` follows transformers' ``examples/pytorch/language-modeling/run_clm_no_trainer.py``: tokenize
each text, concatenate, and cut the stream into blocks (`group_texts`). Batches of blocks are stacked with
`transformers.default_data_collator`.
"""

import math
from itertools import chain
from pathlib import Path

import datasets
import torch
from torch.utils.data import Sampler
from transformers import PreTrainedTokenizerBase

from .checks import OPENERS, check_file, check_values
from .paths import data_dir

# `datasets` builder and its options for each file extension (a compression suffix such as ".gz" is ignored).
FORMATS = {
    ".json": ("json", {}),
    ".jsonl": ("json", {}),
    ".csv": ("csv", {}),
    ".tsv": ("csv", {"delimiter": "\t"}),
    ".txt": ("text", {}),
}
# What a file of each builder must hold, for error messages.
LAYOUTS = {
    "json": 'JSON lines: one object per line, e.g. {"sentence": "..."}',
    "csv": "a header row of column names, then one row per example",
    "text": "one example per line (the column 'text')",
}
COMPRESSION = {".gz", ".bz2", ".xz", ".zst"}  # .zst needs the zstandard package


def _extension(path: str, option: str | None = None) -> str:
    """The format suffix of ``path`` (".jsonl" for "a.jsonl.gz"); a ValueError naming ``option`` when it has none
    that we read."""
    named = f"{option}={path}" if option else repr(path)
    suffixes = [s for s in Path(path).suffixes if s not in COMPRESSION]
    extension = suffixes[-1] if suffixes else ""
    if extension not in FORMATS:
        raise ValueError(f"Unsupported data file {named}: use one of {sorted(FORMATS)} (optionally "
                         f"{', '.join(sorted(COMPRESSION))}).")
    if Path(path).suffix in COMPRESSION and Path(path).suffix not in OPENERS:
        raise ValueError(f"Data file {named}: reading {Path(path).suffix} files needs the zstandard package (pip "
                         f"install zstandard), or decompress it; {sorted(OPENERS)} need nothing more.")
    return extension


def check_file_formats(files: dict[str, str | None]) -> None:
    """Raise a ValueError naming the option for a file among ``files`` (option -> path or None) whose name does not
    end in a supported format (reads no file)."""
    for option, path in files.items():
        if path is not None:
            _extension(path, option)


def check_column_files(files: dict[str, str | None]) -> None:
    """Raise a ValueError for a .txt file among ``files`` (option -> path or None), for tasks that read named
    columns: a text file has only the column 'text'."""
    for option, path in files.items():
        if path and FORMATS[_extension(path)][0] == "text":
            raise ValueError(f"{option}={path}: a .txt file has one column, 'text', but this task reads named "
                             "columns; use JSON lines (.jsonl) or csv/tsv with a header row of column names.")


def _load_file(split: str, path: str, extension: str) -> datasets.Dataset:
    """One data file as the ``split`` split; a ValueError naming the file when it is empty or not in its format."""
    builder, options = FORMATS[extension]
    expected = f"a {extension} file holds {LAYOUTS[builder]}"
    if Path(path).is_file() and Path(path).stat().st_size == 0:
        raise ValueError(f"The {split} file {path} is empty; {expected}.")
    if "://" not in path:  # a local file (datasets also reads URLs)
        check_file(split, path, extension)
    try:
        return datasets.load_dataset(builder, data_files={split: path}, **options)[split]
    except datasets.exceptions.DatasetGenerationError as error:
        raise ValueError(f"The {split} file {path} could not be read ({error.__cause__}); {expected}.") from error
    except ValueError as error:  # pyarrow's errors (ArrowInvalid...) are ValueErrors too
        if "corresponds to no data" in str(error):  # datasets' words for a file without rows (a csv header only)
            raise ValueError(f"The {split} file {path} has no rows; {expected}.") from error
        raise ValueError(f"The {split} file {path} could not be read ({error}); {expected}.") from error


def _load_named(name: str, config_name: str | None) -> datasets.DatasetDict:
    """A bundled data set, a local folder or a Hub data set; a ValueError naming ``--dataset_name`` when none loads."""
    if not name.strip() or name.strip(".") == "":
        raise ValueError(f"--dataset_name={name!r} names no data set.")
    bundled = data_dir() / name
    try:
        return datasets.load_dataset(str(bundled) if bundled.is_dir() else name, config_name)
    except Exception as error:  # datasets raises many kinds (no such repo, offline, no data files, a bad file)
        known = sorted(path.parent.name for path in data_dir().glob("*/train.*"))
        raise ValueError(f"--dataset_name={name!r} could not be loaded ({type(error).__name__}: {error}); pass a "
                         f"bundled data set {known}, a local folder of data files, a Hub data set, or --train_file "
                         "and --validation_file.") from error


def load_text_dataset(
    name_or_path: str | None = None,
    config_name: str | None = None,
    data_files: dict[str, str] | None = None,
    validation_split_percentage: int = 5,
    columns: dict[str, str] | None = None,
) -> datasets.DatasetDict:
    """Load a data set with at least a ``train`` and a ``validation`` split.

    Args:
        name_or_path: a bundled name (a folder under `paths.data_dir()`, e.g. ``"ptb"``), a local folder, or a
            Hub data set name. Ignored when ``data_files`` is given.
        config_name: the Hub configuration name, if the data set has several.
        data_files: split name -> file path, e.g. ``{"train": "a.jsonl.gz", "validation": "b.jsonl.gz"}``.
        validation_split_percentage: when the data has no ``validation`` split, this percentage of ``train``
            (the last rows, so the result is deterministic) becomes one.
        columns: the columns the task reads, each with its kind (`data_checks.VALUE_KINDS`, e.g.
            ``{"sentence": "text", "label": "label"}``): a value not of its kind is refused with its file, row and
            column (`data_checks.check_values`).
    """
    if data_files:
        extensions = {_extension(path) for path in data_files.values()}
        if len(extensions) > 1:
            raise ValueError(f"All data files must have one format, got {sorted(extensions)} from {data_files}.")
        extension = extensions.pop()
        # One split at a time: files with other columns reach the caller's column checks instead of failing in datasets.
        raw = datasets.DatasetDict({split: _load_file(split, path, extension) for split, path in data_files.items()})
    elif name_or_path is None:
        raise ValueError("Pass a data set name (e.g. 'ptb'), a local folder, a Hub name, or data_files.")
    else:
        raw = _load_named(name_or_path, config_name)

    if "train" not in raw:
        raise ValueError(f"The data set has splits {list(raw)}, but a 'train' split is required.")
    where = {split: f"The {split} file {data_files[split]}" if data_files else f"The {split!r} split of {name_or_path}"
             for split in raw}
    for split, rows in raw.items():
        check_values(rows, where[split], columns or {})
    if "validation" not in raw:
        if math.ceil(len(raw["train"]) * validation_split_percentage / 100) >= len(raw["train"]):
            raise ValueError(f"{where['train']} has {len(raw['train'])} row(s), too few to keep "
                             f"{validation_split_percentage}% of them for validation: pass a --validation_file too.")
        split = raw["train"].train_test_split(test_size=validation_split_percentage / 100, shuffle=False)
        raw["train"], raw["validation"] = split["train"], split["test"]
    return raw


def first_rows(
    raw: datasets.DatasetDict, max_train_samples: int | None = None, max_eval_samples: int | None = None
) -> datasets.DatasetDict:
    """Keep the first ``max_train_samples`` rows of ``train`` and the first ``max_eval_samples`` of every other
    split (``None``: all), for quick runs."""
    for split in raw:
        limit = max_train_samples if split == "train" else max_eval_samples
        if limit is not None:
            raw[split] = raw[split].select(range(min(limit, len(raw[split]))))
    return raw


def check_column(raw: datasets.DatasetDict, column: str) -> list[str]:
    """Raise a ValueError unless every split has ``column``; return the column names (of the first split)."""
    for split, dataset in raw.items():
        if column not in dataset.column_names:
            raise ValueError(f"Column {column!r} not found in the {split!r} split, which has columns "
                             f"{dataset.column_names}. Pick one with --text_column_name.")
    return next(iter(raw.values())).column_names


def group_texts(examples: dict[str, list[list[int]]], block_size: int) -> dict[str, list[list[int]]]:
    """Concatenate every column's token lists and cut them into blocks of ``block_size`` tokens.

    The tail that does not fill a whole block is dropped. ``labels`` is a copy of ``input_ids``: the model
    shifts it to predict the next token. Example with ``block_size=3``:
    ``{"input_ids": [[1, 2], [3, 4, 5], [6, 7]]}`` -> ``{"input_ids": [[1, 2, 3], [4, 5, 6]], "labels": (same)}``.
    """
    concatenated = {key: list(chain.from_iterable(values)) for key, values in examples.items()}
    total_length = len(concatenated["input_ids"]) // block_size * block_size
    blocks = {
        key: [values[i : i + block_size] for i in range(0, total_length, block_size)]
        for key, values in concatenated.items()
    }
    blocks["labels"] = [list(block) for block in blocks["input_ids"]]
    return blocks


def tokenize_for_lm(
    raw: datasets.DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    block_size: int,
    text_column: str = "sentence",
    num_proc: int | None = None,
) -> datasets.DatasetDict:
    """Tokenize ``text_column``, end every text with ``eos`` and group each split into blocks.

    Ending each sentence with ``eos`` is Mikolov's PTB convention: the model also learns where sentences end.
    Each split is grouped as one stream, so only its last partial block (< ``block_size`` tokens) is dropped; a
    split shorter than one block raises a ValueError.

    Returns:
        A DatasetDict with columns ``input_ids`` and ``labels``, each a list of ``block_size`` ints.
    """
    columns = check_column(raw, text_column)
    if tokenizer.eos_token_id is None:
        raise ValueError("The tokenizer has no eos_token: set tokenizer.eos_token before preparing LM data.")
    if block_size < 2:
        raise ValueError(f"block_size must be at least 2 (one input and one target), got {block_size}.")

    def tokenize(batch):
        ids = tokenizer(batch[text_column], add_special_tokens=False)["input_ids"]
        return {"input_ids": [sentence + [tokenizer.eos_token_id] for sentence in ids]}

    tokenized = raw.map(tokenize, batched=True, remove_columns=columns, num_proc=num_proc, desc="Tokenizing")
    blocks = tokenized.map(
        group_texts,
        fn_kwargs={"block_size": block_size},
        batched=True,
        batch_size=None,
        num_proc=num_proc,
        desc=f"Grouping texts in blocks of {block_size}",
    )
    for split, rows in blocks.items():
        if len(rows) == 0:
            tokens = sum(map(len, tokenized[split]["input_ids"]))
            option = "--max_train_samples" if split == "train" else "--max_eval_samples"
            raise ValueError(f"The {split!r} split has {tokens} tokens, fewer than --block_size={block_size}, so it "
                             f"makes no block: lower --block_size, or give it more text ({option}).")
    return blocks


class EpochSeededSampler(Sampler):
    """A sampler whose order depends only on ``seed`` and the epoch (``set_epoch``), so that a resumed run sees the
    same batches."""

    def __init__(self, seed: int):
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed + self.epoch)


class LengthGroupedSampler(EpochSeededSampler):
    """A random order in which neighbours have similar lengths, so that batches carry little padding.

    Rows are shuffled, cut into groups of ``batch_size * group_batches``, each group is sorted by length; the
    result is cut into batches, and the batches are shuffled (the one short batch, if any, stays last so that the
    DataLoader's batches are these). A length may be a tuple, compared in order: translation pairs sort by
    ``(source length, target length)``, so that rows of one source length line up by their targets too.
    """

    def __init__(self, lengths: list[int] | list[tuple[int, ...]], batch_size: int, seed: int = 0,
                 group_batches: int = 50):
        super().__init__(seed)
        self.lengths, self.batch_size, self.group_batches = lengths, batch_size, group_batches

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self):
        generator = self.generator()
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        group = self.batch_size * self.group_batches
        rows = [row for start in range(0, len(order), group)
                for row in sorted(order[start : start + group], key=self.lengths.__getitem__)]
        full = len(rows) // self.batch_size
        for b in torch.randperm(full, generator=generator).tolist():
            yield from rows[b * self.batch_size : (b + 1) * self.batch_size]
        yield from rows[full * self.batch_size :]


class TokenBatchSampler(EpochSeededSampler):
    """Batches of pairs of similar lengths holding at most ``max_tokens`` tokens, padding counted: a batch of
    ``n`` pairs costs ``n * (longest source + longest target)`` (fairseq's ``--max-tokens``).

    As fairseq, the batches are made once: the pairs sorted by length (ties in an order drawn from ``seed``) and cut
    greedily; each epoch shuffles their order (`EpochSeededSampler`), so every epoch has the same number of steps.
    A pair longer than ``max_tokens`` alone is refused (ValueError).
    """

    def __init__(self, source_lengths: list[int], target_lengths: list[int], max_tokens: int, seed: int = 0):
        super().__init__(seed)
        for row, (source, target) in enumerate(zip(source_lengths, target_lengths, strict=True)):
            if source + target > max_tokens:
                raise ValueError(f"Training pair {row} has {source} source + {target} target tokens, more than "
                                 f"--max_tokens={max_tokens} hold: raise --max_tokens, or lower --max_source_length "
                                 f"and --max_target_length.")
        ties = torch.randperm(len(source_lengths), generator=torch.Generator().manual_seed(seed)).tolist()
        order = sorted(range(len(source_lengths)), key=lambda row: (source_lengths[row] + target_lengths[row],
                                                                     ties[row]))
        self.batches, batch, longest = [], [], (0, 0)
        for row in order:
            widths = (max(longest[0], source_lengths[row]), max(longest[1], target_lengths[row]))
            if batch and (len(batch) + 1) * sum(widths) > max_tokens:
                self.batches.append(batch)
                batch, widths = [], (source_lengths[row], target_lengths[row])
            batch.append(row)
            longest = widths
        if batch:
            self.batches.append(batch)

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        for b in torch.randperm(len(self.batches), generator=self.generator()).tolist():
            yield self.batches[b]
