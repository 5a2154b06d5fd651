"""Every number in the README's results tables (every table row holding digits: the "Measured" table and the
Recipes tables) stands in a committed results file under ``results/``: a JSON value written as the README writes it
(same decimals; a fraction may be a percentage; minutes and epochs must come from values of such keys), or the same
figure in a ``.md`` file (see `ResultsIndex`). A column whose header names a GPU is looked up in ``results/gpu/``,
every other column in the CPU results (the rest of ``results/``). A table's header row and each row's first cell
(what the row measures) are not figures. The two ends of a range ("8.7-13.2x") are one measure: where both are JSON
values, they must stand under keys ending in the same word (``speedup_vs_matched``, ``sorted_speedup_vs_matched``),
not one a throughput ratio and the other a memory growth that happens to have the number."""

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# A number standing alone (not part of a word such as "test2016" or "L6"), optionally followed by the "x" of a
# ratio, then the word after it (its unit, where it has one).
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)x?(?![\w]|\.\d)(?:\s+([A-Za-z]+))?")
RANGE_DASH = re.compile(r"x?-\d")  # what follows the first end of a range
GPU_HEADERS = re.compile(r"H100|H200|A100|GPU")
SEPARATOR = re.compile(r"\|?(\s*:?-+:?\s*\|)+\s*(:?-+:?\s*)?")


class Figure:
    """A number of a README table: its text, its unit (the word after it: "min", "epochs", ...), the row it stands
    in, its column's header and cell, and the other end of the range it is one end of."""

    def __init__(self, text: str, unit: str | None, row: str, column: str, cell: str):
        self.text, self.unit, self.row, self.column, self.cell = text, (unit or "").lower(), row, column, cell
        self.other_end: Figure | None = None

    @property
    def decimals(self) -> int:
        return len(self.text.partition(".")[2])

    def __repr__(self) -> str:
        unit = f" {self.unit}" if self.unit in ("min", "minutes", "epoch", "epochs") else ""
        return f"{self.text + unit!r} in column {self.column!r} of row {self.row!r}"


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


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
                first_end = None
                for match in NUMBER.finditer(cell):
                    figure = Figure(match.group(1), match.group(2), row[0], column, cell)
                    if first_end is not None:
                        figure.other_end, first_end.other_end = first_end, figure
                    first_end = figure if RANGE_DASH.match(cell, match.end(1)) else None
                    yield figure


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


def written(value: float, decimals: int) -> set[str]:
    """``value`` with ``decimals`` decimals, rounded half to even (Python's format) and half up (by hand)."""
    text, exact = f"{value:.{decimals}f}", repr(float(value))
    if "e" in exact or not re.fullmatch(rf"-?\d+\.\d{{{decimals}}}5", exact):
        return {text}  # no tie to break at that many decimals: both roundings agree
    return {text, str(Decimal(exact).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))}


class ResultsIndex:
    """What a set of results files lets the README quote. A figure in minutes: a JSON value under a key in
    seconds (``*_s``, ``*seconds*``) divided by 60, or under a key in minutes, or "<figure> min" in a ``.md`` file;
    in epochs: a JSON value under a key naming epochs, or "<figure> epoch(s)" in a ``.md`` file. Any other figure: a
    JSON value (a fraction also as a percentage; a quartile only in a cell that says IQR), at the figure's number of
    decimals, or the same number in a ``.md`` file."""

    def __init__(self, files: list[Path]):
        self.pairs = [pair for path in files if path.suffix == ".json"
                      for pair in json_numbers(json.loads(path.read_text()))]
        self.md_text = "\n".join(path.read_text() for path in files if path.suffix == ".md")
        self.md_numbers = {match.group(1) for match in NUMBER.finditer(self.md_text)}
        self.plain: dict[int, dict[str, set[str]]] = {}  # decimals -> the text of a value -> its keys

    def keys(self, figure: Figure) -> set[str]:
        """The JSON keys a figure without a unit stands under (quartiles only where its cell says IQR)."""
        if figure.decimals not in self.plain:
            texts = self.plain[figure.decimals] = defaultdict(set)
            for key, value in self.pairs:
                for scaled in (value, 100 * value) if 0 <= value <= 1 else (value,):
                    for text in written(scaled, figure.decimals):
                        texts[text].add(key)
        keys = self.plain[figure.decimals].get(figure.text, set())
        return keys if "IQR" in figure.cell else keys - {"quartiles"}

    def holds(self, figure: Figure) -> bool:
        if figure.unit in ("min", "minutes"):
            values = [value / 60 for key, value in self.pairs if key.endswith("_s") or "seconds" in key]
            values += [value for key, value in self.pairs if "minute" in key]
            in_md = re.search(rf"(?<![\w.]){re.escape(figure.text)} min", self.md_text)
        elif figure.unit in ("epoch", "epochs"):
            values = [value for key, value in self.pairs if "epoch" in key]
            in_md = re.search(rf"(?<![\w.]){re.escape(figure.text)} epoch", self.md_text)
        else:
            return figure.text in self.md_numbers or bool(self.keys(figure))
        return bool(in_md) or any(figure.text in written(value, figure.decimals) for value in values)


def results_files(results: Path, gpu: bool) -> list[Path]:
    """The committed results files of the GPU (``results/gpu/``) or of the CPU (the rest of ``results/``)."""
    return sorted(path for path in results.rglob("*") if path.suffix in (".json", ".md")
                  and (path.parent.name == "gpu") == gpu)


def one_measure(figure: Figure, index: ResultsIndex) -> bool:
    """Whether a range's two ends can be one measure: unless both are JSON values, yes; else some key of one ends
    in the same word as some key of the other."""
    last_words = [{key.rsplit("_", 1)[-1] for key in index.keys(end)} for end in (figure, figure.other_end)]
    return not all(last_words) or bool(last_words[0] & last_words[1])


