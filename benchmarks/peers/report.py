"""results/peers.md and results/peers.png, rendered from results/peers.json (`run.main` writes it; rerender with
``python -m benchmarks.peers.report``): a row per toolkit, each figure the mean ± sample standard deviation over
the seeds, then what the other results files beside it hold when they exist (`Measured`): the sweep, the training
speed phase, the decoding grid, the targets (with int8_recurrent.json's), every run, the differences that could not
be removed, versions and commands, and the CTranslate2 helper's rows. The Transformer's comparison renders
results/peers_transformer.md alone (`render_comparison`; ``--architecture transformer``), with its own decoding
grid.

What is the peers' own is computed here (the medians over rounds and thread counts, the means over seeds, the
targets; the decoding grid's in `report_decoding`); every table is a `tools.render.figures.Table` and docs/peers.md's
block is rendered by that module's `render_text`, the renderer of the other documents (``python -m tools.render``
renders and checks that block too: `docs_block`)."""

import argparse
import dataclasses
import json
import statistics
from pathlib import Path

from hf_seqmodels.comparison.aggregate import mean_sd
from hf_seqmodels.comparison.report import mean_sd_cell
from hf_seqmodels.comparison.runner import write_json
from hf_seqmodels.provenance import provenance
from tools.render.figures import Table, Text, markers, render_text

from . import model_shapes, report_decoding, report_profile
from .architectures import ARCHITECTURES, RNN, Architecture
from .invocations import described
from .report_sweep import sweep_section
from .sweep import RESULTS as SWEEP_RESULTS

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMING = "peers_timing.json"  # the training speed phase's medians (benchmarks.peers.run --timing_rounds)
CTRANSLATE2 = "peers_ctranslate2.json"  # written by benchmarks/peers/ctranslate2_*.py, beside peers.json
DOCS = REPO_ROOT / "docs" / "peers.md"
# docs/peers.md holds the summary tables between these lines (a figures block, which the prose check of
# tools.render.figures skips); `update_docs` rewrites what lies between them from the results files.
DOCS_BLOCK = "peers"
DOCS_BEGIN, DOCS_END = markers(DOCS_BLOCK)


def train_tokens_per_second(run: dict, without_validation: bool = False) -> float:
    """Source tokens (pieces and eos) of the updates trained on over the training loop's seconds: updates x batch
    size x the mean source tokens of a training pair, the same count for every toolkit. ``without_validation``:
    over the loop's seconds less its validations' (``validation_s``)."""
    seconds = run["train"]["train_s"] - (run["train"]["validation_s"] if without_validation else 0)
    return run["train"]["steps"] * run["batch_size"] * run["mean_source_tokens"] / seconds


def training_summary(runs: list[dict]) -> dict:
    """The medians over the rounds of training runs: tokens/s with and without the validations."""
    return {key: statistics.median(train_tokens_per_second(run, without) for run in runs)
            for key, without in (("train_tokens_per_s", False), ("train_tokens_per_s_without_validation", True))}


# The training speed figures, in the tables' order: key, the key its best thread count is stored under, title in the
# by-threads table. The first figure's count carries the other values.
SPEED_FIGURES = (("train_tokens_per_s", "train_threads", "training tokens/s"),
                 ("train_tokens_per_s_without_validation", "train_threads_without_validation", "without validation"))


def speed_medians(runs: list[dict]) -> dict:
    """``by_threads``: the `training_summary` of each toolkit's training runs at each thread count (a run without
    ``threads`` ran at the phase's one count); ``median``: per toolkit, each speed figure at the thread count where it
    is highest, with that count (the number of threads is a setting, and each toolkit is timed at its best), and the
    other values at the count of the first figure."""
    names = list(dict.fromkeys(run["toolkit"] for run in runs))
    by_threads = {name: {str(count): training_summary([run for run in runs if run["toolkit"] == name
                                                       and run.get("threads") == count])
                         for count in sorted({run.get("threads") for run in runs if run["toolkit"] == name},
                                             key=lambda count: -1 if count is None else count)}
                  for name in names}
    median = {}
    for name, summaries in by_threads.items():
        for number, (figure, key, _) in enumerate(SPEED_FIGURES):
            count = max(summaries, key=lambda count: summaries[count][figure])
            if number == 0:
                median[name] = dict(summaries[count])
            median[name].update({figure: summaries[count][figure], key: int(count) if count != "None" else None})
    return {"median": median, "by_threads": by_threads}


