"""Our attention GRU beside JoeyNMT and eole: the same data, pieces, sizes and budget; test2016 BLEU / chrF with one
sacreBLEU call and a paired bootstrap against ours, training tokens/s, memory, parameters (decoding speed: the
decoding grid, `benchmarks.peers.decoding_grid`).

Two phases, each its own command, so that the full comparison can be run in parts, session by session:

    bash benchmarks/peers/setup.sh                        # once: .venv-peers/joeynmt and .venv-peers/eole
    # quality: train every toolkit and decode test2016 (beam 5), two runs at a time at one thread each; each
    # (toolkit, seed) is a row of results/peers.json as soon as it ends (a seed stored with the same configuration
    # is skipped; --rerun replaces it);
    # --tuned: each toolkit's configuration as its sweep chose it (python -m benchmarks.peers.sweep --jobs 2 first)
    python -m benchmarks.peers.run --tuned --seeds 1 --jobs 2
    # training speed, on a quiet machine, nothing else running: short training runs taking turns (ours, joeynmt,
    # eole, ours, ...), every toolkit at each thread count (its row at its fastest); results/peers_timing.json
    python -m benchmarks.peers.run --timing_rounds 3 --updates 100 --warmup_steps 50 --threads 1 2
    # the Transformer beside JoeyNMT's, eole's and MarianMTModel (quality only): results/peers_transformer.json
    python -m benchmarks.peers.run --architecture transformer --tuned --seeds 1 --jobs 2

Run it in our environment (.venv): it trains ours with scripts/run_translation.py and calls the peers' own commands
in their environments. Everything a run writes goes under ``--work`` (models, logs, configs, translations); the
results go to ``--out`` (peers.json, the test translations in peers_translations/, peers_timing.json; peers.md and
peers.png are rendered from them and the other results files beside them by `report`). Paths in the recorded
commands are relative to the repository (or to ``--work``, written ``<work>``). With ``--architecture transformer``
(`architectures`) its files are its own: peers_transformer.json, peers_transformer_translations/ and
peers_transformer.md in ``--out``, outputs/peers_transformer as ``--work``.
"""

import argparse
import concurrent.futures
import dataclasses
import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

from hf_seqmodels.comparison.runner import write_json
from hf_seqmodels.comparison.significance import paired_bootstrap
from hf_seqmodels.provenance import provenance

from . import architectures, report, sweep, toolkits
from . import data as peers_data
from .architectures import RNN, Architecture
from .invocations import run_by
from .recipe import Recipe
from .toolkits import made_portable, portable

LEFT_OUT = {
    "OpenNMT-py": "3.5.1 pins torch<2.3 (it installs only with --no-deps) and its checkpoints fail torch's "
                  "weights_only loading; eole is its maintained successor",
    "fairseq": "0.12.2 (the last release) does not import on Python 3.11",
}
TRANSLATIONS = RNN.translations  # beside peers.json: each quality run's test translations, <toolkit>.seed<n>.txt


def quality_run(name: str, recipe, data: peers_data.PreparedData, seed: int,
                args: argparse.Namespace) -> tuple[dict, list[str]]:
    """Train ``name`` and decode test2016 at ``--decoding_batch_size``. Returns its row (without scores) and its
    test translations. With ``--jobs`` above 1 its seconds are not speed figures (the runs share the machine)."""
    tuning, length_penalty = args.tunings[name]
    swept = sweep.swept_model(args.swept, args.work, name, tuning, seed) if args.swept else None
    if swept is None:
        folder = args.work / name / f"seed{seed}"
        print(f"[peers] {name}, seed {seed}: training ({tuning.name})", flush=True)
        trained = toolkits.train(name, recipe, data, folder, seed, tuning)
    else:  # the sweep trained this very run (same recipe, configuration and seed)
        folder, trained = swept[0], {**swept[1], "trained_by": "benchmarks.peers.sweep"}
    print(f"[peers] {name}, seed {seed}: decoding test2016 at batch {args.decoding_batch_size}, length penalty "
          f"{length_penalty:g}", flush=True)
    translations, test = toolkits.decode(name, dataclasses.replace(recipe, length_penalty=length_penalty), data,
                                         folder, data.folder / peers_data.SPLITS["test"], args.decoding_batch_size,
                                         seed, "test")
    test["mean_output_pieces"] = peers_data.mean_pieces(data.tokenizer(), translations)
    stats = data.stats()["train"]
    row = {"toolkit": name, "seed": seed, "tuning": dataclasses.asdict(tuning), "length_penalty": length_penalty,
           "batch_size": recipe.batch_size,
           "mean_source_tokens": stats["source_tokens"] / stats["sentences"], "train": trained,
           "decode": {"test": test}}
    return made_portable(row, args.work), translations


