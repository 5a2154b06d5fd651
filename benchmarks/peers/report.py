"""results/peers.md and results/peers.png, rendered from results/peers.json (`run.main` writes it; rerender with
``python -m benchmarks.peers.report``): a row per toolkit, each figure the mean ± sample standard deviation over
the seeds, then every run, the differences that could not be removed, versions and commands, and the CTranslate2
helper's rows (results/peers_ctranslate2.json) when that file exists.

What is the peers' own is computed here (the medians over rounds and thread counts, the means over seeds, the
targets); every table is a `tools.render.figures.Table` and docs/peers.md's block is rendered by that module's
`render_text`, the renderer of the other documents (``python -m tools.render`` renders and checks that block too:
`docs_block`)."""

import argparse
import json
import statistics
from pathlib import Path

from hf_seqmodels.comparison.aggregate import mean_sd
from hf_seqmodels.comparison.report import mean_sd_cell
from hf_seqmodels.comparison.runner import write_json
from hf_seqmodels.provenance import provenance
from tools.render.figures import Table, Text, markers, render_text

from .report_sweep import sweep_section
from .sweep import RESULTS as SWEEP_RESULTS

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMING = "peers_timing.json"  # the speed phase's medians (benchmarks.peers.run --timing_rounds / --decoding_rounds)
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


def sentences_per_second(decoded: dict) -> float:
    return decoded["sentences"] / decoded["seconds"]


def training_summary(runs: list[dict]) -> dict:
    """The medians over the rounds of training runs: tokens/s with and without the validations."""
    return {key: statistics.median(train_tokens_per_second(run, without) for run in runs)
            for key, without in (("train_tokens_per_s", False), ("train_tokens_per_s_without_validation", True))}


def decoding_summary(runs: list[dict]) -> dict:
    """The medians over the rounds of decoding rounds (and the batch size most often fastest)."""
    return {"best_batch_sents_per_s": statistics.median(sentences_per_second(run["test"]) for run in runs),
            "best_batch_size": statistics.mode(run["best_batch_size"] for run in runs),
            "batch1_sents_per_s": statistics.median(sentences_per_second(run["batch1"]) for run in runs),
            "mean_output_pieces": statistics.median(run["test"]["mean_output_pieces"] for run in runs),
            "decode_peak_rss_mb": statistics.median(run["test"]["peak_rss_mb"] for run in runs),
            **model_clock_summary([run["test"] for run in runs])}


def model_clock_summary(tests: list[dict]) -> dict:
    """Where the decoding command clocked the model's own computation (ours, `decode_ours.model_clock`), the medians
    over the rounds of the test2016 sentences/s that computation alone would allow (the search's bookkeeping and
    generate()'s preparation costing nothing) and of the output layer's share of the decoding seconds."""
    if not tests or not all("model_seconds" in test for test in tests):
        return {}
    return {"model_only_sents_per_s": statistics.median(test["sentences"] / test["model_seconds"] for test in tests),
            "model_share": statistics.median(test["model_seconds"] / test["seconds"] for test in tests),
            "output_layer_share": statistics.median(test["output_layer_seconds"] / test["seconds"] for test in tests)}


# Per part of the speed phase, its summary of a toolkit's runs at one thread count.
SPEED_SUMMARIES = {"training": training_summary, "decoding": decoding_summary}
# The speed figures, in the tables' order: part, key, the key its best thread count is stored under, title in the
# by-threads table, decimals. A part's first figure's count carries the part's other values.
SPEED_FIGURES = (("training", "train_tokens_per_s", "train_threads", "training tokens/s", 0),
                 ("training", "train_tokens_per_s_without_validation", "train_threads_without_validation",
                  "without validation", 0),
                 ("decoding", "best_batch_sents_per_s", "decode_threads", "beam-5 sentences/s at best batch", 1),
                 ("decoding", "batch1_sents_per_s", "batch1_threads", "at batch 1", 1))


