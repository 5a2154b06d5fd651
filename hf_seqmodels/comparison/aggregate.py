"""A suite's rows: each model's runs (one per seed) summarised as mean and sample standard deviation."""

import statistics
from collections.abc import Iterable

# The per-run figures a row summarises (results.json keys, or ones `training_throughput` adds), besides the metrics.
RUN_FIGURES = ("num_parameters", "train_runtime_s", "train_tokens_per_second", "peak_memory_bytes", "steps", "epochs")


def mean_sd(values: list[float]) -> dict:
    """``{"mean", "sd", "n"}`` of ``values``: the sample standard deviation (n - 1), None for a single value."""
    if not values:
        raise ValueError("mean_sd needs at least one value.")
    return {"mean": statistics.fmean(values), "sd": statistics.stdev(values) if len(values) > 1 else None,
            "n": len(values)}


def training_throughput(run: dict) -> float | None:
    """Training tokens per second of a run: ``train_tokens`` over ``train_runtime_s`` where the run counted them."""
    if run.get("train_tokens") is None or not run.get("train_runtime_s"):
        return None
    return run["train_tokens"] / run["train_runtime_s"]


def summarise(name: str, runs: Iterable[dict], keys: Iterable[str]) -> dict:
    """The row of model ``name`` from its ``runs``: its seeds, the failed ones, and for each of ``keys`` (and
    `RUN_FIGURES`) that the successful runs hold, their `mean_sd`; the devices they ran on."""
    runs = list(runs)
    done = [run for run in runs if "error" not in run]
    row = {"name": name, "seeds": [run["seed"] for run in done],
           "failed_seeds": [run["seed"] for run in runs if "error" in run]}
    for key in (*keys, *RUN_FIGURES):
        values = [run[key] for run in done if run.get(key) is not None]
        if values:
            row[key] = mean_sd(values)
    row["devices"] = sorted({run["device"] for run in done if "device" in run})
    return row


def rows(runs: list[dict], names: list[str], keys: list[str]) -> list[dict]:
    """One `summarise` row per model of ``names`` (in that order) that has runs."""
    return [summarise(name, [run for run in runs if run["name"] == name], keys)
            for name in names if any(run["name"] == name for run in runs)]
