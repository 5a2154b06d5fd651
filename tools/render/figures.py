"""The tables of figures in README.md and docs/*.md, rendered from the results files by named keys: the one
renderer of the repository's documents (`tools.render.tables` declares them; the peers' report,
``benchmarks/peers/report.py``, builds its tables and its block of docs/peers.md with it too).

A table is a `Table` whose cells say which file and which key path each figure comes from (`Figure`, `MeanSd`,
`Ratio`, `OverRows`, `Words`; a key path may select a list item by its fields, ``{"seed": 42}``; the labels of
`tools.render.labels`), or are text already computed. A Markdown file holds each block between two markers,
``<!-- figures:NAME -->`` and ``<!-- /figures -->`` (`markers`): a `Table`, or a `Text` of several paragraphs and
tables; `render_files` rewrites what stands between them, `stale_blocks` says which blocks differ from what the
results files give (the test that keeps the committed text current), `stale_prose` which figures the prose outside
the blocks quotes (`tools.render.prose` says what counts as one).

A GPU cell (`OnGpu`) holds a figure only where a results file of ``results/gpu/`` holds the same run (the same key
path), of the same model as the CPU figure (its identity: the timed model's test score or the benchmark's sizes)
and naming its own code commit; it then names that commit and its device. Otherwise it says "not measured since
<commit>", the commit of the code the CPU figure was measured with.
"""

import json
import re
import statistics
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Callable, Union

from hf_seqmodels.cards.results import run_commit

from .prose import measured_figures, prose_documents, prose_of

REPO_ROOT = Path(__file__).resolve().parents[2]  # the checkout: this tooling is not installed

Key = Union[str, int, dict]  # a dict selects the one item of a list whose fields have these values


@cache
def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def load(file: str) -> dict:
    """The results file ``file`` (relative to the repository root), parsed once per process."""
    return _read(REPO_ROOT / file)


def lookup(node, path: tuple[Key, ...], where: str):
    """The value at ``path`` in ``node``; a ValueError naming ``where`` and the missing key otherwise."""
    for depth, key in enumerate(path):
        if isinstance(key, dict):
            matches = [item for item in node if all(item.get(k) == v for k, v in key.items())]
            if len(matches) != 1:
                raise ValueError(f"{where}: {len(matches)} items match {key} at {list(path[:depth])} (need one)")
            node = matches[0]
        else:
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"{where}: no key {key!r} at {list(path[:depth])}") from None
    return node


def decimals(value: float, places: int, percent: bool = False) -> str:
    return f"{100 * value if percent else value:.{places}f}"


def cell_text(cell) -> str:
    """A cell's text: the text itself, or what a cell reading a results file gives."""
    return cell if isinstance(cell, str) else cell.text()


@dataclass(frozen=True)
class Figure:
    """One number: ``file``'s value at ``path``, with ``places`` decimals (a fraction in percent with
    ``percent``; an integer as it is; a list of integers, such as seeds, joined), followed by ``unit``; a number
    stored in another unit is divided by ``per`` first (seconds shown in minutes: 60)."""

    file: str
    path: tuple[Key, ...]
    places: int = 2
    percent: bool = False
    unit: str = ""
    per: float = 1

    def text(self) -> str:
        value = lookup(load(self.file), self.path, self.file)
        if isinstance(value, list):
            return ", ".join(str(item) for item in value) + self.unit
        if self.per != 1:
            value /= self.per
        return (str(value) if isinstance(value, int) and not self.percent
                else decimals(value, self.places, self.percent)) + self.unit


@dataclass(frozen=True)
class MeanSd:
    """A mean ± sample sd over seeds as ``compare.py`` writes it (``{"mean", "sd", "n"}`` at ``path``)."""

    file: str
    path: tuple[Key, ...]
    percent: bool = False

    def text(self) -> str:
        node = lookup(load(self.file), self.path, self.file)
        spread = "" if node["sd"] is None else f" ± {decimals(node['sd'], 2, self.percent)}"
        return decimals(node["mean"], 2, self.percent) + spread