def speed_medians(part: str, runs: list[dict]) -> dict:
    """``by_threads``: the part's summary of each toolkit's runs at each thread count (a run without ``threads`` ran
    at the part's one count); ``median``: per toolkit, each speed figure at the thread count where it is highest,
    with that count (the number of threads is a setting, and each toolkit is timed at its best), and the part's other
    values at the count of its first figure."""
    summary = SPEED_SUMMARIES[part]
    figures = [(figure, key) for owner, figure, key, _, _ in SPEED_FIGURES if owner == part]
    names = list(dict.fromkeys(run["toolkit"] for run in runs))
    by_threads = {name: {str(count): summary([run for run in runs if run["toolkit"] == name
                                              and run.get("threads") == count])
                         for count in sorted({run.get("threads") for run in runs if run["toolkit"] == name},
                                             key=lambda count: -1 if count is None else count)}
                  for name in names}
    median = {}
    for name, summaries in by_threads.items():
        for number, (figure, key) in enumerate(figures):
            count = max(summaries, key=lambda count: summaries[count][figure])
            if number == 0:
                median[name] = dict(summaries[count])
            median[name].update({figure: summaries[count][figure], key: int(count) if count != "None" else None})
    return {"median": median, "by_threads": by_threads}


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


def speeds(timing: dict) -> dict[str, dict]:
    """Per toolkit, the speed phase's medians (peers_timing.json): training tokens/s (with and without its
    validations) and beam-5 sentences/s at its best batch size and at batch 1, where measured."""
    found: dict[str, dict] = {}
    for part in ("training", "decoding"):
        for name, medians in timing.get(part, {}).get("median", {}).items():
            found.setdefault(name, {}).update(medians)
    return found


def targets(results: dict, timing: dict | None = None) -> list[dict]:
    """The targets for the baseline (ours) against each peer: test BLEU at least the peer's (mean over the
    seeds, and no seed where the peer is better with p < 0.05); from the speed phase (``timing``, when measured),
    training tokens/s at least the peer's and batched beam-5 decoding at least 1.5x the faster peer at its best
    batch size. Each: ``name``, ``value``, ``wanted``, ``met``."""
    rows = {row["toolkit"]: row for row in summarize(results)}
    baseline, found = results["baseline"], []
    peers = [name for name in rows if name != baseline]
    if baseline in rows:
        for name in peers:
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
    timed = speeds(timing or {})
    ours = timed.get(baseline, {})
    peers = [name for name in timed if name != baseline]
    training = (timing or {}).get("training", {})
    if "train_tokens_per_s" in ours and training.get("runs"):
        found += [training_verdict(training, baseline, name) for name in peers]
    fastest = fastest_decoding_peer(baseline, timed)
    if "best_batch_sents_per_s" in ours and fastest is not None:
        ratio = ours["best_batch_sents_per_s"] / timed[fastest]["best_batch_sents_per_s"]
        found.append({"name": f"beam-5 sentences/s at the best batch, {baseline} / {fastest} (the faster peer)",
                      "value": round(ratio, 2), "wanted": ">= 1.5", "met": ratio >= 1.5})
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


def fastest_decoding_peer(baseline: str, timed: dict[str, dict]) -> str | None:
    """Of the peers with a best-batch decoding speed in ``timed`` (`speeds`), the fastest; None without any."""
    decoded = [name for name in timed if name != baseline and "best_batch_sents_per_s" in timed[name]]
    return max(decoded, key=lambda name: timed[name]["best_batch_sents_per_s"]) if decoded else None


