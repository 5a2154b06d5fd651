"""The numbers a card states, looked up by what they are rather than by how a table labels them.

A *run* is the ``results.json`` a training script writes next to its model (scores, training facts and
``arguments``); ``results/<suite>.json`` from ``scripts/compare.py`` holds one run per model and seed under
``"runs"``. A run's scores are those its task declares (`run_scores`). What ``python -m benchmarks.run`` measured
(``results/benchmarks.json``) is looked up by model family and measure (`benchmark_figure`), through the table
`MEASURES` of the figures a card quotes.
"""

import json
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import NamedTuple

from ..data.paths import REPO_ROOT
from ..models.configuration_transformer import TransformerConfig
from ..provenance import RECORDED
from .catalog import TASKS, Metric

DEFAULT_BENCHMARKS = REPO_ROOT / "results" / "benchmarks.json"
SUITE_ROW = "suite_row"  # the key of a suite run's row (`load_run`)
SPLIT_OF_PREFIX = {"eval": "validation", "test": "test"}  # a score key's prefix -> the split it was scored on
BENCHMARKS_FILE = "--benchmarks: the benchmarks.json that `python -m benchmarks.run` wrote, or '' for none"


def format_metric(value: float, percent: bool) -> str:
    """How every table shows a score: fractions as percent with two decimals, others with two decimals."""
    return f"{100 * value:.2f}" if percent else f"{value:.2f}"


def find_results_file(model_dir: str | Path, results: str | Path | None = None) -> Path:
    """The results file a model's card is rendered from: ``results``, else the ``results.json`` the training
    script wrote in ``model_dir``."""
    if results:
        if not Path(results).is_file():
            raise ValueError(f"--results {results}: no such file.")
        return Path(results)
    path = Path(model_dir) / "results.json"
    if not path.is_file():
        raise ValueError(f"{path} is missing: the model card is rendered from the results.json that the training "
                         "script writes beside the model. Pass the run's results with --results: its results.json, "
                         "or results/<suite>.json with --model <run name> for a model that compare.py trained.")
    return path


def load_run(results_file: str | Path, model: str | None = None, seed: int | None = None) -> dict:
    """One run from ``results_file``: a script's ``results.json``, or ``results/<suite>.json`` with ``model``
    naming the run (its ``name``) and ``seed`` the seed of that model's run (default: its first). A run of a suite
    carries the model's row of the suite (mean ± sd over its seeds) under `SUITE_ROW`."""
    data = read_json(results_file, "--results: the results.json a training script wrote beside its model, or "
                                   "results/<suite>.json with --model")
    if "runs" not in data:
        return data
    names = list(dict.fromkeys(run["name"] for run in data["runs"]))
    if model not in names:
        raise ValueError(f"{results_file} has runs {names}; pick one with --model (got {model!r}).")
    runs = [run for run in data["runs"] if run["name"] == model]
    if seed is None:
        run = runs[0]
    elif seed not in (seeds := [run.get("seed") for run in runs]):
        raise ValueError(f"{results_file} has runs of {model!r} with seeds {seeds}, not {seed}.")
    else:
        run = runs[seeds.index(seed)]
    row = next((row for row in data.get("rows", []) if row["name"] == model), None)
    return run if row is None else {**run, SUITE_ROW: {"suite": data.get("suite"), **row}}


def run_scores(run: dict, split: str = "eval") -> list[tuple[Metric, float]]:
    """The scores of the run's task that the run holds, in the task's order: those of the validation split
    (``eval_*``), or with ``split="test"`` those of the test split (``test_*``)."""
    keys = {metric: split + metric.key.removeprefix("eval") for metric in TASKS[run["task"]].metrics}
    return [(metric, run[key]) for metric, key in keys.items() if key in run]


