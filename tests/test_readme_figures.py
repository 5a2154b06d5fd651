"""Every number in the README's results tables (every table row holding digits: the "Measured" table and the
Recipes tables) stands in a committed results file under ``results/``: a JSON value written as the README writes it
(same decimals; a fraction may be a percentage; minutes and epochs must come from values of such keys), or the same
figure in a ``.md`` file (see `ResultsIndex`). A column whose header names a GPU is looked up in ``results/gpu/``,
every other column in the CPU results (the rest of ``results/``). A table's header row and each row's first cell
(what the row measures) are not figures."""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# A number standing alone (not part of a word such as "test2016" or "L6"), optionally followed by the "x" of a
# ratio, then the word after it (its unit, where it has one); a range such as "8.7-13.2x" is two figures.
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)x?(?![\w]|\.\d)(?:\s+([A-Za-z]+))?")
GPU_HEADERS = re.compile(r"H100|H200|A100|GPU")


class Figure:
    """A number of a README table: its text, its unit (the word after it: "min", "epochs", ...), the row it stands
    in and its column's header."""

    def __init__(self, text: str, unit: str | None, row: str, column: str):
        self.text, self.unit, self.row, self.column = text, (unit or "").lower(), row, column

    @property
    def decimals(self) -> int:
        return len(self.text.partition(".")[2])

    def __repr__(self) -> str:
        unit = f" {self.unit}" if self.unit in ("min", "epoch", "epochs") else ""
        return f"{self.text + unit!r} in column {self.column!r} of row {self.row!r}"


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


SEPARATOR = re.compile(r"\|?(\s*:?-+:?\s*\|)+\s*(:?-+:?\s*)?")


def table_figures(markdown: str) -> Iterator[Figure]:
    """The numbers of every table row of ``markdown`` (not its header rows nor its rows' first cells)."""
    lines = markdown.splitlines()
    header: list[str] = []
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if not line.startswith("|"):
            header = []
        elif SEPARATOR.fullmatch(following):
            header = cells(line)  # the header row, above its separator
        elif header and not SEPARATOR.fullmatch(line):
            row = cells(line)
            for column, cell in zip(header[1:], row[1:]):
                for match in NUMBER.finditer(cell):
                    yield Figure(match.group(1), match.group(2), row[0], column)


def json_numbers(node, key: str = "") -> Iterator[tuple[str, float]]:
    """Every number in a JSON document, with the key it stands under (a list's items under the list's key)."""
    if isinstance(node, bool):
        return
    if isinstance(node, (int, float)):
        yield key, node
    elif isinstance(node, dict):
        for name, value in node.items():
            yield from json_numbers(value, name)
    elif isinstance(node, list):
        for value in node:
            yield from json_numbers(value, key)


class ResultsIndex:
    """What a set of results files lets the README quote. A figure in minutes: a JSON value under a key in
    seconds (``*_s``, ``*seconds*``) divided by 60, or under a key in minutes, or "<figure> min" in a ``.md`` file;
    in epochs: a JSON value under a key naming epochs, or "<figure> epoch(s)" in a ``.md`` file. Any other figure: a
    JSON value (a fraction also as a percentage), at the figure's number of decimals, or the same number in a
    ``.md`` file."""

    def __init__(self, files: list[Path]):
        self.pairs = [pair for path in files if path.suffix == ".json"
                      for pair in json_numbers(json.loads(path.read_text()))]
        self.md_text = "\n".join(path.read_text() for path in files if path.suffix == ".md")
        self.md_numbers = {match.group(1) for match in NUMBER.finditer(self.md_text)}
        self.plain = {decimals: {f"{value * scale:.{decimals}f}" for _, value in self.pairs
                                 for scale in ((1, 100) if 0 <= value <= 1 else (1,))}
                      for decimals in range(5)}

    def holds(self, figure: Figure) -> bool:
        if figure.unit in ("min", "minutes"):
            values = [value / 60 for key, value in self.pairs if key.endswith("_s") or "seconds" in key]
            values += [value for key, value in self.pairs if "minute" in key]
            in_md = re.search(rf"(?<![\w.]){re.escape(figure.text)} min", self.md_text)
        elif figure.unit in ("epoch", "epochs"):
            values = [value for key, value in self.pairs if "epoch" in key]
            in_md = re.search(rf"(?<![\w.]){re.escape(figure.text)} epoch", self.md_text)
        else:
            return figure.text in self.md_numbers or figure.text in self.plain.get(figure.decimals, ())
        return bool(in_md) or figure.text in {f"{value:.{figure.decimals}f}" for value in values}


