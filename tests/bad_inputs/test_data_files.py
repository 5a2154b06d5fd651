"""Bad data files (area "data files"), loaded as each task loads them (its ``DataArguments``: ``load`` or
``load_labelled``): a file that is not what its name says, text that is not UTF-8, rows or values of the wrong kind
are refused with the file, the line or row and the column; good files in every format and compression load exactly."""

import bz2
import gzip
import importlib.util
import json
import lzma
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_seqmodels.tasks import language_modeling, text_classification, token_classification, translation

from .outcomes import assert_outcome

COMPRESS = {"": lambda data: data, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}
GOOD_CLASSIFICATION = b'{"sentence": "a good film", "label": 1}\n{"sentence": "a bad film", "label": 0}\n'


def write(folder: Path, name: str, content: bytes | str) -> str:
    """Write ``content`` to ``folder/name``, compressed as the name's last suffix says; return the path."""
    data = content.encode() if isinstance(content, str) else content
    path = folder / name
    path.write_bytes(COMPRESS.get(path.suffix, COMPRESS[""])(data))
    return str(path)


def jsonl(*rows: dict) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def load_classification(train: str, validation: str | None = None):
    return text_classification.DataArguments(train_file=train, validation_file=validation or train).load_labelled()


# Files that are not what their names say: (name, content as written, pattern of the message after the file name).
BROKEN_FILES = {
    "not gzip": ("train.jsonl.gz", b"plain text", r" is not valid gzip data \(Not a gzipped file"),
    "not bzip2": ("train.jsonl.bz2", b"plain text", r" is not valid bzip2 data"),
    "not xz": ("train.csv.xz", b"plain text", r" is not valid xz data"),
    "truncated gzip": ("train.jsonl.gz", gzip.compress(GOOD_CLASSIFICATION * 50)[:40], r" is not valid gzip data"),
    "latin-1 jsonl": ("train.jsonl", '{"sentence": "café", "label": 1}\n'.encode("latin-1"),
                      r", line 1: the bytes b'\\xe9.*' are not UTF-8; save the file as UTF-8"),
    "latin-1 on line 3 of a csv": ("train.csv", "sentence,label\na,1\ncafé,0\n".encode("latin-1"),
                                   r", line 3: the bytes .* are not UTF-8"),
    "latin-1 in a tsv.gz": ("train.tsv.gz", gzip.compress("sentence\tlabel\nnaïve\t1\n".encode("cp1252")),
                            r", line 2: the bytes .* are not UTF-8"),
    "utf-16": ("train.jsonl", '{"sentence": "a", "label": 1}\n'.encode("utf-16"), r", line 1: .* not UTF-8"),
    "empty": ("train.jsonl", b"", r" is empty; a .jsonl file holds JSON lines"),
    "empty csv": ("train.csv", b"", r" is empty; a .csv file holds a header row"),
    "empty once decompressed": ("train.jsonl.gz", gzip.compress(b""), r" is empty once decompressed"),
    "header only": ("train.csv", b"sentence,label\n", r" has no rows; a .csv file holds a header row"),
    "blank lines only": ("train.jsonl", b"\n\n\n", r" has no rows"),
    "csv row with an extra field": ("train.csv", b"sentence,label\na,1\nb, c,0\n",
                                    r", line 3: 3 fields, but the header has 2 \(\['sentence', 'label'\]\); quote"),
    "csv row with a missing field": ("train.csv", b"sentence,label\na,1\nb\n", r", line 3: 1 fields, but the header"),
    "tsv row with an extra tab": ("train.tsv", b"sentence\tlabel\na\tb\t1\n", r", line 2: 3 fields"),
    "jsonl line that is a list": ("train.jsonl", b'{"sentence": "a", "label": 1}\n[1, 2]\n',
                                  r", line 2, is list '\[1, 2\]', not a JSON object"),
    "jsonl line that is a string": ("train.jsonl", b'"a good film"\n', r", line 1, is str .* not a JSON object"),
    "jsonl line cut short": ("train.jsonl", b'{"sentence": "a", "label": 1}\n{"sentence": "b", "lab\n',
                             r", line 2, is not JSON \("),
    "an integer beyond 64 bits": ("train.jsonl", b'{"sentence": "a", "label": 18446744073709551616}\n',
                                  r", line 1, key 'label': 18446744073709551616 holds an integer beyond 64 bits"),
    "csv saved as .json": ("train.json", b"sentence,label\nhi,1\n", r" could not be read \(JSON parse error"),
}


