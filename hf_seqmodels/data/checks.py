"""Checks of data files and of the values the tasks read from them, before any of it reaches `datasets` or a
tokenizer: each error names the file (or the split of a named data set), the line or row, the column, the value
seen and what is allowed.

* `check_file` reads a local file once as its format: a compressed file must decompress, the text must be UTF-8,
  a csv/tsv row must have as many fields as the header (pandas would shift the columns of a longer row silently), and
  a .jsonl line must be a JSON object whose integers fit in 64 bits.
* `check_values` checks the columns a task reads by their kind (`VALUE_KINDS`): text, words, a label, or one label
  per word.
"""

import bz2
import csv
import gzip
import json
import lzma
import math
import zlib
from collections.abc import Iterator
from pathlib import Path

import datasets

OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
TOOLS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd"}  # what writes each compression
try:
    import zstandard

    OPENERS[".zst"] = zstandard.open
except ImportError:  # .zst files need the zstandard package (datasets needs it too)
    pass
# What a file with a wrong compression raises while being read.
COMPRESSION_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


def _is_label(value) -> bool:
    return isinstance(value, (str, int)) or (isinstance(value, float) and math.isfinite(value))


# Kind of a column -> (what its values must be, in words; the test of one value).
VALUE_KINDS = {
    "text": ("a string", lambda value: isinstance(value, str)),
    "words": ("a list of strings (the words)", lambda value: isinstance(value, list)
              and all(isinstance(word, str) for word in value)),
    "label": ("a class name or an integer", _is_label),
    "labels": ("a list of class names or integers (one per word)",
               lambda value: isinstance(value, list) and all(_is_label(label) for label in value)),
}


def check_file(split: str, path: str, extension: str) -> None:
    """Read the local ``split`` file ``path`` as its ``extension`` (".csv", ".tsv", ".jsonl", ".json" or ".txt",
    after any compression suffix) and raise a ValueError (FileNotFoundError when it is missing) naming the file and
    the line at the first problem (see the module docstring)."""
    name = f"The {split} file {path}"
    if not Path(path).exists():
        raise FileNotFoundError(f"{name} does not exist.")
    if Path(path).is_dir():
        raise ValueError(f"{name} is a folder; pass a data file.")
    lines = _lines(name, path)
    if extension in (".csv", ".tsv"):
        count = _check_csv_fields(name, lines, "\t" if extension == ".tsv" else ",")
    elif extension == ".jsonl":
        count = _check_json_lines(name, lines)
    else:
        count = sum(1 for _ in lines)
    if count == 0:
        raise ValueError(f"{name} is empty once decompressed; it holds no line.")


def _lines(name: str, path: str) -> Iterator[str]:
    """The lines of the file (decompressed by its suffix), decoded as UTF-8; a ValueError names the line that is not."""
    suffix = Path(path).suffix
    opener = OPENERS.get(suffix, open)
    number = 0
    try:
        with opener(path, "rb") as file:
            for number, raw in enumerate(file, 1):
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise ValueError(f"{name}, line {number}: the bytes {raw[error.start:error.end + 3]!r} are not "
                                     "UTF-8; save the file as UTF-8 text.") from None
    except COMPRESSION_ERRORS as error:
        if opener is open:
            raise
        where = f" after line {number}" if number else ""
        raise ValueError(f"{name} is not valid {TOOLS[suffix]} data ({error}{where}): compress it with "
                         f"{TOOLS[suffix]}, or drop the {suffix} suffix if it is not compressed.") from None


def _check_csv_fields(name: str, lines: Iterator[str], delimiter: str) -> int:
    """Check the rows' numbers of fields; return the number of lines."""
    rows = csv.reader(lines, delimiter=delimiter)
    header = next(rows, None)
    for row in rows:
        if row and len(row) != len(header):
            raise ValueError(f"{name}, line {rows.line_num}: {len(row)} fields, but the header has {len(header)} "
                             f"({header}); quote fields that hold the delimiter {delimiter!r}.")
    return rows.line_num


def _check_json_lines(name: str, lines: Iterator[str]) -> int:
    """Check that each line is a JSON object; return the number of lines."""
    number = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{name}, line {number}, is not JSON ({error}); a .jsonl file holds one JSON object per "
                             'line, e.g. {"sentence": "..."}.') from None
        if not isinstance(row, dict):
            raise ValueError(f"{name}, line {number}, is {type(row).__name__} {line.strip()[:60]!r}, not a JSON "
                             'object; a .jsonl file holds one JSON object per line, e.g. {"sentence": "..."}.')
        for key, value in row.items():
            if any(isinstance(item, int) and not -2**63 <= item < 2**63 for item in
                   (value if isinstance(value, list) else [value])):
                raise ValueError(f"{name}, line {number}, key {key!r}: {value!r:.60} holds an integer beyond 64 bits "
                                 "(what a column of integers holds); write it as a string.")
    return number


def check_values(rows: datasets.Dataset, name: str, columns: dict[str, str]) -> None:
    """Raise a ValueError naming ``name`` (e.g. "The train file a.jsonl"), the row (1 = the first) and the column at
    the first value of ``columns`` (column -> a kind of `VALUE_KINDS`) that is not of its kind (a null, a number
    for a text, ...), or the first row whose "words" and "labels" differ in length. Columns ``rows`` lacks are left
    to the task's column check, which names the option that picks them."""
    present = {column: kind for column, kind in columns.items() if column in rows.column_names}
    for column, kind in present.items():
        what, is_kind = VALUE_KINDS[kind]
        for row, value in enumerate(rows[column], 1):
            if not is_kind(value):
                seen = "null (an empty field or JSON null)" if value is None else f"{value!r:.80}"
                raise ValueError(f"{name}, row {row}, column {column!r}: {seen} is not {what}; fix or drop the row.")
    kinds = {kind: column for column, kind in present.items()}
    if "words" in kinds and "labels" in kinds:
        for row, (words, labels) in enumerate(zip(rows[kinds["words"]], rows[kinds["labels"]]), 1):
            if len(words) != len(labels):
                raise ValueError(f"{name}, row {row}: {len(words)} words in column {kinds['words']!r} but "
                                 f"{len(labels)} labels in column {kinds['labels']!r}; give one label per word.")
