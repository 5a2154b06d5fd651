"""A suite's table (markdown) and chart (PNG), from its report (`runner.run_suite`): a row per model, each figure
the mean ± sample standard deviation over the seeds."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..cards import format_metric  # noqa: E402
from .suites import DEFAULT_SEEDS, Suite  # noqa: E402


def mean_sd_cell(stat: dict | None, percent: bool = False, scale: float = 1.0, digits: int | None = None) -> str:
    """``mean ± sd`` of a `aggregate.mean_sd` (scores as `format_metric` shows them; other figures multiplied by
    ``scale`` with ``digits`` decimals); the mean alone for one seed; ``n/a`` when absent."""
    if stat is None:
        return "n/a"

    def show(value: float) -> str:
        return format_metric(value, percent) if digits is None else f"{value * scale:.{digits}f}"

    return show(stat["mean"]) if stat["sd"] is None else f"{show(stat['mean'])} ± {show(stat['sd'])}"


def target_cell(suite: Suite, row: dict) -> str:
    target = suite.targets.get(row["name"])
    if target is None or suite.metric not in row:
        return ""
    met = (row[suite.metric]["mean"] >= target) == suite.higher_is_better
    return f"{format_metric(target, suite.percent)} {'met' if met else 'missed'}"


def bootstrap_cell(compared: dict | None, name: str) -> str:
    """The row's BLEU in one seed's paired bootstrap: mean ± 95% half-width, and the p-value against the
    baseline."""
    if compared is None or name not in compared["systems"]:
        return "n/a"
    bleu = compared["systems"][name]["bleu"]
    tail = "baseline" if name == compared["baseline"] else f"p = {bleu['p_value']:.3f}"
    return f"{bleu['mean']:.2f} ± {bleu['ci']:.2f} ({tail})"


def command(suite_name: str, suite: Suite, report: dict) -> str:
    """The scripts/compare.py command that runs the report's models with its settings."""
    names = list(dict.fromkeys(run["name"] for run in report["runs"]))
    options = [" --full" if report["full"] else "",
               "" if names == list(suite.models) else f' --models "{",".join(names)}"',
               "" if report["seeds"] == list(DEFAULT_SEEDS) else " --seeds " + ",".join(map(str, report["seeds"])),
               "" if report["num_threads"] == 1 else f" --num_threads {report['num_threads']}",
               "" if report.get("jobs", 1) == 1 else f" --jobs {report['jobs']}"]
    return f"python scripts/compare.py {suite_name}{''.join(options)}"