@pytest.mark.parametrize("case", BROKEN_FILES)
def test_a_broken_file_is_refused_with_its_name(case, tmp_path):
    name, content, message = BROKEN_FILES[case]
    path = tmp_path / name
    path.write_bytes(content)
    assert_outcome("data files", lambda: load_classification(str(path)),
                   error=rf"The train file {path}{message}")


def test_a_missing_file_or_a_folder_is_named(tmp_path):
    missing = tmp_path / "missing.jsonl"
    assert_outcome("data files", lambda: load_classification(str(missing)),
                   error=rf"The train file {missing} does not exist")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    assert_outcome("data files", lambda: load_classification(str(folder)),
                   error=rf"The train file {folder} is a folder")


@pytest.mark.skipif(importlib.util.find_spec("zstandard") is not None, reason="zstandard reads .zst files here")
def test_a_zst_file_without_zstandard_is_refused_when_parsed():
    assert_outcome("data files", lambda: text_classification.DataArguments(train_file="train.jsonl.zst"),
                   error=r"--train_file=train.jsonl.zst: reading .zst files needs the zstandard package")


def test_a_one_row_train_file_without_validation_is_refused(tmp_path):
    path = write(tmp_path, "train.jsonl", jsonl({"sentence": "a b c"}))
    assert_outcome("data files", lambda: language_modeling.DataArguments(train_file=path).load(),
                   error=rf"The train file {path} has 1 row\(s\), too few to keep 5% of them for validation: pass a "
                         r"--validation_file")


def test_files_of_two_formats_are_refused(tmp_path):
    train = write(tmp_path, "train.jsonl", GOOD_CLASSIFICATION)
    validation = write(tmp_path, "validation.csv", "sentence,label\na,1\n")
    assert_outcome("data files", lambda: load_classification(train, validation),
                   error=r"All data files must have one format, got \['.csv', '.jsonl'\]")


# Rows with values a text-classification file must not hold: (rows or csv text, the message after the file name).
BAD_CLASSIFICATION_ROWS = {
    "null text": ([{"sentence": "a", "label": 1}, {"sentence": None, "label": 0}],
                  r", row 2, column 'sentence': null \(an empty field or JSON null\) is not a string"),
    "number as text": ([{"sentence": "a", "label": 1}, {"sentence": 5, "label": 0}],
                       r", row 2, column 'sentence': 5 is not a string"),
    "list as text": ([{"sentence": ["a", "b"], "label": 1}], r", row 1, column 'sentence': \['a', 'b'\] is not a str"),
    "true as text": ([{"sentence": "a", "label": 1}, {"sentence": True, "label": 0}],
                     r", row 2, column 'sentence': True is not a string"),
    "missing text": ([{"sentence": "a", "label": 1}, {"label": 0}], r", row 2, column 'sentence': null"),
    "null label": ([{"sentence": "a", "label": None}, {"sentence": "b", "label": 0}],
                   r", row 1, column 'label': null .* is not a class name or an integer"),
    "missing label": ([{"sentence": "a", "label": 1}, {"sentence": "b"}], r", row 2, column 'label': null"),
    "list as label": ([{"sentence": "a", "label": [1]}], r", row 1, column 'label': \[1\] is not a class name"),
    "object as label": ([{"sentence": "a", "label": {"id": 1}}], r", row 1, column 'label': \{'id': 1\} is not"),
    "empty text field in a csv": ("sentence,label\na,1\n,0\n", r", row 2, column 'sentence': null"),
    "empty label field in a csv": ("sentence,label\na,1\nb,\n", r", row 2, column 'label': null"),
    "empty label field in a csv of floats": ("sentence,label\na,1.0\nb,\n", r", row 2, column 'label': n"),
}


@pytest.mark.parametrize("case", BAD_CLASSIFICATION_ROWS)
@pytest.mark.parametrize("split", ["train", "validation"])
def test_a_bad_value_is_refused_with_its_file_row_and_column(case, split, tmp_path):
    rows, message = BAD_CLASSIFICATION_ROWS[case]
    name = f"{split}.csv" if isinstance(rows, str) else f"{split}.jsonl"
    bad = write(tmp_path, name, rows if isinstance(rows, str) else jsonl(*rows))
    good = write(tmp_path, f"good{Path(name).suffix}",
                 "sentence,label\nfine,1\n" if isinstance(rows, str) else GOOD_CLASSIFICATION)
    files = (bad, good) if split == "train" else (good, bad)
    assert_outcome("data files", lambda: load_classification(*files), error=rf"The {split} file {bad}{message}")


