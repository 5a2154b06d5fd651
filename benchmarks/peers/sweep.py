"""Each toolkit at its best, with the same tuning budget: every configuration of `recipe.SWEEP` (the same number per
toolkit: its peak learning rates by its own schedules) trained once (seed 1) on the main job's budget, then its
validation set decoded with beam 5 at every length penalty of `recipe.LENGTH_PENALTIES`; the configuration and length
penalty with the highest validation BLEU are each toolkit's choice, which `benchmarks.peers.run --tuned` trains on
three seeds and scores on test.

    python -m benchmarks.peers.sweep --jobs 2        # results/peers_sweep.json, a row per configuration
    python -m benchmarks.peers.sweep --architecture transformer --jobs 2   # results/peers_transformer_sweep.json

``--architecture`` picks the comparison (`architectures`): the main job's attention GRU (`recipe.SWEEP`, the default)
or our Transformer beside JoeyNMT's, eole's and MarianMTModel (`transformer_recipe.SWEEP`), each with its own results
file and work folder.

A row is stored as soon as its run ends (a re-run of the same configuration replaces it; rows made with another
recipe are dropped, the file says so), so that the sweep can be run in parts; `--toolkits` and `--configurations`
pick a part. A stored row lacking a length penalty of the list (stored before it grew) is decoded at it from the
model its run left under ``--work``, without training again, or trained again where that model is gone. Each run
trains at one thread; with ``--jobs 2`` two run at a time, so their seconds are no speed figures.
"""

import argparse
import concurrent.futures
import dataclasses
import json
import os
import shlex
import sys
from pathlib import Path

from hf_seqmodels.comparison.runner import write_json
from hf_seqmodels.evaluation import translation_metrics, translation_signatures
from hf_seqmodels.provenance import provenance

from . import architectures, toolkits
from . import data as peers_data
from .architectures import RNN, Architecture
from .invocations import run_by
from .recipe import LENGTH_PENALTIES, LENGTH_PENALTY_BOUNDS, LENGTH_PENALTY_STEP, Tuning

RESULTS = RNN.sweep_results
SEED = 1
DECODING_BATCH_SIZE = 64


def run_folder(work: Path, name: str, configuration: str) -> Path:
    """Where the sweep's run of ``name`` in ``configuration`` keeps its model, logs and translations."""
    return work / "sweep" / name / configuration


def validation_bleu(name: str, recipe, data: peers_data.PreparedData, folder: Path,
                    scores: dict | None = None) -> dict:
    """``scores`` (validation BLEU by length penalty, none by default) with the model trained in ``folder`` decoded
    at every length penalty its row still needs (`missing_penalties`: the grid, then one beyond an edge where the
    best sits, until it lies inside), beam search as the recipe says otherwise; the translations' output pieces per
    sentence beside each."""
    references = data.lines("validation", data.target_lang)
    scores = dict(scores or {})
    while needed := missing_penalties({"validation": scores}):
        for alpha in needed:
            translations, decoded = toolkits.decode(
                name, dataclasses.replace(recipe, length_penalty=alpha), data, folder,
                data.folder / peers_data.SPLITS["validation"], DECODING_BATCH_SIZE, SEED,
                f"validation_alpha{alpha:g}")
            scores[f"{alpha:g}"] = {"bleu": translation_metrics(translations, references)["bleu"],
                                    "mean_output_pieces": peers_data.mean_pieces(data.tokenizer(), translations),
                                    "seconds": decoded["seconds"]}
    return scores