@dataclasses.dataclass(frozen=True)
class Measured:
    """What the results folder holds beside peers.json, each empty or None where not measured yet: ``timing`` the
    training speed phase (peers_timing.json), ``sweep`` (peers_sweep.json), ``grid`` the decoding grid
    (peers_decoding.json), ``int8`` (int8_recurrent.json, `benchmarks.studies.int8_recurrent`), ``profile`` (
    batch1_profile.json, `benchmarks.studies.batch1_profile`) and ``ctranslate2`` the path of the CTranslate2
    helper's results (peers_ctranslate2.json)."""

    timing: dict = dataclasses.field(default_factory=dict)
    sweep: dict | None = None
    grid: dict | None = None
    int8: dict | None = None
    profile: dict | None = None
    ctranslate2: Path | None = None


def measured_in(out: Path) -> Measured:
    """The results files in ``out`` beside peers.json (`Measured`)."""
    def read(name: str) -> dict | None:
        return json.loads((out / name).read_text()) if (out / name).is_file() else None

    return Measured(timing=read(TIMING) or {}, sweep=read(SWEEP_RESULTS), grid=read(report_decoding.RESULTS),
                    int8=read(report_decoding.INT8), profile=read(report_profile.RESULTS),
                    ctranslate2=out / CTRANSLATE2)


def scored(results: dict) -> list[dict]:
    """The runs that have scores (a seed's runs are scored once its baseline and a peer are both stored)."""
    return [run for run in results["runs"] if "scores" in run]


def summarize(results: dict) -> list[dict]:
    """A row per toolkit (in the order of its first scored run): its seeds and the `mean_sd` of every quality
    figure. The seconds of a quality run are no speed figure when runs shared the machine (``jobs`` above 1)."""
    rows = []
    for name in dict.fromkeys(run["toolkit"] for run in scored(results)):
        runs = [run for run in scored(results) if run["toolkit"] == name]
        figures = {
            "bleu": [run["scores"]["bleu"]["score"] for run in runs],
            "chrf": [run["scores"]["chrf"]["score"] for run in runs],
            "train_s": [run["train"]["train_s"] for run in runs],
            "train_peak_rss_mb": [run["train"]["peak_rss_mb"] for run in runs],
            "decode_peak_rss_mb": [run["decode"]["test"]["peak_rss_mb"] for run in runs],
            "mean_output_pieces": [run["decode"]["test"]["mean_output_pieces"] for run in runs],
        }
        rows.append({"toolkit": name, "seeds": [run["seed"] for run in runs],
                     "configurations": sorted({(run["tuning"]["schedule"], run["tuning"]["learning_rate"],
                                                run["length_penalty"]) for run in runs if "tuning" in run}),
                     "parameters": sorted({run["train"]["parameters"] for run in runs}),
                     **{key: mean_sd(values) for key, values in figures.items()}})
    return rows


def training_medians(timing: dict) -> dict[str, dict]:
    """Per toolkit, the training speed phase's medians (peers_timing.json's ``training``), where measured."""
    return timing.get("training", {}).get("median", {})


