"""What every benchmark entry shares: sizes, timing, peak memory, data and the result record."""

import dataclasses
import functools
import gzip
import json
import statistics
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TypeVar

import torch
from torch.profiler import ProfilerActivity, profile

T = TypeVar("T")


@dataclasses.dataclass
class Settings:
    """How the runner was asked to run: device, tiny smoke sizes or the defaults, and size overrides."""

    device: str = "cpu"
    smoke: bool = False
    out_dir: Path = Path("results")
    overrides: dict[str, str] = dataclasses.field(default_factory=dict)
    seed: int = 0


def resolve_sizes(default, smoke, settings: Settings):
    """The sizes dataclass for a run: ``smoke`` or ``default``, then ``--set name=value`` overrides.

    An override applies to every entry whose sizes have a field of that name; values are converted to the
    field's type (tuples of ints are written ``16,64,256``).
    """
    sizes = smoke if settings.smoke else default
    changes = {}
    for field in dataclasses.fields(sizes):
        if field.name in settings.overrides:
            changes[field.name] = _convert(settings.overrides[field.name], getattr(sizes, field.name))
    return dataclasses.replace(sizes, **changes)


def _convert(text: str, like):
    if isinstance(like, bool):
        return text.lower() in ("1", "true", "yes")
    if isinstance(like, tuple):
        return tuple(type(like[0])(part) for part in text.split(",") if part)
    return type(like)(text)


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


# Timing: every measurement reads ``clock``, and nearly all go through ``timed``, one call with the device
# synchronized on both sides. ``interleaved`` runs several calls by turns, round after round, so that the load of a
# shared machine (or a GPU's clock) falls on all of them alike, and keeps every round's time: every figure reported
# is the median and quartiles over the rounds (``spread``, ``rate``), and every ratio the median and quartiles of
# the per-round ratios (``paired_ratio``).


def clock(device: str) -> float:
    """Wall-clock seconds once the work queued on ``device`` is done."""
    synchronize(device)
    return time.perf_counter()


def timed(fn: Callable[[], T], device: str) -> tuple[T, float]:
    """``fn()``'s result and its wall-clock seconds, ``device`` synchronized before and after."""
    start = clock(device)
    result = fn()
    return result, clock(device) - start


@dataclasses.dataclass
class Rounds:
    """What ``interleaved`` measured: every round's seconds and the last round's result, by name."""

    seconds: dict[Hashable, list[float]]
    last: dict[Hashable, object]

    def median(self, name: Hashable) -> float:
        return statistics.median(self.seconds[name])

    def quartiles(self, name: Hashable) -> tuple[float, float, float]:
        """Lower quartile, median and upper quartile of ``name``'s rounds (IQR = upper - lower)."""
        return quartiles(self.seconds[name])


def interleaved(fns: dict[Hashable, Callable[..., object]], rounds: int, device: str, warmup: int = 1,
                prepare: dict[Hashable, Callable[[], object]] | None = None) -> Rounds:
    """Time every ``fns[name]()`` once per round, by turns, for ``rounds`` rounds after ``warmup`` untimed ones; the
    first timed round takes the names in order, the next in reverse, and so on (no call always follows the same).

    With ``prepare``, ``fns[name](prepare[name]())`` is called instead for every name ``prepare`` holds,
    ``prepare[name]()`` untimed: set-up each timed call needs afresh (a prefill whose cache the call extends).
    """
    names = list(fns)
    seconds: dict[Hashable, list[float]] = {name: [] for name in names}
    last: dict[Hashable, object] = {}
    for index in range(warmup + rounds):
        for name in names if (index - warmup) % 2 == 0 else names[::-1]:
            call = fns[name] if name not in (prepare or {}) else functools.partial(fns[name], prepare[name]())
            last[name], elapsed = timed(call, device)
            if index >= warmup:
                seconds[name].append(elapsed)
    return Rounds(seconds, last)


def first_pass_then_rounds(fns: dict[Hashable, Callable[[], object]], rounds: int,
                           device: str) -> tuple[dict[Hashable, float], Rounds]:
    """Every ``fns[name]()`` once in turn, its seconds kept apart (the warm-up; on a GPU, where CUDA graphs are
    captured, a figure of its own), then ``interleaved`` rounds of them without a further warm-up."""
    first = {name: timed(fn, device)[1] for name, fn in fns.items()}
    return first, interleaved(fns, rounds, device, warmup=0)


def first_pass_then_rounds_by_item(fns: dict[Hashable, Callable[[object], object]], items: list, rounds: int,
                                   device: str) -> tuple[dict[Hashable, float], Rounds]:
    """`first_pass_then_rounds` for functions of one item, a pass calling each on every one of ``items``, with the
    names taking turns on each item (in order on one, reversed on the next; a round starts the other way from the
    one before): the searches of a round then meet the same stretches of the machine's speed, which on a shared
    machine moves within the seconds a whole pass takes. Per name and round, the seconds summed over the items;
    ``last``: the last round's results, a list over the items."""
    names = list(fns)
    passes: list[dict[Hashable, float]] = []  # the seconds of each pass, the first (the warm-up) included
    for index in range(rounds + 1):
        spent, results = dict.fromkeys(names, 0.0), {name: [] for name in names}
        for position, item in enumerate(items):
            for name in names if (index + position) % 2 == 0 else names[::-1]:
                result, elapsed = timed(functools.partial(fns[name], item), device)
                spent[name] += elapsed
                results[name].append(result)
        passes.append(spent)
    return passes[0], Rounds({name: [spent[name] for spent in passes[1:]] for name in names}, results)