def sweep_run(name: str, tuning: Tuning, recipe, data: peers_data.PreparedData, work: Path) -> dict:
    """Train ``name`` on ``recipe`` (of either architecture) with ``tuning`` (seed `SEED`) and score its validation
    set at every length penalty."""
    folder = run_folder(work, name, tuning.name)
    print(f"[sweep] {name} {tuning.name}: training", flush=True)
    trained = toolkits.train(name, recipe, data, folder, SEED, tuning)
    print(f"[sweep] {name} {tuning.name}: decoding the validation set", flush=True)
    return with_best({"toolkit": name, "configuration": tuning.name, "tuning": dataclasses.asdict(tuning),
                      "schedule_words": architectures.of(recipe).schedule_words[name, tuning.schedule], "seed": SEED,
                      "train": trained, "validation": validation_bleu(name, recipe, data, folder)})


def with_best(row: dict) -> dict:
    """``row`` with the length penalty of its highest validation BLEU and that BLEU."""
    scores = row["validation"]
    best = max(scores, key=lambda alpha: scores[alpha]["bleu"])
    return {**row, "best_length_penalty": float(best), "best_validation_bleu": scores[best]["bleu"]}


def missing_penalties(row: dict) -> tuple[float, ...]:
    """The length penalties ``row``'s validation still needs: those of `LENGTH_PENALTIES` it was not decoded at (a
    row stored before the list grew); once it has them all, where its best sits on the edge of those decoded, the
    next one beyond that edge (`LENGTH_PENALTY_STEP` further, within `LENGTH_PENALTY_BOUNDS`)."""
    grid = tuple(alpha for alpha in LENGTH_PENALTIES if f"{alpha:g}" not in row["validation"])
    if grid:
        return grid
    scores = {float(alpha): values["bleu"] for alpha, values in row["validation"].items()}
    best, low, high = max(scores, key=scores.get), min(scores), max(scores)
    if best == high and round(high + LENGTH_PENALTY_STEP, 2) <= LENGTH_PENALTY_BOUNDS[1]:
        return (round(high + LENGTH_PENALTY_STEP, 2),)
    if best == low and round(low - LENGTH_PENALTY_STEP, 2) >= LENGTH_PENALTY_BOUNDS[0]:
        return (round(low - LENGTH_PENALTY_STEP, 2),)
    return ()


def completed(row: dict, recipe, data: peers_data.PreparedData, work: Path) -> dict:
    """``row`` decoded at its `missing_penalties` too, from the model its run left under ``work``: a longer list of
    length penalties needs no training again."""
    folder = run_folder(work, row["toolkit"], row["configuration"])
    if not (folder / "model").is_dir():
        raise FileNotFoundError(f"{folder / 'model'} is gone: its validation cannot be decoded at "
                                f"{missing_penalties(row)}; run it again (--configurations {row['configuration']} "
                                "--rerun).")
    print(f"[sweep] {row['toolkit']} {row['configuration']}: decoding the validation set at "
          f"{missing_penalties(row)} (and beyond, while its best sits on an edge)", flush=True)
    return with_best({**row, "validation": validation_bleu(row["toolkit"], recipe, data, folder, row["validation"])})


def chosen(results: dict, architecture: Architecture = RNN) -> dict[str, dict]:
    """Per toolkit whose every configuration of ``architecture``'s sweep is in ``results``, decoded at every length
    penalty: its row of highest validation BLEU (a tie goes to the configuration listed first in its `SWEEP`). A
    toolkit with configurations missing or not decoded at every length penalty is left out."""
    choice = {}
    for name, tunings in architecture.sweep.items():
        rows = {row["configuration"]: row for row in results["runs"] if row["toolkit"] == name}
        if all(tuning.name in rows and not missing_penalties(rows[tuning.name]) for tuning in tunings):
            choice[name] = max((rows[tuning.name] for tuning in tunings),
                               key=lambda row: row["best_validation_bleu"])
    return choice