def quality_targets(results: dict) -> list[dict]:
    """Per peer: test BLEU of the baseline (ours) at least the peer's (mean over the seeds), and no seed where the
    peer is better with p < 0.05."""
    rows = {row["toolkit"]: row for row in summarize(results)}
    baseline, found = results["baseline"], []
    if baseline not in rows:
        return []
    for name in (name for name in rows if name != baseline):
        worse = [run["seed"] for run in scored(results) if run["toolkit"] == name
                 and run["scores"]["bleu"]["p_value"] is not None and run["scores"]["bleu"]["p_value"] < 0.05
                 and run["scores"]["bleu"]["score"] > next(
                     other["scores"]["bleu"]["score"] for other in scored(results)
                     if other["toolkit"] == baseline and other["seed"] == run["seed"])]
        difference = rows[baseline]["bleu"]["mean"] - rows[name]["bleu"]["mean"]
        found.append({"name": f"test BLEU, {baseline} - {name} (mean over seeds)",
                      "value": round(difference, 2),
                      "wanted": ">= 0, and the peer better in no seed's bootstrap (p < 0.05)",
                      "met": difference >= 0 and not worse})
    return found


def targets(results: dict, measured: Measured | None = None) -> list[dict]:
    """The targets for the baseline (ours) against each peer, each where its data exists: `quality_targets`; the
    training speed phase's paired-round verdict (`training_verdict`); the decoding grid's (`report_decoding.targets`)
    and int8's (`report_decoding.int8_targets`). Each: ``name``, ``value``, ``wanted``, ``met``."""
    measured = measured or Measured()
    baseline, found = results["baseline"], quality_targets(results)
    training = measured.timing.get("training", {})
    if baseline in training_medians(measured.timing) and training.get("runs"):
        found += [training_verdict(training, baseline, name) for name in training["median"] if name != baseline]
    if measured.grid:
        found += report_decoding.targets(measured.grid)
    found += report_decoding.int8_targets(measured.int8, measured.grid)
    return found


def round_speeds(training: dict, name: str) -> dict[int, float]:
    """``name``'s training tokens/s in each round of the speed phase, at the thread count of its median row."""
    threads = training["median"][name].get("train_threads")
    return {run["round"]: train_tokens_per_second(run) for run in training["runs"]
            if run["toolkit"] == name and run.get("threads") == threads}


def training_verdict(training: dict, baseline: str, peer: str) -> dict:
    """The baseline's training tokens/s over ``peer``'s, round by round (the toolkits took turns, so a round's
    pair shared the machine's state): "faster" only when every paired round has the baseline ahead, "slower" when
    every one has it behind, "on par" otherwise; the value is the median ratio and its spread over the rounds."""
    ours, theirs = round_speeds(training, baseline), round_speeds(training, peer)
    ratios = sorted(ours[round_] / theirs[round_] for round_ in ours.keys() & theirs.keys())
    verdict = ("faster" if all(ratio > 1 for ratio in ratios) else
               "slower" if all(ratio < 1 for ratio in ratios) else "on par")
    return {"name": f"training tokens/s, {baseline} / {peer}",
            "value": f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f} over {len(ratios)} paired "
                     "rounds)",
            "wanted": "\"faster\" only where every paired round agrees", "met": verdict != "slower",
            "verdict": verdict}


def bootstrap_cell(run: dict, baseline: str) -> str:
    bleu, chrf = run["scores"]["bleu"], run["scores"]["chrf"]
    if run["toolkit"] == baseline:
        return "baseline"
    return f"BLEU p = {bleu['p_value']:.3f}, chrF p = {chrf['p_value']:.3f}"


def flat_cells(row: dict) -> dict[str, str]:
    """A row's plain values as table cells; a nested object's plain values under ``key.inner``, a list of plain
    values joined by "-" (a pair of quartiles)."""
    cells = {}
    for key, value in row.items():
        if isinstance(value, dict):
            cells.update({f"{key}.{inner}": text for inner, text in flat_cells(value).items() if "." not in inner})
        elif isinstance(value, list) and all(isinstance(item, (str, int, float)) for item in value):
            cells[key] = "-".join(map(str, value))
        elif isinstance(value, (str, int, float, bool)):
            cells[key] = str(value)
    return cells