def translations_path(out: Path, name: str, seed: int, architecture: Architecture = RNN) -> Path:
    return out / architecture.translations / f"{name}.seed{seed}.txt"


def score_seed(results: dict, seed: int, out: Path, references: list[str], architecture: Architecture = RNN) -> None:
    """Score the runs of ``seed`` in ``results`` in one paired bootstrap over their stored test translations (in
    ``architecture``'s folder), the baseline first; until the baseline and a peer of that seed are both present, its
    runs stay unscored."""
    runs = [run for run in results["runs"] if run["seed"] == seed]
    runs.sort(key=lambda run: run["toolkit"] != results["baseline"])
    if len(runs) < 2 or runs[0]["toolkit"] != results["baseline"]:
        return
    compared = paired_bootstrap({run["toolkit"]: translations_path(out, run["toolkit"], seed, architecture).read_text(
        encoding="utf-8").splitlines() for run in runs}, references)
    for run in runs:
        run["scores"] = compared["systems"][run["toolkit"]]
    results.update(signatures=compared["signatures"], bootstrap={"samples": compared["samples"],
                                                                 "seed": compared["seed"]})


def store(results: dict, row: dict, translations: list[str], out: Path, references: list[str],
          architecture: Architecture = RNN) -> None:
    """Add ``row`` to ``results`` (replacing the row of the same toolkit and seed), write its translations, rescore
    its seed and write ``architecture``'s results file (peers.json) atomically: a run stopped later leaves the rows
    stored so far intact."""
    path = translations_path(out, row["toolkit"], row["seed"], architecture)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".tmp")
    temp.write_text("".join(f"{line}\n" for line in translations), encoding="utf-8")
    temp.replace(path)
    results["runs"] = sorted(
        [run for run in results["runs"] if (run["toolkit"], run["seed"]) != (row["toolkit"], row["seed"])] + [row],
        key=lambda run: (run["seed"], architecture.toolkits.index(run["toolkit"])))
    results["budget"]["seeds"] = sorted({run["seed"] for run in results["runs"]})
    results["toolkits"] = [name for name in architecture.toolkits if any(run["toolkit"] == name
                                                                         for run in results["runs"])]
    score_seed(results, row["seed"], out, references, architecture)
    write_json(out / architecture.results, results)


def earlier_results(out: Path, recipe, tuned: bool) -> dict | None:
    """The results of ``recipe``'s architecture (peers.json for the main job's) when they were made with ``recipe``
    and the same ``tuned`` (their rows are kept); None when there are none, or when they were made otherwise (a new
    comparison replaces them: the json says which)."""
    path = out / architectures.of(recipe).results
    if not path.is_file():
        return None
    earlier = json.loads(path.read_text())
    if earlier.get("recipe") != dataclasses.asdict(recipe) or earlier.get("tuned", False) != tuned:
        print(f"[peers] {path} holds another recipe's runs (label {earlier.get('label')!r}): starting anew",
              flush=True)
        return None
    return earlier


def left_to_run(results: dict, jobs: list[tuple[str, int]], tunings: dict, rerun: bool) -> list[tuple[str, int]]:
    """The (toolkit, seed) runs of ``jobs`` still to run: all with ``rerun``; else those without a stored row of the
    same configuration and length penalty (``tunings``: toolkit -> (`Tuning`, length penalty)), so that a quality
    phase cut short goes on where it stopped, and a row of an earlier choice is run again."""
    stored = {(run["toolkit"], run["seed"]): (run["tuning"], run["length_penalty"]) for run in results["runs"]}
    return [(name, seed) for name, seed in jobs
            if rerun or stored.get((name, seed)) != (dataclasses.asdict(tunings[name][0]), tunings[name][1])]