@dataclass(frozen=True)
class OverRows:
    """The mean ± sample sd of ``key`` over the items of the list at ``rows`` whose fields match ``select``
    (a results file with one item per seed), with their count."""

    file: str
    rows: tuple[Key, ...]
    select: dict
    key: str | tuple[Key, ...]  # a key of each item, or a key path into it

    def text(self) -> str:
        items = [item for item in lookup(load(self.file), self.rows, self.file)
                 if all(item.get(k) == v for k, v in self.select.items())]
        if not items:
            raise ValueError(f"{self.file}: no item of {list(self.rows)} matches {self.select}")
        path = self.key if isinstance(self.key, tuple) else (self.key,)
        values = [lookup(item, path, f"{self.file}: {self.select}") for item in items]
        spread = f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else ""
        return f"{statistics.fmean(values):.2f}{spread} (n={len(values)})"


@dataclass(frozen=True)
class Ratio:
    """A median (of per-round ratios) with its quartiles: ``{"ratio" or "median", "quartiles"}`` at ``path``, or
    the value at ``path`` and its quartiles at ``iqr``."""

    file: str
    path: tuple[Key, ...]
    iqr: tuple[Key, ...] | None = None

    def text(self) -> str:
        data = load(self.file)
        node = lookup(data, self.path, self.file)
        value, quartiles = ((node, lookup(data, self.iqr, self.file)) if self.iqr
                            else (node.get("ratio", node.get("median")), node["quartiles"]))
        return f"{value}x (IQR {quartiles[0]}-{quartiles[1]})"


@dataclass(frozen=True)
class Words:
    """A results file's words at ``path`` (a setting, a signature, a yes/no), as they stand; in backticks with
    ``code``."""

    file: str
    path: tuple[Key, ...]
    code: bool = False

    def text(self) -> str:
        value = lookup(load(self.file), self.path, self.file)
        words = {True: "yes", False: "no"}.get(value, value) if isinstance(value, bool) else str(value)
        return f"`{words}`" if self.code else words


@dataclass(frozen=True)
class Join:
    """Several cells (or texts) in one, ``sep`` between them."""

    parts: tuple
    sep: str = " / "

    def text(self) -> str:
        return self.sep.join(cell_text(part) for part in self.parts)


def with_file(cell, file: str):
    """``cell`` reading ``file`` instead of its own (a `Join` in each of its parts)."""
    if isinstance(cell, Join):
        return replace(cell, parts=tuple(with_file(part, file) for part in cell.parts))
    return replace(cell, file=file)


@dataclass(frozen=True)
class OnGpu:
    """The GPU counterpart of ``figure`` (a cell reading a CPU results file): the same cell read from ``gpu_file``,
    where that file holds the run at ``run`` (a key path) of the same model (the value at ``model`` in the run) and
    the run names its commit; else "not measured since <the CPU run's commit>"."""

    figure: object
    gpu_file: str
    run: tuple[Key, ...]
    model: tuple[Key, ...]

    def text(self) -> str:
        cpu_run = lookup(load(self.figure_file()), self.run, self.figure_file())
        cpu_commit = run_commit(cpu_run)
        since = f"not measured since `{cpu_commit}`" if cpu_commit else "not measured (the CPU run names no commit)"
        if not (REPO_ROOT / self.gpu_file).is_file():
            return since
        try:
            gpu_run = lookup(load(self.gpu_file), self.run, self.gpu_file)
            same_model = lookup(gpu_run, self.model, self.gpu_file) == lookup(cpu_run, self.model, "")
        except ValueError:
            return since
        commit = run_commit(gpu_run)
        if not same_model or not commit:
            return since
        device = (gpu_run.get("provenance") or {}).get("device") or (gpu_run.get("machine") or {}).get("gpu")
        return f"{with_file(self.figure, self.gpu_file).text()} ({device or 'GPU not recorded'}, code `{commit}`)"

    def figure_file(self) -> str:
        parts = self.figure.parts if isinstance(self.figure, Join) else (self.figure,)
        return parts[0].file