def extra_rows(path: Path) -> list[str]:
    """The CTranslate2 helper's results as a table: the rows of its json (``rows``, or the first list of objects
    in it), one column per plain value (`flat_cells`)."""
    if not path.is_file():
        return []
    other = json.loads(path.read_text())
    listed = other.get("rows") if isinstance(other.get("rows"), list) else next(
        (value for value in other.values() if isinstance(value, list) and value and isinstance(value[0], dict)), [])
    cells = [flat_cells(row) for row in listed]
    columns = list(dict.fromkeys(key for row in cells for key in row))
    lines = ["", f"## CTranslate2 (from results/{path.name}, written by benchmarks/peers/ctranslate2_*.py)", ""]
    if isinstance(other.get("title"), str):
        lines += [other["title"], ""]
    if not listed:
        return lines + ["(no rows in the file)"]
    table = Table(tuple(columns), [tuple(row.get(key, "") for key in columns) for row in cells])
    return lines + table.render().split("\n")


def summary_table(results: dict) -> list[str]:
    """The quality table's lines: a row per toolkit."""
    rows = [(row["toolkit"], "; ".join(f"{schedule}, peak {rate:g}, length penalty {alpha:g}"
                                       for schedule, rate, alpha in row["configurations"]) or "the main job's",
             mean_sd_cell(row["bleu"], digits=2), mean_sd_cell(row["chrf"], digits=2),
             ", ".join(f"{count:,}" for count in row["parameters"]), mean_sd_cell(row["mean_output_pieces"], digits=1),
             mean_sd_cell(row["train_s"], digits=0), f"{mean_sd_cell(row['train_peak_rss_mb'], digits=0)} / "
             f"{mean_sd_cell(row['decode_peak_rss_mb'], digits=0)}")
            for row in summarize(results)]
    return Table(("toolkit", "configuration", "test BLEU", "test chrF", "parameters",
                  "test output pieces per sentence",
                  "training loop (s)", "peak memory training / decoding (MiB)"), rows).render().split("\n")


def wall_table(results: dict, timing: dict) -> list[str]:
    """How long each phase's commands ran (their wall seconds, loading included), per toolkit: the quality phase's
    training and test-decoding commands (mean over the seeds; two at a time when ``jobs`` is above 1), and one
    training run of the training speed phase (the median over its rounds)."""
    def cell(values: list[float], average=statistics.mean, unit: float = 60, places: int = 1) -> str:
        return f"{average(values) / unit:.{places}f}" if values else ""

    timed = timing.get("training", {}).get("runs", [])
    rows = []
    for name in dict.fromkeys([*(run["toolkit"] for run in scored(results)), *(run["toolkit"] for run in timed)]):
        quality = [run for run in scored(results) if run["toolkit"] == name]
        rows.append((name, cell([run["train"]["wall_s"] for run in quality]),
                     cell([run["decode"]["test"]["wall_s"] for run in quality], unit=1, places=0),
                     cell([run["train"]["wall_s"] for run in timed if run["toolkit"] == name], statistics.median)))
    return Table(("toolkit", "quality: training command (min)", "quality: test decoding command (s)",
                  "training speed: one run (min)"), rows).render().split("\n")


def threads_note(medians: dict, key: str) -> str:
    """" (N threads)" where the speed phase tried several thread counts and this figure is at its best, N."""
    count = medians.get(key)
    return f" ({count} thread{'s' if count > 1 else ''})" if count is not None else ""


def figure_cell(medians: dict, key: str) -> str:
    return f"{medians[key]:.0f}" if key in medians else ""


def speed_table(timing: dict) -> list[str]:
    """The training speed phase's table (peers_timing.json): a row per toolkit, each figure at the toolkit's fastest
    thread count, named when several were tried."""
    rows = [(name, *(figure_cell(medians, key) + threads_note(medians, threads_key)
                     for key, threads_key, _ in SPEED_FIGURES)) for name, medians in training_medians(timing).items()]
    if not rows:
        return []
    return Table(("toolkit", "training tokens/s", "training tokens/s without validation"), rows).render().split("\n")