def spread(values: list[float], digits: int = 3) -> dict:
    """``{"median", "quartiles": [lower, upper]}`` of ``values``, rounded: how every figure over rounds is
    reported (the interquartile range is upper - lower)."""
    low, middle, high = quartiles(values)
    return {"median": round(middle, digits), "quartiles": [round(low, digits), round(high, digits)]}


def paired_ratio(rounds: Rounds, numerator: Hashable, denominator: Hashable, digits: int = 3) -> dict:
    """``{"ratio", "quartiles": [lower, upper]}`` of the per-round ratios ``numerator``'s seconds / ``denominator``'s
    (the two ran in the same round, back to back): with ``numerator`` the baseline, how many times faster
    ``denominator`` is. The median of the ratios, not the ratio of the medians, so that a round's load falls on
    both sides of its ratio alike."""
    return ratio_spread([theirs / ours for theirs, ours in zip(rounds.seconds[numerator], rounds.seconds[denominator],
                                                                 strict=True)], digits)


def ratio_spread(ratios: list[float], digits: int = 3) -> dict:
    """``{"ratio", "quartiles": [lower, upper]}``: the median and quartiles of per-round ratios, rounded."""
    figure = spread(ratios, digits)
    return {"ratio": figure["median"], "quartiles": figure["quartiles"]}


def rate(count: float, rounds: Rounds, name: Hashable, digits: int = 2) -> dict:
    """``count`` things per second in each of ``name``'s rounds, as ``spread`` (the median rate and quartiles)."""
    return spread([count / seconds for seconds in rounds.seconds[name]], digits)


def columns(name: str, figure: dict) -> dict:
    """A table row's two columns for a ``spread`` or ``paired_ratio`` figure: ``name`` (the median) and
    ``{name}_iqr`` (its quartiles)."""
    return {name: figure.get("median", figure.get("ratio")), f"{name}_iqr": figure["quartiles"]}


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """Lower quartile, median and upper quartile of ``values`` (all three the value itself when there is one),
    interpolated between the values as numpy.percentile does: never outside their range, even with a few rounds."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    low, middle, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, middle, high


def peak_memory_bytes(fn: Callable[[], object], device: str) -> int:
    """Peak bytes of live tensors allocated while ``fn()`` runs, above what was live before it.

    On CUDA this is ``torch.cuda.max_memory_allocated``. On CPU torch's allocator keeps no such counter
    (tracemalloc does not see it, and the process RSS depends on what malloc kept from earlier runs), so the
    profiler's memory events are replayed in order: every allocation and free, attributed to the op that made
    it. Temporaries freed inside one op are netted within that op, which hides only intra-kernel workspace.
    """
    if device.startswith("cuda"):
        synchronize(device)
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn()
        synchronize(device)
        return torch.cuda.max_memory_allocated() - before
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted(prof.events(), key=lambda event: event.time_range.start)
    live = peak = 0
    for event in events:
        live += event.self_cpu_memory_usage
        peak = max(peak, live)
    return peak


def count_ops(fn: Callable[[], object]) -> int:
    """Number of aten operators ``fn()`` calls from Python (not counting those they call in turn): the
    dispatches that each cost a fixed overhead, and on GPU one or more kernel launches."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(event.name.startswith("aten::") and (event.cpu_parent is None or not
               event.cpu_parent.name.startswith("aten::")) for event in prof.events())


def op_profile(fn: Callable[[], object], limit: int = 10) -> list[str]:
    """torch.profiler's operators with the most own time while ``fn()`` runs, as text lines."""
    with profile(activities=[ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])]) \
            as prof:
        fn()
    averages = prof.key_averages()
    total = sum(event.self_cpu_time_total for event in averages) or 1
    top = sorted(averages, key=lambda event: event.self_cpu_time_total, reverse=True)[:limit]
    return [f"{event.self_cpu_time_total / total:6.1%} {event.self_cpu_time_total / 1e3:9.1f} ms own CPU "
            f"{event.count:6d} calls {event.key}" for event in top]


def read_jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def word_vocab(sentences: list[str], size: int) -> dict[str, int]:
    """The ``size - 2`` most frequent words plus pad (0) and unk (1): enough to give real token ids."""
    counts: dict[str, int] = {}
    for sentence in sentences:
        for word in sentence.split():
            counts[word] = counts.get(word, 0) + 1
    words = sorted(counts, key=lambda word: (-counts[word], word))[: size - 2]
    return {word: index for index, word in enumerate(["<pad>", "<unk>", *words])}


def mb(num_bytes: float) -> float:
    return round(num_bytes / 2**20, 2)


def entry_result(title: str, sizes, rows: list[dict], summary: dict, targets: list[dict], notes: str = "") -> dict:
    """The record an entry returns: its sizes, a table (list of rows), the ratios that matter and its targets.

    A target is ``{"name", "value", "target", "met"}``; ``met`` is None when the value could not be measured.
    """
    return {
        "title": title,
        "sizes": dataclasses.asdict(sizes),
        "rows": rows,
        "summary": summary,
        "targets": targets,
        "notes": notes,
    }


def target(name: str, value: float | None, minimum: float | None = None, maximum: float | None = None) -> dict:
    """A target held to ``value >= minimum`` or ``value <= maximum``."""
    bound = f">= {minimum}" if minimum is not None else f"<= {maximum}"
    met = None
    if value is not None:
        met = value >= minimum if minimum is not None else value <= maximum
    return {"name": name, "value": None if value is None else round(value, 3), "target": bound, "met": met}