def chosen_tuning(results: dict, name: str, architecture: Architecture = RNN) -> tuple[Tuning, float]:
    """``name``'s chosen configuration and length penalty in ``architecture``'s sweep; a ValueError says what to run
    when its sweep is not complete."""
    choice = chosen(results, architecture).get(name)
    if choice is None:
        missing = [tuning.name for tuning in architecture.sweep[name]
                   if not any(row["toolkit"] == name and row["configuration"] == tuning.name
                              and not missing_penalties(row) for row in results["runs"])]
        option = "" if architecture is RNN else f"--architecture {architecture.name} "
        raise ValueError(f"The sweep of {name} lacks {', '.join(missing)}: run `python -m benchmarks.peers.sweep "
                         f"{option}--toolkits {name}` first.")
    return Tuning(**choice["tuning"]), choice["best_length_penalty"]


def swept_model(results: dict, work: Path, name: str, tuning: Tuning, seed: int) -> tuple[Path, dict] | None:
    """The folder under ``work`` and the training record of the sweep's run of ``name`` with ``tuning`` when it
    trained ``seed`` and its model is still there (the quality phase decodes it rather than train it again)."""
    folder = run_folder(work, name, tuning.name)
    row = next((row for row in results["runs"] if (row["toolkit"], row["configuration"], row["seed"])
                == (name, tuning.name, seed)), None)
    return (folder, row["train"]) if row is not None and (folder / "model").is_dir() else None


def pending(results: dict, names: list[str], configurations: list[str] | None, rerun: bool, work: Path,
            architecture: Architecture = RNN) -> tuple[list[tuple[str, Tuning]], list[dict]]:
    """What is left of ``architecture``'s sweep of ``names`` (only ``configurations`` where given): the runs to
    train, the toolkits
    taking turns so that a sweep stopped half-way has configurations of each (every one with ``rerun``), and the
    stored rows to decode at their `missing_penalties` from their models. A row lacking a length penalty whose model
    is gone from ``work`` (another machine, a cleaned folder) is trained again."""
    def picked(name: str, configuration: str) -> bool:
        return name in names and (configurations is None or configuration in configurations)

    incomplete = [row for row in results["runs"]
                  if missing_penalties(row) and picked(row["toolkit"], row["configuration"])]
    retrain = {(row["toolkit"], row["configuration"]) for row in incomplete
               if not (run_folder(work, row["toolkit"], row["configuration"]) / "model").is_dir()}
    done = {(row["toolkit"], row["configuration"]) for row in results["runs"]} - retrain
    table = architecture.sweep
    jobs = [(name, table[name][index]) for index in range(max(map(len, table.values())))
            for name in names if index < len(table[name])]
    jobs = [(name, tuning) for name, tuning in jobs
            if picked(name, tuning.name) and (rerun or (name, tuning.name) not in done)]
    trained = {(name, tuning.name) for name, tuning in jobs}
    return jobs, [row for row in incomplete if (row["toolkit"], row["configuration"]) not in trained]


def load(out: Path, recipe) -> dict:
    """The sweep's results in ``out`` made with ``recipe`` (their rows are kept; the file of its architecture), or a
    new, empty one."""
    path = out / architectures.of(recipe).sweep_results
    if path.is_file():
        earlier = json.loads(path.read_text())
        if earlier.get("recipe") == dataclasses.asdict(recipe):
            return earlier
        print(f"[sweep] {path} holds another recipe's runs: starting anew", flush=True)
    return {"runs": []}