def test_a_missing_column_is_named_with_the_options_that_pick_it(tmp_path):
    path = write(tmp_path, "train.jsonl", jsonl({"text": "a", "label": 1}, {"text": "b", "label": 0}))
    assert_outcome("data files", lambda: load_classification(path),
                   error=r"Column 'sentence' not found in the 'train' split, which has columns \['text', 'label'\]. "
                         r"Pick one with --text_column_name")


BAD_TAGGING_ROWS = {  # token classification: words and one tag per word
    "fewer tags than words": ({"tokens": ["a", "b"], "upos": ["X"]},
                              r", row 2: 2 words in column 'tokens' but 1 labels in column 'upos'; give one label"),
    "more tags than words": ({"tokens": ["a"], "upos": ["X", "Y"]}, r", row 2: 1 words .* but 2 labels"),
    "words as one string": ({"tokens": "a b", "upos": ["X", "Y"]},
                            r", row 2, column 'tokens': 'a b' is not a list of strings \(the words\)"),
    "null word": ({"tokens": ["a", None], "upos": ["X", "Y"]}, r", row 2, column 'tokens': \['a', None\] is not"),
    "number word": ({"tokens": ["a", 7], "upos": ["X", "Y"]}, r", row 2, column 'tokens': \['a', 7\] is not"),
    "null tag": ({"tokens": ["a", "b"], "upos": ["X", None]},
                 r", row 2, column 'upos': \['X', None\] is not a list of class names or integers"),
    "null tags": ({"tokens": ["a"], "upos": None}, r", row 2, column 'upos': null"),
    "tags as one string": ({"tokens": ["a"], "upos": "X"}, r", row 2, column 'upos': 'X' is not a list"),
}


@pytest.mark.parametrize("case", BAD_TAGGING_ROWS)
def test_a_bad_tagging_row_is_refused_with_its_file_and_row(case, tmp_path):
    row, message = BAD_TAGGING_ROWS[case]
    path = write(tmp_path, "train.jsonl", jsonl({"tokens": ["fine"], "upos": ["ADJ"]}, row))
    data = token_classification.DataArguments(train_file=path, validation_file=path)
    assert_outcome("data files", data.load_labelled, error=rf"The train file {path}{message}")


BAD_TRANSLATION_ROWS = {
    "null source": ({"en": None, "de": "b"}, r", row 2, column 'en': null"),
    "null target": ({"en": "a", "de": None}, r", row 2, column 'de': null"),
    "number target": ({"en": "a", "de": 3}, r", row 2, column 'de': 3 is not a string"),
    "list source": ({"en": ["a"], "de": "b"}, r", row 2, column 'en': \['a'\] is not a string"),
}


@pytest.mark.parametrize("case", BAD_TRANSLATION_ROWS)
def test_a_bad_sentence_pair_is_refused_with_its_file_row_and_column(case, tmp_path):
    row, message = BAD_TRANSLATION_ROWS[case]
    path = write(tmp_path, "train.jsonl.gz", jsonl({"en": "a dog", "de": "ein Hund"}, row))
    data = translation.DataArguments(train_file=path, validation_file=path)
    assert_outcome("data files", data.load, error=rf"The train file {path}{message}")


@pytest.mark.parametrize("value, shown", [(None, "null"), (12, "12"), ({"a": 1}, r"\{'a': 1\}")])
def test_a_bad_text_for_language_modelling_is_refused(value, shown, tmp_path):
    path = write(tmp_path, "train.jsonl", jsonl({"sentence": "a b"}, {"sentence": value}, {"sentence": "c"}))
    data = language_modeling.DataArguments(train_file=path, validation_file=path)
    assert_outcome("data files", data.load, error=rf"The train file {path}, row 2, column 'sentence': {shown}")


GOOD_FILES = {  # name: content; each holds the sentences "a good film" (1) and "a, bad film" (0)
    **{f"train.jsonl{suffix}": jsonl({"sentence": "a good film", "label": 1}, {"sentence": "a, bad film", "label": 0})
       for suffix in COMPRESS},
    **{f"train.csv{suffix}": 'sentence,label\na good film,1\n"a, bad film",0\n' for suffix in COMPRESS},
    "train.tsv.gz": "sentence\tlabel\na good film\t1\na, bad film\t0\n",
    "train.json": json.dumps([{"sentence": "a good film", "label": 1}, {"sentence": "a, bad film", "label": 0}]),
    "bom.csv": '\ufeffsentence,label\na good film,1\n"a, bad film",0\n',
    "blank lines.jsonl": '\n{"sentence": "a good film", "label": 1}\n\n{"sentence": "a, bad film", "label": 0}\n\n',
    "crlf.csv": 'sentence,label\r\na good film,1\r\n"a, bad film",0\r\n',
}