def by_threads_table(timing: dict) -> list[str]:
    """Every toolkit at every thread count the training speed phase tried (``by_threads``), when it tried several."""
    by_threads = timing.get("training", {}).get("by_threads", {})
    if not any(len(summaries) > 1 for summaries in by_threads.values()):
        return []
    rows = [(name, count, *(figure_cell(medians, key) for key, _, _ in SPEED_FIGURES))
            for name, summaries in by_threads.items() for count, medians in summaries.items()]
    table = Table(("toolkit", "threads", *(title for _, _, title in SPEED_FIGURES)), rows)
    return ["", "Each toolkit at each thread count (OMP_NUM_THREADS; medians over the rounds):", "",
            *table.render().split("\n")]


def threads_text(part: dict) -> str:
    threads = part["threads"] if isinstance(part["threads"], list) else [part["threads"]]
    if len(threads) == 1:
        return f"OMP_NUM_THREADS={threads[0]}"
    return (f"every toolkit at OMP_NUM_THREADS={', '.join(map(str, threads))} in turn, each figure of its row at the "
            "thread count where that figure was highest, named in it (the table below gives every count)")


def speed_section(timing: dict) -> list[str]:
    """The training speed phase's section: what it measured and how, its table and the counts' table."""
    if "training" not in timing:
        return ["Not measured yet."]
    part = timing["training"]
    return [f"{part['rounds']} rounds of {part['recipe']['updates']} updates ({part['recipe']['warmup_steps']} "
            "warmup), the toolkits taking turns, one command at a time; the median over the rounds of the source "
            "tokens (pieces and eos) of the updates over the training loop's seconds as each toolkit's log times it, "
            f"with and without its validations. {part['machine']}, {threads_text(part)}. `{part['command']}`", "",
            *speed_table(timing), *by_threads_table(timing)]


def seed_of(run: dict) -> str:
    return f"{run['toolkit']} seed {run['seed']}"


def quality_section(results: dict, title: str = RNN.title) -> list[str]:
    """peers.md's ``title``, label and quality section: the budget, the scoring and a row per toolkit."""
    budget, recipe, seeds = results["budget"], results["recipe"], results["budget"]["seeds"]
    spread = ("one seed: no standard deviation" if len(seeds) == 1
              else f"mean ± sample standard deviation (n-1) over the seeds present, n = {len(seeds)}: {seeds}")
    waiting = [f"{run['toolkit']} seed {run['seed']}" for run in results["runs"] if "scores" not in run]
    lines = [
        f"# {title}",
        "",
        f"**{results['label']}**",
        "",
        "## Quality",
        "",
        f"Budget: {budget['updates']} updates of {recipe['batch_size']} sentences for every toolkit (the main job: "
        f"{budget['main_job_updates']}), seeds {seeds}. Machine: {results['machine']}. "
        f"Each figure: {spread}. {described(results['runs'], seed_of, results)}",
        "",
        f"test2016 ({results['data']['test']['sentences']} sentences), beam {recipe['num_beams']}, "
        + ("each toolkit's configuration and length penalty as its sweep chose them on validation (each toolkit at "
           "its best on the equal architecture: every toolkit's model is the closest to ours in parameters it can "
           "build, the table's parameters column; the sweep's table below holds the configurations at one shared "
           "peak learning rate beside them)"
           if results.get("tuned") else f"length penalty {recipe['length_penalty']}")
        + f", at most {recipe['max_new_tokens']} tokens; every output detokenized by the "
        "same tokenizer and scored in one sacreBLEU call per seed: "
        f"BLEU `{results['signatures']['bleu']}`, chrF `{results['signatures']['chrf']}`. Paired bootstrap "
        f"({results['bootstrap']['samples']} resamples, seed {results['bootstrap']['seed']}) against "
        f"{results['baseline']} of the same seed." if "signatures" in results else "No seed has been scored yet.",
        "",
        *summary_table(results),
        "",
        "Training loop: its seconds as each toolkit's log times it (validation included); peak memory: the "
        "command's peak resident memory (kernel's ru_maxrss)."
        + (" These runs shared the machine, so their seconds are no speed figures: see Training speed."
           if results.get("jobs", 1) > 1 else ""),
    ]
    if waiting:
        lines += ["", "Not scored yet (their seed lacks the baseline or a peer): " + ", ".join(waiting) + "."]
    return lines