def store(results: dict, row: dict, out: Path, architecture: Architecture = RNN) -> None:
    """Add ``row`` (replacing the same toolkit and configuration) and write ``architecture``'s file atomically."""
    key = (row["toolkit"], row["configuration"])
    order = [(name, tuning.name) for name, tunings in architecture.sweep.items() for tuning in tunings]
    results["runs"] = sorted([run for run in results["runs"] if (run["toolkit"], run["configuration"]) != key]
                             + [row], key=lambda run: order.index((run["toolkit"], run["configuration"])))
    results["chosen"] = {name: {"configuration": row["configuration"], "length_penalty": row["best_length_penalty"],
                                "validation_bleu": row["best_validation_bleu"]}
                         for name, row in chosen(results, architecture).items()}
    write_json(out / architecture.sweep_results, results)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    architectures.add_arguments(parser)
    parser.add_argument("--configurations", nargs="+", default=None,
                        help="only these configuration names (e.g. linear-lr0.003); default: every one not yet in "
                             "the results")
    parser.add_argument("--rerun", action="store_true", help="run configurations already in the results again")
    parser.add_argument("--updates", type=int, default=None,
                        help="updates for every run (default: the main job's); only for a short check")
    parser.add_argument("--warmup_steps", type=int, default=None, help="only for a check shorter than the warmup")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, each at one thread")
    parser.add_argument("--out", type=Path, default=toolkits.REPO_ROOT / "results")
    args = parser.parse_args(argv)
    architecture = architectures.parsed(parser, args, toolkits.REPO_ROOT / "outputs")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}.")
    known = {tuning.name for tunings in architecture.sweep.values() for tuning in tunings}
    unknown = sorted(set(args.configurations or ()) - known)
    if unknown:
        parser.error(f"--configurations: unknown {unknown}; valid options: {sorted(known)}.")
    for name in args.toolkits:
        if name in toolkits.PACKAGES:
            toolkits.peer_program(name)
    os.environ.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    data, recipe = architecture.recipe.prepared(args.work / "data", args.updates, args.warmup_steps)
    args.out.mkdir(parents=True, exist_ok=True)
    results = load(args.out, recipe)
    jobs, incomplete = pending(results, args.toolkits, args.configurations, args.rerun, args.work, architecture)
    command = shlex.join(["python", "-m", "benchmarks.peers.sweep", *(sys.argv[1:] if argv is None else argv)])
    results.update({
        "command": command, "recipe": dataclasses.asdict(recipe), "seed": SEED, "jobs": args.jobs,
        "split": "validation", "length_penalties": list(LENGTH_PENALTIES),
        "decoding": {"batch_size": DECODING_BATCH_SIZE, "num_beams": recipe.num_beams,
                     "max_new_tokens": recipe.max_new_tokens},
        "configurations": {name: [tuning.name for tuning in tunings] for name, tunings in architecture.sweep.items()},
        "signature": translation_signatures()["bleu_signature"], "differences": architecture.differences,
        "versions": {**results.get("versions", {}), **{name: toolkits.version(name) for name in args.toolkits}},
        "provenance": provenance([SEED], ["train", "validation"]),
    })
    failed = []
    stored = {(row["toolkit"], row["configuration"]): row for row in results["runs"]}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        running = {pool.submit(completed, row, recipe, data, args.work): (row["toolkit"], row["configuration"])
                   for row in incomplete}
        trained = {pool.submit(sweep_run, name, tuning, recipe, data, args.work): (name, tuning.name)
                   for name, tuning in jobs}
        running |= trained
        for finished in concurrent.futures.as_completed(running):
            try:
                row = finished.result()
            except Exception as error:  # the other runs go on; the failures are raised at the end
                failed.append(f"{running[finished]}: {error}")
                print(f"[sweep] {running[finished]} failed: {error}", flush=True)
                continue
            if finished in trained:
                row["run_by"] = run_by(results["provenance"], command)
                if running[finished] in stored:
                    # trained again: the scores of the run it replaces, kept beside, show whether a run is
                    # reproducible
                    row["earlier_validation_bleu"] = {alpha: scores["bleu"] for alpha, scores
                                                      in stored[running[finished]]["validation"].items()}
            store(results, toolkits.made_portable(row, args.work), args.out, architecture)
            print(f"[sweep] stored {running[finished]}: validation BLEU {row['best_validation_bleu']:.2f} at "
                  f"length penalty {row['best_length_penalty']:g}", flush=True)
    if failed:
        raise RuntimeError("These runs failed (the others are stored): " + "; ".join(failed))
    return results


if __name__ == "__main__":
    main()