def scored_splits(run: dict) -> tuple[list[str], bool]:
    """The splits the run's scores are on, and whether the run records them: the splits its provenance records
    (a score on a split it does not record is a ValueError), else those its scores' names say (``eval_*``,
    ``test_*``), for results written before runs recorded their provenance."""
    named = [split for prefix, split in SPLIT_OF_PREFIX.items() if run_scores(run, prefix)]
    recorded = (run.get("provenance") or {}).get("split")
    if recorded is None:
        return named, False
    if missing := [split for split in named if split not in recorded]:
        raise ValueError(f"The run holds {' and '.join(missing)} scores, but its provenance records the splits "
                         f"{recorded}: its results contradict themselves; render the card from the run's own "
                         "results.json.")
    return [split for split in recorded if split in SPLIT_OF_PREFIX.values()], True


def seed_summary(run: dict) -> str:
    """For a run loaded from a suite (`load_run`), or the main job's (``tools/render/main_job.py``): a paragraph and
    table of each test score of its task as its `SUITE_ROW` states it over the model's seeds (``mean ± sd (n=3)``),
    naming the command that trained them (``trained_by``, else the suite's) and how the seeds were chosen
    (``match``, where given); empty for a run of its own."""
    row = run.get(SUITE_ROW)
    if row is None:
        return ""
    lines = []
    for metric in TASKS[run["task"]].metrics:
        if (summary := row.get("test" + metric.key.removeprefix("eval"))) is not None:
            spread = "" if summary["sd"] is None else f" ± {format_metric(summary['sd'], metric.percent)}"
            lines.append(f"| {metric.name} | {format_metric(summary['mean'], metric.percent)}{spread} "
                         f"(n={summary['n']}) |\n")
    if not lines:
        return ""
    seeds = ", ".join(str(seed) for seed in row["seeds"])
    trained_by = row.get("trained_by") or f"`scripts/compare.py {row['suite']}`"
    test, recorded = SPLIT_OF_PREFIX["test"], (run.get("provenance") or {}).get("split")
    if recorded is not None and test not in recorded:
        raise ValueError(f"The run's {SUITE_ROW} holds {test} scores over its seeds, but the run records the splits "
                         f"{recorded}.")
    return (f"\nThe same recipe trained once per seed ({seeds}) by {trained_by}, {test} split, "
            "mean ± sample standard deviation over the seeds (this model is one of those runs)"
            f"{row.get('match', '')}:\n\n"
            "| metric | over the seeds |\n|---|---|\n" + "".join(lines))


def run_commit(run: dict) -> str | None:
    """The commit of the code a run (a benchmark entry, a results file) was measured with, as it records it: its
    ``provenance`` (abbreviated), else the ``machine`` of results written before provenance existed."""
    if commit := (run.get("provenance") or {}).get("commit"):
        return commit[:7]
    return run["machine"].get("git_commit") if isinstance(run.get("machine"), dict) else None


def load_benchmarks(path: str | Path | None = None) -> dict | None:
    """The results of ``python -m benchmarks.run``: those in ``path``; by default `DEFAULT_BENCHMARKS` if it is
    there (an installed package has none); none for ``""``."""
    if path is None:
        return read_json(DEFAULT_BENCHMARKS, BENCHMARKS_FILE) if DEFAULT_BENCHMARKS.is_file() else None
    if not path:
        return None
    if not Path(path).is_file():
        raise ValueError(f"--benchmarks {path}: no such file; pass the benchmarks.json that `python -m benchmarks.run` "
                         "wrote, or '' for a card without speed figures.")
    return read_json(path, BENCHMARKS_FILE)


def read_json(path: str | Path, expected: str) -> dict:
    """The JSON object in the file ``path``; anything else is a ValueError naming the file and what was
    ``expected`` there (the option and what to pass)."""
    try:
        data = json.loads(Path(path).read_text())
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
        raise ValueError(f"{path} is not JSON ({error}); pass {expected}.") from error
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds a JSON {type(data).__name__}, not an object; pass {expected}.")
    return data


@dataclass(frozen=True)
class Measure:
    """Where a figure sits in ``benchmarks.json``.

    Args:
        entry: the benchmark's entry (``"translation"``).
        keys: the figure's path in the entry's summary (``("train", "ratio")``).
        labelled: whether the summary files its figures under each model's label (`benchmark_model`); otherwise the
            entry measured a single model.
    """

    entry: str
    keys: tuple[str, ...]
    labelled: bool = True