def markdown(suite_name: str, suite: Suite, report: dict) -> str:
    budget, seeds = report["budget"], report["seeds"]
    spread = ("one seed (n=1): no standard deviation" if len(seeds) == 1 else
              f"mean ± sample standard deviation (n-1) over the seeds {seeds}; n is each row's number of seeds")
    lines = [
        f"# {suite_name}: {suite.metric_label}",
        "",
        f"Budget per model and seed: at most {budget.get('time_budget_minutes')} min of training and "
        f"{budget.get('num_train_epochs')} epoch(s)"
        + (f"; step caps: {report['step_caps']}" if report.get("step_caps") else "")
        + f". {report['num_threads'] or 'all'} thread(s) per run"
        + (f", {report['jobs']} runs at once" if report.get("jobs", 1) > 1 else "") + ". "
        f"Command: `{command(suite_name, suite, report)}`; the runs' processes took "
        f"{sum(run.get('process_wall_time_s', 0) for run in report['runs']) / 60:.1f} min of wall-clock time "
        "between them. "
        f"Each figure: {spread}. Peak memory: the GPU's peak allocation on a GPU, else the process's peak resident "
        "memory.",
        "",
    ]
    if vectors := report.get("word_vectors"):
        options = {key: value for key, value in vectors["fields"].items() if key not in ("output_file", "overwrite")}
        lines += [f"Word vectors trained first (`tasks.word_vectors`, {vectors['process_wall_time_s'] / 60:.1f} "
                  f"min): {options}.", ""]
    compared = None
    if suite.translates and (by_seed := report.get("paired_bootstrap")):
        seed, compared = next(iter(by_seed.items()))
    headers = [suite.metric_label, *(header for _, header in suite.extra_columns), "n", "target", "parameters",
               "train time (min)", "steps (epochs)", "training tokens/s", "peak memory (MiB)", "device"]
    if compared is not None:
        headers.append(f"test BLEU, paired bootstrap vs {compared['baseline']} (seed {seed})")
    lines += ["| model | " + " | ".join(headers) + " |", "|---" * (len(headers) + 1) + "|"]
    for row in report["rows"]:
        if not row["seeds"]:
            lines.append(f"| {row['name']} | failed (seeds {row['failed_seeds']}; logs in the json) |"
                         + " |" * (len(headers) - 1))
            continue
        cells = [
            mean_sd_cell(row.get(suite.metric), suite.percent),
            *(mean_sd_cell(row.get(key), suite.percent) for key, _ in suite.extra_columns),
            str(len(row["seeds"])) + (f" (failed: {row['failed_seeds']})" if row["failed_seeds"] else ""),
            target_cell(suite, row),
            f"{row['num_parameters']['mean'] / 1e6:.2f}M",  # the same for every seed
            mean_sd_cell(row.get("train_runtime_s"), scale=1 / 60, digits=1),
            f"{mean_sd_cell(row.get('steps'), digits=0)} ({mean_sd_cell(row.get('epochs'), digits=2)})",
            mean_sd_cell(row.get("train_tokens_per_second"), digits=0),
            mean_sd_cell(row.get("peak_memory_bytes"), scale=2 ** -20, digits=0),
            ", ".join(row["devices"]),
        ]
        if compared is not None:
            cells.append(bootstrap_cell(compared, row["name"]))
        lines.append(f"| {row['name']} | " + " | ".join(cells) + " |")
    if suite.translates:
        signatures = {run["bleu_signature"] for run in report["runs"] if "bleu_signature" in run}
        lines += ["", f"sacreBLEU signatures: BLEU {', '.join(sorted(signatures))}"]
        if compared is not None:
            lines.append(f"paired bootstrap: {compared['signatures']['bleu']} (sacrebleu.significance.PairedTest; "
                         "every seed's in the json; hypotheses under hypotheses/)")
    return "\n".join(lines) + "\n"


def bar_chart(path: Path, suite: Suite, rows: list[dict]) -> None:
    """The suite's metric per model: bars at the mean over the seeds, error bars of one standard deviation."""
    rows = [row for row in rows if suite.metric in row]
    scale = 100 if suite.percent else 1
    means = [row[suite.metric]["mean"] * scale for row in rows]
    sds = [(row[suite.metric]["sd"] or 0.0) * scale for row in rows]
    figure, axis = plt.subplots(figsize=(1.4 * max(len(rows), 3) + 1, 4))
    bars = axis.bar([row["name"] for row in rows], means, yerr=sds, capsize=4, color="tab:blue")
    axis.bar_label(bars, labels=[mean_sd_cell(row[suite.metric], suite.percent) for row in rows], label_type="center",
                   color="white", fontsize=7)
    targeted = [(i, suite.targets[row["name"]]) for i, row in enumerate(rows) if row["name"] in suite.targets]
    for j, (i, target) in enumerate(targeted):
        axis.hlines(target * scale, i - 0.4, i + 0.4, colors="tab:red", linestyles="--",
                    label="target" if j == 0 else None)
    if means and suite.percent:
        axis.set_ylim(max(0, min(means) - 10), 100)
    axis.set_ylabel(suite.metric_label)
    seeds = max((row[suite.metric]["n"] for row in rows), default=0)
    devices = sorted({device for row in rows for device in row["devices"]})
    axis.set_title(f"{suite.metric_label}, mean ± sd of {seeds} seed(s), {', '.join(devices)}", fontsize=8)
    if targeted:
        axis.legend(loc="lower right")
    axis.tick_params(axis="x", labelsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