def results_files(results: Path, gpu: bool) -> list[Path]:
    """The committed results files of the GPU (``results/gpu/``) or of the CPU (the rest of ``results/``)."""
    return sorted(path for path in results.rglob("*") if path.suffix in (".json", ".md")
                  and (path.parent.name == "gpu") == gpu)


def missing_figures(readme: str, results: Path) -> list[Figure]:
    """The figures of ``readme``'s tables that no results file under ``results`` holds."""
    indexes = {gpu: ResultsIndex(results_files(results, gpu)) for gpu in (False, True)}
    return [figure for figure in table_figures(readme)
            if not indexes[bool(GPU_HEADERS.search(figure.column))].holds(figure)]


def test_every_readme_table_figure_is_in_a_results_file():
    missing = missing_figures((REPO_ROOT / "README.md").read_text(), REPO_ROOT / "results")
    assert not missing, (
        f"{len(missing)} figures of README.md's tables stand in no committed results file (results/gpu/ for a GPU "
        "column, the rest of results/ otherwise); quote the results file's figure, or commit the results that "
        "hold it:\n" + "\n".join(f"  {figure}" for figure in missing))


README = """
Intro with 99 figures outside tables.

| | 2 CPU cores | H100 |
|---|---|---|
| BLEU, GRU / LSTM (beam 5) | 35.05 / 35.73 (22 min each) | 36.70 (10 epochs) |
| speed-up vs test2016 search | 8.7-13.2x | 1.5x |
| accuracy (%) | 83.03 | |

| recipe | score |
|---|---|
| F1 | 11.57 |
"""


@pytest.fixture
def results(tmp_path) -> Path:
    (tmp_path / "gpu").mkdir()
    (tmp_path / "bleu.json").write_text(json.dumps({"rows": [{"test_bleu": 35.0500814, "train_runtime_s": 1317.0},
                                                             {"test_bleu": 35.7267995, "accuracy": 0.83031}],
                                                    "num_beams": 10}))
    (tmp_path / "speed.md").write_text("| search | speed-up |\n|---|---|\n| batched | 8.7-13.2x |\n")
    (tmp_path / "gpu" / "bleu.json").write_text(json.dumps({"test_bleu": 36.7012, "epochs": 8, "ratio": 1.5}))
    (tmp_path / "ner.md").write_text("entity F1 11.57 on the test split")
    return tmp_path


def test_figures_are_read_from_table_cells_but_first_and_header(results):
    texts = [(figure.text, figure.column) for figure in table_figures(README)]
    assert texts == [("35.05", "2 CPU cores"), ("35.73", "2 CPU cores"), ("22", "2 CPU cores"), ("36.70", "H100"),
                     ("10", "H100"), ("8.7", "2 CPU cores"), ("13.2", "2 CPU cores"), ("1.5", "H100"),
                     ("83.03", "2 CPU cores"), ("11.57", "score")]


def test_missing_figures_names_those_no_results_file_holds(results):
    # 35.05 (rounded JSON), 22 min (seconds as minutes), 83.03 (fraction as %), 8.7 and 13.2 (.md), 11.57 (.md)
    # and the GPU's 36.70 and 1.5 are held; the GPU column's "10 epochs" is not (its file says 8; a 10 of another
    # key, or of the CPU results, does not count), nor is a CPU figure found only among the GPU results.
    missing = missing_figures(README, results)
    assert [(figure.text, figure.unit, figure.row) for figure in missing] == [
        ("10", "epochs", "BLEU, GRU / LSTM (beam 5)")]
    assert "'10 epochs' in column 'H100' of row 'BLEU, GRU / LSTM (beam 5)'" == repr(missing[0])
    (results / "gpu" / "bleu.json").write_text(json.dumps({"test_bleu": 36.7012, "ratio": 1.5, "epochs": 10,
                                                           "accuracy": 0.8303}))
    (results / "bleu.json").write_text(json.dumps({"test_bleu": 35.0500814, "train_runtime_s": 1317.0 * 60}))
    assert [(figure.text, figure.column) for figure in missing_figures(README, results)] == [
        ("35.73", "2 CPU cores"), ("22", "2 CPU cores"), ("83.03", "2 CPU cores")]