# (family, measure) -> where the benchmarks keep it: every benchmark figure a card quotes.
MEASURES = {
    ("attention_seq2seq", "beam_speedup"): Measure("translation", ("sorted_speedup_vs_beams_batched", "ratio")),
    ("attention_seq2seq", "per_hypothesis_speedup"): Measure("translation",
                                                             ("sorted_speedup_vs_per_hypothesis", "ratio")),
    ("attention_seq2seq", "beam_agreement"): Measure("translation", ("agreement_beams_batched",)),
    ("attention_seq2seq", "beam_batch_size"): Measure("translation", ("batch_size",)),
    ("attention_seq2seq", "batch1_greedy_speed"): Measure("batch1_overhead", ("greedy, generate()", "ratio")),
    ("attention_seq2seq", "batch1_beam_speed"): Measure("batch1_overhead", ("beam 5, generate()", "ratio")),
    ("attention_seq2seq", "our_loop_beam_speedup"): Measure("translation",
                                                            ("custom_sorted_speedup_vs_beams_batched", "ratio")),
    ("attention_seq2seq", "our_loop_batch1_greedy_speed"): Measure(
        "batch1_overhead", ("greedy, generate(custom_generate=decode)", "ratio")),
    ("attention_seq2seq", "our_loop_batch1_beam_speed"): Measure(
        "batch1_overhead", ("beam 5, generate(custom_generate=decode)", "ratio")),
    ("transformer_seq2seq", "train_vs_marian"): Measure("transformer_vs_marian", ("train", "ratio"), labelled=False),
    ("transformer_seq2seq", "greedy_vs_marian"): Measure("transformer_vs_marian", ("greedy", "ratio"), labelled=False),
    ("transformer_seq2seq", "beam_vs_marian"): Measure("transformer_vs_marian", ("beam", "ratio"), labelled=False),
    ("transformer_seq2seq", "greedy_vs_tutorial"): Measure("transformer_vs_marian", ("greedy_vs_tutorial", "ratio"),
                                                           labelled=False),
    ("recurrent_lm", "cached_token_growth"): Measure("incremental",
                                                     ("per_token_growth_1024_vs_16", "cached", "ratio")),
    ("recurrent_lm", "cache_speedup"): Measure("incremental", ("cache_speedup_at_1024", "ratio")),
    ("recurrent_lm", "training_vs_tutorial"): Measure("training", ("masked_vs_tutorial_fused_throughput", "ratio"),
                                                      labelled=False),
    ("recurrent_lm", "training_vs_cell_loop"): Measure("training", ("masked_vs_tutorial_cell_loop_throughput", "ratio"),
                                                       labelled=False),
    ("transformer_lm", "cached_token_growth"): Measure("incremental",
                                                       ("per_token_growth_1024_vs_16", "cached", "ratio")),
    ("transformer_lm", "cache_speedup"): Measure("incremental", ("cache_speedup_at_1024", "ratio")),
}


# family -> {config field: the entry's ``sizes`` field}: what makes the timed model this model (family, sizes and
# attention). Every field must be recorded in the entry and equal; a field the entry does not record is a mismatch.
IDENTITY = {
    "attention_seq2seq": {field: field for field in (
        "cell_type", "attention_type", "input_feeding", "bidirectional_encoder", "encoder_layers", "decoder_layers",
        "hidden_size", "embedding_size", "vocab_size")},
    "transformer_seq2seq": {"d_model": "d_model", "num_heads": "num_heads", "ffn_dim": "ffn_dim",
                            "encoder_layers": "layers", "decoder_layers": "layers", "vocab_size": "vocab_size"},
    "recurrent_lm": {field: field for field in ("cell_type", "hidden_size", "num_layers", "vocab_size")},
    "transformer_lm": {field: field for field in ("d_model", "num_heads", "decoder_layers", "vocab_size")},
}