def quality(recipe, data: peers_data.PreparedData, args: argparse.Namespace, command: str) -> dict:
    """The quality phase of ``recipe``'s architecture: every (toolkit, seed) trained and decoding test2016, ``--jobs``
    at a time, each stored in its results file (peers.json) when it ends (`store`), then its report rendered
    (peers.md and peers.png; the Transformer's: `report.render_comparison`)."""
    architecture = architectures.of(recipe)
    stats = data.stats()
    references = data.lines("test", data.target_lang)
    machine = provenance(args.seeds, ["train", "validation", "test"])
    machine["argv"] = shlex.split(portable(shlex.join(machine["argv"]), args.work))
    results = earlier_results(args.out, recipe, args.tuned) or {"runs": [], "budget": {
        "updates": recipe.updates,
        "main_job_updates": architecture.recipe.main_job(stats["train"]["sentences"]).updates}}
    timing = f" (see {report.TIMING})" if architecture is RNN else ""
    parallel = (f", {args.jobs} runs at a time: their seconds are not speed figures{timing}"
                if args.jobs > 1 else ", one run at a time")
    results.update({
        "label": args.label, "command": command, "baseline": architecture.toolkits[0], "jobs": args.jobs,
        "tuned": args.tuned,
        "recipe": dataclasses.asdict(recipe), "decoding": {"batch_size": args.decoding_batch_size}, "data": stats,
        "machine": f"{machine['machine']['cpu']}, {machine['machine']['cpu_count']} cores, "
                   f"OMP_NUM_THREADS={args.threads[0]} for every command{parallel}",
        "provenance": machine,
        "versions": {**results.get("versions", {}), **{name: toolkits.version(name) for name in args.toolkits}},
        "same_for_all": architecture.module.same_for_all(recipe, stats),
        "differences": {name: architecture.differences[name] for name in architecture.toolkits
                        if name in architecture.differences},
        "left_out": LEFT_OUT,
    })
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = left_to_run(results, [(name, seed) for seed in args.seeds
                                 for name in sorted(args.toolkits, key=architecture.longest_first.index)],
                       args.tunings, args.rerun)
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        running = {pool.submit(quality_run, name, recipe, data, seed, args): (name, seed) for name, seed in jobs}
        for done in concurrent.futures.as_completed(running):
            try:
                row, translations = done.result()
            except Exception as error:  # the other runs go on; the failures are raised at the end
                failed.append(f"{running[done]}: {error}")
                print(f"[peers] {running[done]} failed: {error}", flush=True)
                continue
            row["run_by"] = run_by(machine, command, threads=args.threads[0], jobs=args.jobs)
            store(results, row, translations, args.out, references, architecture)
            print(f"[peers] stored {running[done]} in {args.out / architecture.results}", flush=True)
    if architecture is RNN:
        report.render(results, args.out, report.DOCS if official(args.out) else None)
    else:
        report.render_comparison(results, args.out, architecture)
    if failed:
        raise RuntimeError("These runs failed (the others are stored): " + "; ".join(failed))
    return results


def threads_of(args: argparse.Namespace) -> Iterator[int]:
    """Each of ``--threads`` in turn, set as OMP_NUM_THREADS of the commands that follow."""
    for threads in args.threads:
        os.environ["OMP_NUM_THREADS"] = str(threads)
        yield threads


def training_speed(recipe: Recipe, data: peers_data.PreparedData, args: argparse.Namespace) -> dict:
    """Training speed alone: every toolkit trains the recipe ``--timing_rounds`` times at each of ``--threads``, the
    toolkits taking turns (ours, joeynmt, eole, ours, ...), so that a machine whose load changes slows each alike;
    nothing is decoded. Each run's record (with the load average before it) and, per toolkit and thread count, the
    median tokens/s over the rounds, with and without the validations inside the training loop (each toolkit
    validates differently: ours decodes the validation set greedily and scores BLEU, eole computes its loss only);
    each figure at the toolkit's fastest thread count for it (`report.speed_medians`)."""
    stats, seed, runs = data.stats()["train"], args.seeds[0], []
    for round_ in range(args.timing_rounds):
        for threads in threads_of(args):
            for name in args.toolkits:
                print(f"[peers] training round {round_ + 1}/{args.timing_rounds}, {threads} threads: {name}",
                      flush=True)
                load = os.getloadavg()[0]
                trained = toolkits.train(name, recipe, data,
                                         args.work / "timing" / name / f"round{round_}-threads{threads}", seed,
                                         args.tunings[name][0])
                runs.append(made_portable({
                    "toolkit": name, "round": round_, "threads": threads, "seed": seed,
                    "batch_size": recipe.batch_size, "mean_source_tokens": stats["source_tokens"] / stats["sentences"],
                    "load_before": load, "train": trained}, args.work))

    return {"recipe": dataclasses.asdict(recipe), "rounds": args.timing_rounds,
            **report.speed_medians(runs), "runs": runs}


def speed(recipe: Recipe, data: peers_data.PreparedData, args: argparse.Namespace, command: str) -> dict:
    """The training speed phase: `training_speed` into peers_timing.json's ``training``, then the report rendered
    when peers.json exists."""
    machine = provenance([args.seeds[0]], ["train"])["machine"]
    part = {"command": command, "label": args.label, "threads": args.threads,
            "machine": f"{machine['cpu']}, {machine['cpu_count']} cores"}
    # its provenance taken when it ends (the machine's load then; commit and versions as at the start)
    timed = {"training": {**part, **training_speed(recipe, data, args),
                          "provenance": provenance([args.seeds[0]], ["train", "validation"])}}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / report.TIMING, timed)
    print(json.dumps({key: value["median"] for key, value in timed.items()}, indent=2))
    if (args.out / "peers.json").is_file():
        report.render(json.loads((args.out / "peers.json").read_text()), args.out,
                      report.DOCS if official(args.out) else None)
    return timed