@dataclass(frozen=True)
class Table:
    """A Markdown table: its ``header`` cells and its rows of cells (or functions giving them, for a table with a
    row per item of a results file, or a header read from the rows' entries). A cell is text, or a cell above that
    reads a results file; a ``|`` in it is escaped. An empty header cell is one space (an untitled column)."""

    header: tuple | Callable[[], tuple]
    rows: tuple | Callable[[], list]

    def render(self) -> str:
        rows = self.rows() if callable(self.rows) else self.rows
        header = self.header() if callable(self.header) else self.header
        lines = ["|" + "|".join(f" {cell_text(cell)} " if cell else " " for cell in header) + "|",
                 "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell_text(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
        return "\n".join(lines)


@dataclass(frozen=True)
class Text:
    """A block that is more than one table (paragraphs and tables, built with `Table`): the function giving its
    Markdown."""

    markdown: Callable[[], str]

    def render(self) -> str:
        return self.markdown()


Block = Union[Table, Text]
BLOCK = re.compile(r"(<!-- figures:([\w-]+) -->\n)(.*?)(<!-- /figures -->)", re.S)


def markers(name: str) -> tuple[str, str]:
    """The lines that open and close the block ``name`` in a Markdown file."""
    return f"<!-- figures:{name} -->", "<!-- /figures -->"


def render_text(text: str, tables: dict[str, Block], where: str) -> str:
    """``text`` with every figures block rendered from ``tables`` (by the block's name)."""
    names = [match.group(2) for match in BLOCK.finditer(text)]
    if unknown := sorted(set(names) - set(tables)):
        raise ValueError(f"{where}: figures blocks {unknown} have no table in tools.render.tables")
    if missing := sorted(set(tables) - set(names)):
        raise ValueError(f"{where}: no figures block for the tables {missing}; add <!-- figures:NAME --> ... "
                         "<!-- /figures --> where each belongs")
    return BLOCK.sub(lambda m: m.group(1) + tables[m.group(2)].render() + "\n" + m.group(4), text)


def stale_blocks(text: str, tables: dict[str, Block], where: str) -> list[str]:
    """The names of ``text``'s figures blocks whose committed content differs from their rendering."""
    rendered = {m.group(2): m.group(3) for m in BLOCK.finditer(render_text(text, tables, where))}
    return [m.group(2) for m in BLOCK.finditer(text) if m.group(3) != rendered[m.group(2)]]


def stale_documents(documents: dict[str, dict[str, Block]]) -> list[str]:
    """Each stale block of ``documents`` (path -> its tables), and each document whose blocks its results entries
    cannot render or label (the error: a label an entry contradicts, a key it lacks), by document."""
    stale = []
    for name, tables in documents.items():
        try:
            stale += [f"{name}: {block}" for block in stale_blocks((REPO_ROOT / name).read_text(), tables, name)]
        except ValueError as error:
            stale.append(f"{name}: {error}")
    return stale


def figures_outside_blocks(text: str) -> list[str]:
    """The measured figures (`tools.render.prose`: every number no rule of ``NOT_MEASURED`` covers) in ``text``
    outside its figures blocks and code: prose must quote no figure that the tables do not render."""
    return measured_figures(prose_of(BLOCK.sub("", text)))


def stale_prose(root: Path) -> list[str]:
    """Each measured figure in the prose of README.md and of every document under docs/ in ``root``, by document."""
    return [f"{name}: the prose quotes the figure {figure!r} (render it in a block from its results entry, or drop it)"
            for name in prose_documents(root) for figure in figures_outside_blocks((root / name).read_text())]


def render_files(documents: dict[str, dict[str, Block]]) -> list[str]:
    """Render the figures blocks of every file of ``documents`` (path -> its tables) in place; returns the files
    that changed."""
    changed = []
    for name, tables in documents.items():
        path = REPO_ROOT / name
        text = path.read_text()
        new = render_text(text, tables, name)
        if new != text:
            path.write_text(new)
            changed.append(name)
    return changed