def targets_section(results: dict, measured: Measured) -> list[str]:
    """The targets' table (`targets`), none where no target has its data."""
    found = targets(results, measured)
    return ["", "Targets, on this run's budget and machine:", "", *targets_table(found)] if found else []


def targets_table(found: list[dict]) -> list[str]:
    """The lines of a table of targets (each ``name``, ``value``, ``wanted``, ``met``, maybe ``verdict``)."""
    return Table(("target", "value", "wanted", ""), [(t["name"], str(t["value"]), t["wanted"], t.get(
        "verdict", "met" if t["met"] else "missed")) for t in found]).render().split("\n")


def runs_section(results: dict) -> list[str]:
    """Every scored run with its bootstrap against the baseline, what differs between the toolkits, versions and
    commands."""
    baseline = results["baseline"]
    every_run = Table(
        ("toolkit", "seed", "test BLEU (bootstrap mean ± 95%)", "test chrF", "vs baseline", "training loop (s)",
         "command wall (s)"),
        [(run["toolkit"], str(run["seed"]),
          f"{run['scores']['bleu']['score']:.2f} ({run['scores']['bleu']['mean']:.2f} ± "
          f"{run['scores']['bleu']['ci']:.2f})", f"{run['scores']['chrf']['score']:.2f}", bootstrap_cell(run, baseline),
          f"{run['train']['train_s']:.0f}", f"{run['train']['wall_s']:.0f}") for run in scored(results)])
    lines = ["", "## Every run", "", *every_run.render().split("\n"), "", "## What differs", "",
             f"The same for all: {results['same_for_all']}", ""]
    checked = [run for run in results["runs"] if "tokenizer_is_the_pieces" in run["train"]]
    if checked:
        lines += ["The tokenizer our run trained is byte for byte the one that cut the peers' pieces: "
                  + ", ".join(f"seed {run['seed']}: {'yes' if run['train']['tokenizer_is_the_pieces'] else 'NO'}"
                              for run in checked) + ".", ""]
    for name, differences in results["differences"].items():
        lines += [f"**{name}**:", "", *(f"- {difference}" for difference in differences), ""]
    lines += ["Left out: " + "; ".join(f"{name}: {why}" for name, why in results["left_out"].items()), "",
              "## Versions and commands", ""]
    for name, versions in results["versions"].items():
        run = next((run for run in results["runs"] if run["toolkit"] == name), None)
        if run is not None:
            lines += [f"**{name}** ({', '.join(f'{key} {value}' for key, value in versions.items())}), seed "
                      f"{run['seed']}:", "", f"    {run['train']['command']}",
                      f"    {run['decode']['test']['command']}", ""]
    return lines


def markdown(results: dict, measured: Measured | None = None) -> str:
    """results/peers.md: `quality_section`, the sweep, the training speed phase, the decoding grid
    (`report_decoding.markdown`), the targets, `runs_section` and the CTranslate2 helper's rows; a part not measured
    yet says so or is left out."""
    measured = measured or Measured()
    lines = quality_section(results)
    if shapes := model_shapes.section(results):
        lines += ["", *shapes]
    if measured.sweep:
        lines += ["", *sweep_section(measured.sweep)]
    lines += ["", f"## Training speed (results/{TIMING})", "", *speed_section(measured.timing),
              "", f"## Decoding, every toolkit timed alike (results/{report_decoding.RESULTS})", "",
              report_decoding.markdown(measured.grid).rstrip() if measured.grid else "Not measured yet."]
    if measured.profile:
        lines += ["", *report_profile.profile_section(measured.profile)]
    lines += [*targets_section(results, measured), *runs_section(results)]
    if measured.ctranslate2 is not None:
        lines += extra_rows(measured.ctranslate2)
    return "\n".join(lines).rstrip() + "\n"