def timed_is(entry: dict, family: str, config: dict, run: dict | None = None) -> bool:
    """Whether the model an entry of ``benchmarks.json`` timed is a model like ``config``: the fields `IDENTITY`
    names for ``family``, all recorded in the entry's ``sizes`` and equal; or (`timed_run`) the very model of
    ``run``."""
    sizes = entry.get("sizes", {})
    if all(sizes.get(sized, object()) == config.get(field) for field, sized in IDENTITY[family].items()):
        return True
    return run is not None and timed_run(entry, family, config, run)


def timed_run(entry: dict, family: str, config: dict, run: dict) -> bool:
    """Whether an entry timed the trained model of ``run`` itself: the model it names under the run's label
    (``summary[label]["model"]``, from the folder's results.json) records the training run's commit and start
    date (its provenance, taken at run time) and test BLEU, all the run's own, and every `IDENTITY` field the
    entry's ``sizes`` records (one value, or one per model of ``cell_types``) is the one of ``config``."""
    sizes, own = entry.get("sizes", {}), run.get("provenance") or {}
    label = benchmark_model(family, config, sizes) if "attention_type" in sizes else None
    origin = entry.get("summary", {}).get(label, {}).get("model") or {}
    trained = origin.get("trained_at") or {}
    if own.get("recorded") != RECORDED or not own.get("date") or origin.get("test_bleu") != run.get("test_bleu"):
        return False
    if any(trained.get(key) != own.get(key) for key in ("commit", "date")):
        return False
    cells = sizes.get("cell_types", [config.get("cell_type")])
    if config.get("cell_type") not in cells:
        return False
    index = cells.index(config.get("cell_type"))
    for field, sized in IDENTITY[family].items():
        value = sizes.get(sized, config.get(field))
        if isinstance(value, list):
            value = value[index] if len(value) == len(cells) else None
        if value != config.get(field):
            return False
    return True


class Figure(NamedTuple):
    """A benchmark figure, the label of the model it was measured on, and the entry it comes from."""

    model: str
    value: float
    entry: str


# The Transformer's model_type, and the one results recorded before it was renamed.
TRANSFORMER_MODEL_TYPES = (TransformerConfig.model_type, *TransformerConfig.former_model_types)


def benchmark_family(config: dict) -> str | None:
    """The benchmarked family a model of ``config`` (its config.json as a dict) belongs to: ``attention_seq2seq``,
    ``transformer_seq2seq``, ``recurrent_lm`` or ``transformer_lm``; None for any other model."""
    kind = config.get("model_type")
    if kind in TRANSFORMER_MODEL_TYPES:
        return "transformer_seq2seq" if config["is_encoder_decoder"] else "transformer_lm"
    return {"attention_seq2seq": "attention_seq2seq", "recurrent": "recurrent_lm"}.get(kind)


def benchmark_model(family: str, config: dict, sizes: dict) -> str:
    """The label the benchmarks give a model of ``family`` like ``config`` in an entry of ``sizes``, as
    ``benchmarks/`` writes it: ``"attention GRU (luong_general)"``, ``"recurrent LM (lstm)"``, ``"transformer LM"``."""
    if family == "attention_seq2seq":
        return f"attention {config['cell_type'].upper()} ({sizes['attention_type']})"
    if family == "recurrent_lm":
        return f"recurrent LM ({config['cell_type']})"
    return {"transformer_lm": "transformer LM", "transformer_seq2seq": "transformer encoder-decoder"}[family]


def benchmark_figure(benchmarks: dict, family: str, measure: str, config: dict,
                     run: dict | None = None) -> Figure | None:
    """Figure ``measure`` (see `MEASURES`) that ``python -m benchmarks.run`` took on ``family`` for a model like
    ``config`` (or ``run``'s own model), from its results; None where the benchmarks did not measure it on such a
    model (`timed_is`)."""
    where = MEASURES[family, measure]
    entry = benchmarks.get("entries", {}).get(where.entry)
    if entry is None or not timed_is(entry, family, config, run):
        return None
    model = benchmark_model(family, config, entry["sizes"])
    summary = entry.get("summary", {})
    if where.labelled:
        summary = summary.get(model, {})
    value = reduce(lambda node, key: node.get(key, {}), where.keys, summary)
    return Figure(model, value, where.entry) if isinstance(value, (int, float)) else None