def official(out: Path) -> bool:
    """Whether ``out`` is the repository's results/ (then docs/peers.md's table is rewritten too)."""
    return out.resolve() == (toolkits.REPO_ROOT / "results").resolve()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    architectures.add_arguments(parser)
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3],
                        help="a quality run per toolkit and seed; the training speed phase uses the first")
    parser.add_argument("--updates", type=int, default=None,
                        help="updates for every toolkit (default: the main job's, its epochs of batches)")
    parser.add_argument("--warmup_steps", type=int, default=None,
                        help="warmup updates (default: the main job's); only for a check shorter than its warmup")
    parser.add_argument("--jobs", type=int, default=1,
                        help="quality phase: runs at a time (each at --threads); above 1 their seconds are not "
                             "speed figures, which come from the training speed phase")
    parser.add_argument("--decoding_batch_size", type=int, default=64,
                        help="quality phase: sentences per batch when decoding test2016")
    parser.add_argument("--timing_rounds", type=int, default=0,
                        help="training speed phase (the rnn architecture's): train every toolkit this many times, "
                             "taking turns, decode nothing; the median tokens/s of each in --out/peers_timing.json "
                             "(no quality runs)")
    parser.add_argument("--threads", nargs="+", type=int, default=None,
                        help="OMP_NUM_THREADS of every command (default: the cores this process may use, divided "
                             "by --jobs); the training speed phase takes several, times every toolkit at each and "
                             "gives each toolkit's row at its fastest")
    parser.add_argument("--rerun", action="store_true",
                        help="quality phase: train and score again the (toolkit, seed) runs already stored with the "
                             "same configuration and length penalty (by default they are kept and skipped)")
    parser.add_argument("--tuned", action="store_true",
                        help="train each toolkit with the configuration and length penalty its sweep chose on "
                             "validation (--out/peers_sweep.json, `python -m benchmarks.peers.sweep`; the "
                             "transformer's: peers_transformer_sweep.json); without it, the recipe as each toolkit "
                             "says it, with its first schedule, length penalty 1.0")
    parser.add_argument("--label", default="full run: the main job's budget",
                        help="what the run is, printed above its table (say when it is a short check)")
    parser.add_argument("--out", type=Path, default=toolkits.REPO_ROOT / "results",
                        help="peers.json, peers_translations/, peers_timing.json, peers.{md,png} (the transformer's: "
                             "peers_transformer.json, peers_transformer_translations/, peers_transformer.md); when "
                             "it is the repository's results/, docs/peers.md's table is rewritten too (rnn only)")
    args = parser.parse_args(argv)
    architecture = architectures.parsed(parser, args, toolkits.REPO_ROOT / "outputs")
    if args.threads is None:
        args.threads = [max(1, len(os.sched_getaffinity(0)) // args.jobs)]
    if min(args.threads) < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}.")
    for name in ("updates", "warmup_steps", "jobs", "decoding_batch_size"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}.")
    if args.timing_rounds < 0:
        parser.error(f"--timing_rounds must be at least 0, got {args.timing_rounds}.")
    timing_phase = args.timing_rounds > 0
    if not timing_phase and len(args.threads) > 1:
        parser.error(f"--threads takes several counts in the training speed phase only (--timing_rounds); the "
                     f"quality phase runs at one, got {args.threads}.")
    if timing_phase and args.jobs > 1:
        parser.error("--jobs is for the quality phase: the training speed phase (--timing_rounds) runs one command "
                     "at a time; leave --jobs out.")
    if timing_phase and architecture is not RNN:
        parser.error("--timing_rounds: the training speed phase is the rnn architecture's; leave it out.")
    for name in args.toolkits:
        if name in toolkits.PACKAGES:
            toolkits.peer_program(name)  # fails now, with the setup command, rather than after training ours
    command = portable(shlex.join(["python", "-m", "benchmarks.peers.run",
                                   *(sys.argv[1:] if argv is None else argv)]), args.work)

    # Every command runs in this environment: the same threads, and idle OpenMP threads sleeping rather than
    # spinning, as scripts/quickstart.sh runs the main job on a busy machine.
    os.environ.update(OMP_NUM_THREADS=str(args.threads[0]), OMP_WAIT_POLICY="PASSIVE")
    data, recipe = architecture.recipe.prepared(args.work / "data", args.updates, args.warmup_steps)
    args.swept = sweep.load(args.out, recipe) if args.tuned else None
    args.tunings = {name: sweep.chosen_tuning(args.swept, name, architecture) if args.tuned else
                    (recipe.untuned(name), recipe.length_penalty) for name in args.toolkits}
    if timing_phase:
        return speed(recipe, data, args, command)
    results = quality(recipe, data, args, command)
    print((args.out / f"{architecture.stem}.md").read_text())
    return results


if __name__ == "__main__":
    main()