def bars(title: str, values: list[tuple[str, float, float]]):
    """A panel of ``values`` (name, height, error bar) under ``title``."""
    def draw(axis) -> None:
        axis.bar(range(len(values)), [value for _, value, _ in values], yerr=[error for _, _, error in values],
                 capsize=3)
        axis.set_xticks(range(len(values)), [name for name, _, _ in values])
        axis.set_title(title, fontsize=9)

    return draw


def decoding_lines(grid: dict, threads: int):
    """A panel of the decoding grid at ``threads``: each toolkit's median sentences/s by batch size (logarithmic)."""
    rows = [row for row in report_decoding.summaries(grid) if row["threads"] == threads]
    sizes = sorted({row["batch_size"] for row in rows})

    def draw(axis) -> None:
        for name in dict.fromkeys(row["toolkit"] for row in rows):
            mine = sorted((row["batch_size"], row["sentences_per_s"]["median"]) for row in rows
                          if row["toolkit"] == name)
            axis.plot(*zip(*mine), marker="o", label=name)
        axis.set_xscale("log", base=2)
        axis.set_xticks(sizes, [str(size) for size in sizes])
        axis.minorticks_off()
        axis.set_ylim(bottom=0)
        axis.set_xlabel("batch size", fontsize=8)
        axis.set_title(f"decoding sentences/s, {report_decoding.threads_words(threads)} (median)", fontsize=9)
        axis.legend(fontsize=7)

    return draw


def panels(results: dict, measured: Measured) -> list:
    """The plot's panels: test BLEU per toolkit (the mean over the seeds, one standard deviation), training
    tokens/s (medians) where measured, and the decoding grid at each of its thread counts where measured."""
    found = [bars("test BLEU", [(row["toolkit"], row["bleu"]["mean"], row["bleu"]["sd"] or 0.0)
                                for row in summarize(results)])]
    if timed := training_medians(measured.timing):
        found.append(bars("training tokens/s (median)", [(name, medians["train_tokens_per_s"], 0.0)
                                                         for name, medians in timed.items()]))
    if measured.grid:
        found += [decoding_lines(measured.grid, threads) for threads in measured.grid["threads"]]
    return found


def plot(results: dict, measured: Measured, path: Path) -> None:
    """results/peers.png: a row of `panels`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    drawn = panels(results, measured)
    figure, axes = plt.subplots(1, len(drawn), figsize=(3.6 * len(drawn), 3.6), squeeze=False)
    for axis, draw in zip(axes[0], drawn):
        draw(axis)
    figure.suptitle(f"{results['label']}", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def docs_block(results: dict, timing: dict) -> str:
    """docs/peers.md's block: the results' label, quality table, the training speed phase's table and the wall
    times of the commands (the decoding grid and the targets are in results/peers.md)."""
    lines = [f"**{results['label']}** (seeds {results['budget']['seeds']}, {results['budget']['updates']} updates; "
             f"{results['machine']})", "", *summary_table(results)]
    if speed := speed_table(timing):
        lines += ["", f"Training speed (the training speed phase, results/{TIMING}; medians):", "", *speed]
    lines += ["", "Wall time of each command (loading included; the quality phase's ran two at a time at one thread "
              "each when its runs say so, the training speed phase's one at a time):", "",
              *wall_table(results, timing)]
    return "\n".join(lines)


def update_docs(results: dict, timing: dict, path: Path) -> None:
    """Render the block between `DOCS_BEGIN` and `DOCS_END` in ``path`` (`docs_block`)."""
    text = path.read_text(encoding="utf-8")
    if text.count(DOCS_BEGIN) != 1 or text.count(DOCS_END) != 1:
        raise ValueError(f"{path} must hold the lines {DOCS_BEGIN!r} and {DOCS_END!r} once each, around the table.")
    block = Text(lambda: docs_block(results, timing))
    path.write_text(render_text(text, {DOCS_BLOCK: block}, str(path)), encoding="utf-8")


def write(results: dict, out: Path, docs: Path | None = DOCS) -> None:
    """results/peers.json (atomically), .md and .png in ``out``, and the tables in ``docs`` (None: not)."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "peers.json", results)
    render(results, out, docs)