def missing_figures(readme: str, results: Path) -> list[tuple[Figure, str]]:
    """The figures of ``readme``'s tables that no results file under ``results`` holds, and the ends of ranges
    whose two ends are values of different measures, each with the reason."""
    indexes = {gpu: ResultsIndex(results_files(results, gpu)) for gpu in (False, True)}
    missing = []
    for figure in list(table_figures(readme)):  # whole, so that each range's first end knows its other end
        index = indexes[bool(GPU_HEADERS.search(figure.column))]
        if not index.holds(figure):
            missing.append((figure, "in no results file"))
        elif figure.other_end is not None and not one_measure(figure, index):
            missing.append((figure, f"a range {figure.text}/{figure.other_end.text} whose ends are values of "
                                    "different measures"))
    return missing


def test_every_readme_table_figure_is_in_a_results_file():
    missing = missing_figures((REPO_ROOT / "README.md").read_text(), REPO_ROOT / "results")
    assert not missing, (
        f"{len(missing)} figures of README.md's tables have no committed results file behind them (results/gpu/ "
        "for a GPU column, the rest of results/ otherwise); quote the results file's figure, or commit the results "
        "that hold it:\n" + "\n".join(f"  {figure}: {reason}" for figure, reason in missing))


README = """
Intro with 99 figures outside tables.

| | 2 CPU cores | H100 |
|---|---|---|
| BLEU, GRU / LSTM (beam 5) | 35.05 / 35.73 (22 min each) | 36.70 (10 epochs) |
| speed-up vs test2016 search | 8.7-13.2x | 1.5x; static 0.60-0.63 |
| accuracy (%) | 83.03 | |
| training vs the tutorial loop | | 3.74-5.06x |
| Marian: greedy / beam | | 1.14-1.22; 1.14 (IQR 1.00-1.22) |

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
    (tmp_path / "gpu" / "speed.json").write_text(json.dumps({
        "beam 5, static": [0.6, 0.625],  # 0.625 is written 0.63 (half up) as well as 0.62 (half to even)
        "masked_vs_tutorial_throughput": 5.061, "memory_growth": 3.74,  # 3.74 is not the training ratio
        "beam": {"ratio": 1.14, "quartiles": [1.0, 1.22]}}))
    (tmp_path / "ner.md").write_text("entity F1 11.57 on the test split")
    return tmp_path


def test_figures_are_read_from_table_cells_but_first_and_header(results):
    figures = list(table_figures(README))
    assert [(figure.text, figure.column) for figure in figures[:10]] == [
        ("35.05", "2 CPU cores"), ("35.73", "2 CPU cores"), ("22", "2 CPU cores"), ("36.70", "H100"), ("10", "H100"),
        ("8.7", "2 CPU cores"), ("13.2", "2 CPU cores"), ("1.5", "H100"), ("0.60", "H100"), ("0.63", "H100")]
    assert [figure.text for figure in figures[10:]] == ["83.03", "3.74", "5.06", "1.14", "1.22", "1.14", "1.00",
                                                        "1.22", "11.57"]
    ranges = {(figure.text, figure.other_end.text) for figure in figures if figure.other_end is not None}
    assert ranges == {("8.7", "13.2"), ("13.2", "8.7"), ("0.60", "0.63"), ("0.63", "0.60"), ("3.74", "5.06"),
                      ("5.06", "3.74"), ("1.14", "1.22"), ("1.22", "1.14"), ("1.00", "1.22"), ("1.22", "1.00")}


def test_missing_figures_names_those_no_results_file_holds(results):
    # Held: 35.05 (rounded JSON), 22 min (seconds as minutes), 83.03 (fraction as %), 8.7-13.2 and 11.57 (.md), the
    # GPU's 36.70, 1.5, 0.60-0.63 (half up) and the IQR 1.00-1.22 (quartiles, in a cell that says IQR). Missing: the
    # GPU column's "10 epochs" (its file says 8; a 10 of another key, or of the CPU results, does not count), the
    # range 3.74-5.06 (two measures), and 1.22 outside an IQR (only a quartile has it), with its range's other end.
    missing = [figure for figure, _ in missing_figures(README, results)]
    assert [(figure.text, figure.unit, figure.row) for figure in missing] == [
        ("10", "epochs", "BLEU, GRU / LSTM (beam 5)"), ("3.74", "", "training vs the tutorial loop"),
        ("5.06", "", "training vs the tutorial loop"), ("1.14", "", "Marian: greedy / beam"),
        ("1.22", "", "Marian: greedy / beam")]
    assert "'10 epochs' in column 'H100' of row 'BLEU, GRU / LSTM (beam 5)'" == repr(missing[0])
    reasons = dict((figure.text, reason) for figure, reason in missing_figures(README, results))
    assert reasons["10"] == "in no results file"
    assert reasons["3.74"] == "a range 3.74/5.06 whose ends are values of different measures"
    # A CPU figure found only among the GPU results, or seconds that are not the minutes, do not count either.
    (results / "gpu" / "bleu.json").write_text(json.dumps({"test_bleu": 36.7012, "ratio": 1.5, "epochs": 10,
                                                           "accuracy": 0.8303}))
    (results / "bleu.json").write_text(json.dumps({"test_bleu": 35.0500814, "train_runtime_s": 1317.0 * 60}))
    assert [(figure.text, figure.column) for figure, _ in missing_figures(README, results)][:3] == [
        ("35.73", "2 CPU cores"), ("22", "2 CPU cores"), ("83.03", "2 CPU cores")]
