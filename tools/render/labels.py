"""The labels of the rendered tables, read from the results entries the tables render: the split a figure is on and
the split its model was chosen on, the seeds, the device (with its threads) and how many runs shared the machine.

An entry is a results file, a part of it (a benchmark's entry) or the items of a list in it (the rows of a seed
each), named by `Entries`; what it records is read from its ``provenance`` (docs/provenance.md), else from its own
keys (a suite's ``seeds`` and ``jobs``, a row's ``seed`` and ``device``). A label an entry does not record says so
("seeds not recorded"); a label the entries contradict (a test score in an entry whose splits lack the test
split, a suite whose ``seeds`` differ from its provenance's) is a ValueError naming the file and what it records,
which ``python -m tools.render --check`` reports by name.
"""

from dataclasses import dataclass

from hf_seqmodels.cards.results import SPLIT_OF_PREFIX
from hf_seqmodels.provenance import BACKFILLED

from .figures import Key, cell_text, load, lookup


BACKFILLED_LABEL = "backfilled: older code, no commit recorded"


@dataclass(frozen=True)
class Entries:
    """The results entries at ``path`` in ``file``: the object there, or the items of the list there whose fields
    match ``select``."""

    file: str
    path: tuple[Key, ...] = ()
    select: dict | None = None

    def items(self) -> list[dict]:
        node = lookup(load(self.file), self.path, self.file)
        if self.select is None:  # the object itself; an empty select takes every item of the list
            return [node]
        items = [item for item in node if all(item.get(k) == v for k, v in self.select.items())]
        if not items:
            raise ValueError(f"{self.file}: no item of {list(self.path)} matches {self.select}")
        return items

    def figure_path(self, *keys: Key) -> tuple[Key, ...]:
        """The key path of ``keys`` in the one entry these name."""
        return self.path + ((self.select,) if self.select else ()) + keys

    def where(self) -> str:
        return self.file + (f" {self.select}" if self.select else "")


def recorded(entry: dict, key: str):
    """What ``entry`` records as ``key``: its provenance's value, else its own key; None where it records none."""
    value = (entry.get("provenance") or {}).get(key)
    return entry.get(key) if value is None else value


def seeds_of(entry: dict) -> list | None:
    """The seeds an entry records: its provenance's, and its own ``seeds`` (a suite) or ``seed`` (a row); both
    recorded and different is a ValueError."""
    own = entry.get("seeds") if entry.get("seeds") is not None else (
        None if entry.get("seed") is None else [entry["seed"]])
    theirs = (entry.get("provenance") or {}).get("seeds")
    if own is not None and theirs is not None and list(own) != list(theirs):
        raise ValueError(f"its provenance records the seeds {theirs} but the entry itself {own}")
    return own if theirs is None else theirs


def devices_of(entry: dict) -> list[str]:
    """The devices an entry's figures were measured on (each with its threads, as provenance writes it): those of
    its runs (a suite records its device per run; its own provenance is the process that started the runs, with
    that process's threads), else its own."""
    runs = list(dict.fromkeys(device for run in entry.get("runs", []) if (device := recorded(run, "device"))))
    device = recorded(entry, "device")
    return runs or ([] if device is None else [device])


@dataclass(frozen=True)
class Seeds:
    """The seeds of ``entries``, in order: "42, 43, 44"."""

    entries: Entries

    def text(self) -> str:
        seeds = []
        for entry in self.entries.items():
            found = checked(self.entries, seeds_of, entry)
            if found is None:
                return "seeds not recorded"
            seeds += [seed for seed in found if seed not in seeds]
        return ", ".join(map(str, seeds))


@dataclass(frozen=True)
class Split:
    """The split the figure ``key`` of ``entries`` was scored on (its prefix: ``test_``, ``eval_`` or
    ``validation_``), as the entries record it; with ``chosen_on``, the other split they record, the one the model
    was chosen on."""

    entries: Entries
    key: str
    chosen_on: bool = False

    def text(self) -> str:
        prefix = self.key.split("_")[0]
        scored = SPLIT_OF_PREFIX.get(prefix, prefix)
        recorded_splits = [recorded(entry, "split") for entry in self.entries.items()]
        if any(splits is None for splits in recorded_splits):
            return "split not recorded"
        for splits in recorded_splits:
            if scored not in splits:
                raise ValueError(f"{self.entries.where()}: its figure {self.key} is a {scored} score, but the entry "
                                 f"records the splits {splits}")
        if not self.chosen_on:
            return scored
        others = {split for splits in recorded_splits for split in splits if split not in (scored, "train")}
        return " / ".join(sorted(others)) or "no split to choose on recorded"


@dataclass(frozen=True)
class Device:
    """The device (and threads) ``entries`` were measured on, and how many runs shared it where they record it
    (``jobs``): "cpu: AMD EPYC (1 threads), 2 runs at once"."""

    entries: Entries

    def text(self) -> str:
        devices, jobs = [], set()
        for entry in self.entries.items():
            found = checked(self.entries, devices_of, entry) or ["device not recorded"]
            devices += [device for device in found if device not in devices]
            jobs.add(entry.get("jobs"))
        at_once = f", {jobs.pop()} runs at once" if len(jobs) == 1 and None not in jobs else ""
        return " / ".join(devices) + at_once


def codes_of(entry: dict) -> list[str]:
    """The code an entry's figures came from: the commit its provenance records (7 characters; a commit of a changed
    tree marked so), else that of each of its runs (a suite records one per run); "backfilled" where one records
    only what git history showed."""
    provenance = entry.get("provenance") or {}
    if provenance.get("commit"):
        return [f"`{provenance['commit'][:7]}`" + ("" if provenance.get("tree_clean", True) else " (changed tree)")]
    runs = [code for run in entry.get("runs", []) for code in codes_of(run)]
    if runs:
        return list(dict.fromkeys(runs))
    return [BACKFILLED_LABEL if provenance.get("recorded") == BACKFILLED else "code not recorded"]


@dataclass(frozen=True)
class Code:
    """The code ``entries`` were measured on, each with how many of the entries it made where they differ:
    "`f671e8a` (1 of 6) / backfilled (5 of 6)"; "backfilled" names entries written before provenance was recorded
    (older code, no commit)."""

    entries: Entries

    def text(self) -> str:
        codes = [tuple(checked(self.entries, codes_of, entry)) for entry in self.entries.items()]
        counts = {code: codes.count(code) for code in codes}
        if len(counts) == 1:
            return " / ".join(codes[0])
        return " / ".join(f"{' / '.join(code)} ({count} of {len(codes)})" for code, count in counts.items())


def checked(entries: Entries, read, entry: dict, *args):
    """``read(entry, *args)``, a ValueError it raises naming ``entries``."""
    try:
        return read(entry, *args)
    except ValueError as error:
        raise ValueError(f"{entries.where()}: {error}") from None


@dataclass(frozen=True)
class Same:
    """The one text ``cells`` all give (a label shared by several rows, such as a column's device); several is a
    ValueError naming each."""

    cells: tuple
    what: str

    def text(self) -> str:
        texts = [(cell, cell_text(cell)) for cell in self.cells]
        if len({text for _, text in texts}) != 1:
            found = "; ".join(f"{cell.entries.where() if hasattr(cell, 'entries') else cell}: {text}"
                              for cell, text in texts)
            raise ValueError(f"the rows' entries record different {self.what} ({found}); label each row with its own")
        return texts[0][1]