def decoding_ceiling(baseline: str, timing: dict) -> str | None:
    """What the decoding target asks of the baseline's model, where the speed phase clocked it: a sentence
    comparing the faster peer's best-batch speed with what the baseline's model computation alone allows."""
    timed = speeds(timing)
    ours, fastest = timed.get(baseline, {}), fastest_decoding_peer(baseline, timed)
    if "model_only_sents_per_s" not in ours or fastest is None:
        return None
    peer, alone = timed[fastest]["best_batch_sents_per_s"], ours["model_only_sents_per_s"]
    return (f"Inside the decoding of {baseline} at its best batch and thread count, the model's own computation (the "
            f"encoder, every decoding step, the output layer) took a median {ours['model_share']:.0%} of the "
            f"seconds, the output layer alone {ours['output_layer_share']:.0%}. Were the rest (generate()'s "
            f"preparation and the search's scoring, ranking and reordering) free, {baseline} would decode "
            f"{alone:.1f} sentences/s, {alone / peer:.2f}x {fastest}'s {peer:.1f}; 1.5x that is "
            f"{1.5 * peer:.1f}.")


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
    training and test-decoding commands (mean over the seeds; two at a time when ``jobs`` is above 1), and in the
    speed phase one training run and one decoding round (all its decoding commands), medians over the rounds."""
    def cell(values: list[float], average=statistics.mean, unit: float = 60, places: int = 1) -> str:
        return f"{average(values) / unit:.{places}f}" if values else ""

    rows = []
    for name in dict.fromkeys([*(run["toolkit"] for run in scored(results)),
                               *(run["toolkit"] for part in timing.values() for run in part.get("runs", []))]):
        quality = [run for run in scored(results) if run["toolkit"] == name]
        trained = [run["train"]["wall_s"] for run in timing.get("training", {}).get("runs", [])
                   if run["toolkit"] == name]
        rounds = [sum(decoded["wall_s"] for decoded in (*run["select"].values(), run["test"], run["batch1"]))
                  for run in timing.get("decoding", {}).get("runs", []) if run["toolkit"] == name]
        rows.append((name, cell([run["train"]["wall_s"] for run in quality]),
                     cell([run["decode"]["test"]["wall_s"] for run in quality], unit=1, places=0),
                     cell(trained, statistics.median), cell(rounds, statistics.median)))
    return Table(("toolkit", "quality: training command (min)", "quality: test decoding command (s)",
                  "speed: one training run (min)", "speed: one decoding round (min)"), rows).render().split("\n")


def threads_note(medians: dict, key: str) -> str:
    """" (N threads)" where the speed phase tried several thread counts and this figure is at its best, N."""
    count = medians.get(key)
    return f" ({count} thread{'s' if count > 1 else ''})" if count is not None else ""


def figure_cell(medians: dict, key: str, digits: int) -> str:
    return f"{medians[key]:.{digits}f}" if key in medians else ""


def speed_table(timing: dict) -> list[str]:
    """The speed phase's table (peers_timing.json): a row per toolkit, a blank cell where a part was not run; each
    part's figures at the toolkit's fastest thread count, named when several were tried."""
    timed = speeds(timing)
    if not timed:
        return []
    rows = []
    for name, medians in timed.items():
        cells = []
        for _, key, threads_key, _, digits in SPEED_FIGURES:
            batch = (f" ({medians['best_batch_size']})" if key == "best_batch_sents_per_s"
                     and "best_batch_size" in medians else "")
            cells.append(figure_cell(medians, key, digits) + batch + threads_note(medians, threads_key))
        rows.append((name, *cells, figure_cell(medians, "mean_output_pieces", 1)))
    return Table(("toolkit", "training tokens/s", "training tokens/s without validation",
                  "beam-5 sentences/s at best batch (batch)", "beam-5 sentences/s at batch 1",
                  "test output pieces per sentence"), rows).render().split("\n")


def by_threads_table(timing: dict) -> list[str]:
    """Every toolkit at every thread count the speed phase tried (its parts' ``by_threads``), when it tried several."""
    found = [part for part in ("training", "decoding")
             if any(len(summaries) > 1 for summaries in timing.get(part, {}).get("by_threads", {}).values())]
    if not found:
        return []
    cells: dict[tuple[str, str], dict] = {}
    for part in found:
        for name, summaries in timing[part]["by_threads"].items():
            for count, medians in summaries.items():
                cells.setdefault((name, count), {}).update(medians)
    shown = [column for column in SPEED_FIGURES if column[0] in found]
    rows = [(name, count, *(figure_cell(medians, key, digits) for _, key, _, _, digits in shown))
            for (name, count), medians in cells.items()]
    table = Table(("toolkit", "threads", *(title for _, _, _, title, _ in shown)), rows)
    return ["", "Each toolkit at each thread count (OMP_NUM_THREADS; medians over the rounds):", "",
            *table.render().split("\n")]


def threads_text(part: dict) -> str:
    threads = part["threads"] if isinstance(part["threads"], list) else [part["threads"]]
    if len(threads) == 1:
        return f"OMP_NUM_THREADS={threads[0]}"
    return (f"every toolkit at OMP_NUM_THREADS={', '.join(map(str, threads))} in turn, each figure of its row at the "
            "thread count where that figure was highest, named in it (the table below gives every count)")


def speed_section(timing: dict) -> list[str]:
    """What the speed phase measured and how, above its table."""
    lines = []
    if "training" in timing:
        part = timing["training"]
        lines.append(f"Training: {part['rounds']} rounds of {part['recipe']['updates']} updates "
                     f"({part['recipe']['warmup_steps']} warmup), the toolkits taking turns, one command at a time; "
                     f"the median over the rounds of the source tokens (pieces and eos) of the updates over the "
                     f"training loop's seconds as each toolkit's log times it, with and without its validations. "
                     f"{part['machine']}, {threads_text(part)}. `{part['command']}`")
    if "decoding" in timing:
        part = timing["decoding"]
        lines.append(f"Decoding: the quality phase's models of seed {part['seed']}, {part['rounds']} rounds, the "
                     "toolkits taking turns, one command at a time; each toolkit's own timer around its translation "
                     "(model loading not counted); the best batch size is the fastest of "
                     f"{part['batch_sizes']} on the first {part['select_sentences']} validation sentences, test2016 "
                     f"is timed at it, batch 1 on the first {part['batch1_sentences']} test sentences; medians over "
                     "the rounds. A model that writes longer translations decodes fewer sentences per second: "
                     f"compare where the output pieces per sentence are alike. {part['machine']}, "
                     f"{threads_text(part)}. `{part['command']}`")
    return [item for line in lines for item in (line, "")]


def markdown(results: dict, ctranslate2: Path | None = None, timing: dict | None = None,
             sweep: dict | None = None) -> str:
    timing = timing or {}
    budget, recipe = results["budget"], results["recipe"]
    baseline = results["baseline"]
    seeds = budget["seeds"]
    spread = ("one seed: no standard deviation" if len(seeds) == 1
              else f"mean ± sample standard deviation (n-1) over the seeds present, n = {len(seeds)}: {seeds}")
    waiting = [f"{run['toolkit']} seed {run['seed']}" for run in results["runs"] if "scores" not in run]
    lines = [
        "# Beside JoeyNMT and eole: the main job (attention GRU, Multi30k En->De)",
        "",
        f"**{results['label']}**",
        "",
        "## Quality",
        "",
        f"Budget: {budget['updates']} updates of {recipe['batch_size']} sentences for every toolkit (the main job: "
        f"{budget['main_job_updates']}), seeds {seeds}. Machine: {results['machine']}. "
        f"Each figure: {spread}. Command: `{results['command']}`.",
        "",
        f"test2016 ({results['data']['test']['sentences']} sentences), beam {recipe['num_beams']}, "
        + ("each toolkit's configuration and length penalty as its sweep chose them on validation"
           if results.get("tuned") else f"length penalty {recipe['length_penalty']}")
        + f", at most {recipe['max_new_tokens']} tokens; every output detokenized by the "
        "same tokenizer and scored in one sacreBLEU call per seed: "
        f"BLEU `{results['signatures']['bleu']}`, chrF `{results['signatures']['chrf']}`. Paired bootstrap "
        f"({results['bootstrap']['samples']} resamples, seed {results['bootstrap']['seed']}) against "
        f"{baseline} of the same seed." if "signatures" in results else "No seed has been scored yet.",
        "",
        *summary_table(results),
        "",
        "Training loop: its seconds as each toolkit's log times it (validation included); peak memory: the "
        "command's peak resident memory (kernel's ru_maxrss)."
        + (" These runs shared the machine, so their seconds are no speed figures: see Speed."
           if results.get("jobs", 1) > 1 else ""),
    ]
    if waiting:
        lines += ["", "Not scored yet (their seed lacks the baseline or a peer): " + ", ".join(waiting) + "."]
    if sweep:
        lines += ["", *sweep_section(sweep)]
    lines += ["", "## Speed (results/peers_timing.json)", ""]
    lines += ([*speed_section(timing), *speed_table(timing), *by_threads_table(timing)] if timing
              else ["Not measured yet."])
    if found := targets(results, timing):
        table = Table(("target", "value", "wanted", ""), [(t["name"], str(t["value"]), t["wanted"], t.get(
            "verdict", "met" if t["met"] else "missed")) for t in found])
        lines += ["", "Targets, on this run's budget and machine:", "", *table.render().split("\n")]
    if ceiling := decoding_ceiling(baseline, timing):
        lines += ["", ceiling]
    every_run = Table(
        ("toolkit", "seed", "test BLEU (bootstrap mean ± 95%)", "test chrF", "vs baseline", "training loop (s)",
         "command wall (s)"),
        [(run["toolkit"], str(run["seed"]),
          f"{run['scores']['bleu']['score']:.2f} ({run['scores']['bleu']['mean']:.2f} ± "
          f"{run['scores']['bleu']['ci']:.2f})", f"{run['scores']['chrf']['score']:.2f}", bootstrap_cell(run, baseline),
          f"{run['train']['train_s']:.0f}", f"{run['train']['wall_s']:.0f}") for run in scored(results)])
    lines += ["", "## Every run", "", *every_run.render().split("\n")]
    lines += ["", "## What differs", "",
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
    if ctranslate2 is not None:
        lines += extra_rows(ctranslate2)
    return "\n".join(lines).rstrip() + "\n"


def plot(results: dict, timing: dict, path: Path) -> None:
    """Up to three panels: test BLEU per toolkit (bars at the mean over the seeds, one standard deviation), and
    from the speed phase beam-5 sentences/s (best batch and batch 1) and training tokens/s (medians)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    quality = summarize(results)
    timed = speeds(timing)
    panels = [("test BLEU", [(row["toolkit"], row["bleu"]["mean"], row["bleu"]["sd"] or 0.0) for row in quality],
               "")]
    for title, key in (("beam-5 sentences/s, best batch", "best_batch_sents_per_s"),
                       ("beam-5 sentences/s, batch 1", "batch1_sents_per_s"),
                       ("training tokens/s", "train_tokens_per_s")):
        bars = [(name, medians[key], 0.0) for name, medians in timed.items() if key in medians]
        if bars:
            panels.append((title, bars, " (median)"))
    figure, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.6), squeeze=False)
    for axis, (title, bars, suffix) in zip(axes[0], panels):
        axis.bar(range(len(bars)), [bar[1] for bar in bars], yerr=[bar[2] for bar in bars], capsize=3)
        axis.set_xticks(range(len(bars)), [bar[0] for bar in bars])
        axis.set_title(title + suffix, fontsize=9)
    figure.suptitle(f"{results['label']}", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def docs_block(results: dict, timing: dict) -> str:
    """docs/peers.md's block: the results' label, quality table, the speed phase's table and the wall times of
    the commands."""
    lines = [f"**{results['label']}** (seeds {results['budget']['seeds']}, {results['budget']['updates']} updates; "
             f"{results['machine']})", "", *summary_table(results)]
    if speed := speed_table(timing):
        lines += ["", "Speed (the speed phase, results/peers_timing.json; medians):", "", *speed]
        if ceiling := decoding_ceiling(results["baseline"], timing):
            lines += ["", ceiling]
    lines += ["", "Wall time of each command (loading included; the quality phase's ran two at a time at one thread "
              "each when its runs say so, the speed phase's one at a time):", "", *wall_table(results, timing)]
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
    """peers.md and peers.png from ``results`` and, when there, the speed phase's ``out``/peers_timing.json."""
    timing = json.loads((out / TIMING).read_text()) if (out / TIMING).is_file() else {}
    sweep = json.loads((out / SWEEP_RESULTS).read_text()) if (out / SWEEP_RESULTS).is_file() else None
    (out / "peers.md").write_text(markdown(results, out / CTRANSLATE2, timing, sweep))
    plot(results, timing, out / "peers.png")
    if docs is not None:
        update_docs(results, timing, docs)


def resummarize(path: Path) -> None:
    """Recompute the ``median`` and ``by_threads`` of every part of the speed results at ``path`` from its ``runs``,
    and record in the part which code did (``summarized``: this commit; the runs keep their ``provenance``)."""
    timing, now = json.loads(path.read_text()), provenance([], [])
    for part, measured in timing.items():
        measured.update(speed_medians(part, measured["runs"]), summarized={
            "by": "benchmarks.peers.report.speed_medians", **{key: now[key] for key in ("commit", "tree_clean", "date")}})
    write_json(path, timing)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "results", help="the folder of peers.json")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs page whose table is rewritten")
    parser.add_argument("--no_docs", action="store_true", help="leave the docs page alone")
    parser.add_argument("--resummarize", action="store_true",
                        help="recompute each speed part's medians from its stored runs (`speed_medians`) into "
                             "peers_timing.json first, recording this commit (after a change of how they are summarized)")
    args = parser.parse_args(argv)
    if args.resummarize:
        resummarize(args.out / TIMING)
    render(json.loads((args.out / "peers.json").read_text()), args.out, None if args.no_docs else args.docs)


if __name__ == "__main__":
    main()