@pytest.mark.parametrize("name", GOOD_FILES)
def test_a_good_file_loads_exactly(name, tmp_path):
    path = write(tmp_path, name, GOOD_FILES[name])

    def check(raw):
        return all(raw[split]["sentence"] == ["a good film", "a, bad film"] and
                   [str(label) for label in raw[split]["label"]] == ["1", "0"] for split in ("train", "validation"))
    assert_outcome("data files", lambda: load_classification(path), check=check)


def test_a_text_file_loads_one_example_per_line(tmp_path):
    path = write(tmp_path, "train.txt.gz", "the first line\nthe second line\nthe third line\n")
    data = language_modeling.DataArguments(train_file=path, validation_file=path, text_column_name="text")
    assert_outcome("data files", data.load, check=lambda raw: raw["train"]["text"][1] == "the second line")


FINITE = st.floats(allow_nan=False, allow_infinity=False)  # what standard JSON can write
INT64 = st.integers(-2**63, 2**63 - 1)  # larger ones: "an integer beyond 64 bits" above
TEXT = st.one_of(st.text(max_size=8), st.none(), INT64, FINITE, st.booleans(),
                 st.lists(st.text(max_size=3), max_size=2))
LABEL = st.one_of(st.sampled_from(["pos", "neg"]), st.integers(-1, 3), st.none(), FINITE, st.lists(INT64, max_size=2))


def first_bad(rows: list[tuple]) -> tuple[int, str] | None:
    """The 1-based row and the column of the first value `data_checks` must refuse (texts first, then labels)."""
    for column, position, good in (("sentence", 0, lambda value: isinstance(value, str)),
                                   ("label", 1, lambda value: isinstance(value, (str, int, float)))):
        for number, row in enumerate(rows, 1):
            if not good(row[position]):
                return number, column
    return None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(TEXT, LABEL), min_size=2, max_size=5))
def test_any_json_lines_are_refused_at_the_first_bad_value_or_loaded(rows):
    """Random rows of texts and labels of any JSON type: a bad value is named by row and column; else every value
    arrives as written."""
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), "train.jsonl", jsonl(*({"sentence": text, "label": label} for text, label in rows)))
        call = lambda: text_classification.DataArguments(train_file=path, validation_file=path).load()  # noqa: E731
        bad = first_bad(rows)
        if bad is None:
            assert_outcome("data files", call, check=lambda raw: raw["train"]["sentence"] == [text for text, _ in rows])
        else:
            row, column = bad
            assert_outcome("data files", call, error=rf"The train file {path}, row {row}, column '{column}': ")


@pytest.mark.parametrize("name, message", [
    ("no-such-data-set", r"--dataset_name='no-such-data-set' could not be loaded \(.*\); pass a bundled data set \[.*"
                         r"'sst2'.*\], a local folder"),
    ("", r"--dataset_name='' names no data set"),
    (".", r"--dataset_name='.' names no data set"),
])
def test_a_data_set_that_does_not_load_is_named(name, message):
    assert_outcome("data files", text_classification.DataArguments(dataset_name=name).load_labelled, error=message)


def test_a_folder_of_broken_files_is_named(tmp_path):
    (tmp_path / "train.jsonl").write_bytes(b'{"sentence": "a", "label": 1}\n[1, 2]\n')
    assert_outcome("data files", text_classification.DataArguments(dataset_name=str(tmp_path)).load_labelled,
                   error=rf"--dataset_name='{tmp_path}' could not be loaded")


def test_a_bad_value_in_a_folder_names_its_split(tmp_path):
    write(tmp_path, "train.jsonl", GOOD_CLASSIFICATION)
    write(tmp_path, "validation.jsonl", jsonl({"sentence": "a", "label": 1}, {"sentence": None, "label": 0}))
    assert_outcome("data files", text_classification.DataArguments(dataset_name=str(tmp_path)).load_labelled,
                   error=rf"The 'validation' split of {tmp_path}, row 2, column 'sentence': null")