def render(results: dict, out: Path, docs: Path | None) -> None:
    """peers.md and peers.png from ``results`` and what ``out`` holds beside it (`measured_in`)."""
    measured = measured_in(out)
    (out / "peers.md").write_text(markdown(results, measured))
    plot(results, measured, out / "peers.png")
    if docs is not None:
        update_docs(results, measured.timing, docs)


def render_comparison(results: dict, out: Path, architecture: Architecture) -> None:
    """<stem>.md in ``out`` for a comparison beside the main job's (the Transformer's, from its results file): its
    quality section, its sweep (when ``out`` holds its file) and every run with what differs; no figure, and no docs
    table (the main job's `render` writes those)."""
    path, grid = out / architecture.sweep_results, out / architecture.decoding_results
    lines = quality_section(results, architecture.title)
    if path.is_file():
        lines += ["", *sweep_section(json.loads(path.read_text()), architecture)]
    if grid.is_file():
        lines += ["", *decoding_section(json.loads(grid.read_text()), architecture)]
    lines += runs_section(results)
    (out / f"{architecture.stem}.md").write_text("\n".join(lines).rstrip() + "\n")


def decoding_section(grid: dict, architecture: Architecture) -> list[str]:
    """A comparison's decoding grid in its report: the grid's table (`report_decoding.markdown`), what each row
    decodes, batch 1 and each row's best batch (`report_decoding.best_batches`) and the CTranslate2 target
    (`report_decoding.ctranslate2_targets`) where the grid has its rows."""
    lines = [f"## Decoding, every engine timed alike (results/{architecture.decoding_results})", "",
             report_decoding.markdown(grid).rstrip(), "", "What each row decodes (per batch, inside the timer):", "",
             *report_decoding.engines_lines(grid), "",
             f"At batch 1 and at each row's best batch (medians; x {report_decoding.BASELINE}: a multiple of the "
             f"{report_decoding.BASELINE} row's median there):", "", report_decoding.best_batches(grid)]
    if found := report_decoding.ctranslate2_targets(grid):
        lines += ["", "Targets, on this run's machine:", "", *targets_table(found)]
    return lines


def resummarize(path: Path) -> None:
    """Recompute the training speed phase's ``median`` and ``by_threads`` in the results at ``path`` from its
    ``runs``, and record in it which code did (``summarized``: this commit; the runs keep their ``provenance``)."""
    timing, now = json.loads(path.read_text()), provenance([], [])
    timing["training"].update(speed_medians(timing["training"]["runs"]), summarized={
        "by": "benchmarks.peers.report.speed_medians", **{key: now[key] for key in ("commit", "tree_clean", "date")}})
    write_json(path, timing)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "results", help="the folder of peers.json")
    parser.add_argument("--architecture", default=RNN.name, choices=ARCHITECTURES,
                        help="the comparison whose report is rendered: 'rnn' (peers.md, peers.png and the docs "
                             "page's tables) or 'transformer' (peers_transformer.md, from peers_transformer.json)")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs page whose table is rewritten")
    parser.add_argument("--no_docs", action="store_true", help="leave the docs page alone")
    parser.add_argument("--resummarize", action="store_true",
                        help="recompute the training speed phase's medians from its stored runs (`speed_medians`) "
                             "into peers_timing.json first, recording this commit (after a change of how they are "
                             "summarized)")
    args = parser.parse_args(argv)
    architecture = ARCHITECTURES[args.architecture]
    if architecture is not RNN:
        render_comparison(json.loads((args.out / architecture.results).read_text()), args.out, architecture)
        return
    if args.resummarize:
        resummarize(args.out / TIMING)
    render(json.loads((args.out / "peers.json").read_text()), args.out, None if args.no_docs else args.docs)


if __name__ == "__main__":
    main()
