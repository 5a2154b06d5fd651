"""Our attention GRU beside JoeyNMT and eole: the same data, pieces, sizes and budget; test2016 BLEU / chrF with one
sacreBLEU call and a paired bootstrap against ours, training tokens/s, beam-5 decoding speed, memory, parameters.

    bash benchmarks/peers/setup.sh                        # once: .venv-peers/joeynmt and .venv-peers/eole
    python -m benchmarks.peers.run                        # the main job's budget (3 epochs of updates), seeds 1 2 3
    python -m benchmarks.peers.run --updates 300 --seeds 1 --label "pipeline check: ..."   # a short budget
    python -m benchmarks.peers.run --toolkits ours eole --updates 100 --warmup_steps 50 --timing_rounds 3
        # training speed only: short runs taking turns, the median tokens/s of each (results/peers_timing.json)

Run it in our environment (.venv): it trains ours with scripts/run_translation.py and calls the peers' own commands
in their environments, one toolkit at a time. Everything a run writes goes under ``--work`` (models, logs,
configs, translations); the results go to ``--out``/peers.{json,md,png} (the md and png are rendered from the json
by `report`). Runs of seeds already in peers.json with the same recipe are kept, so seeds can be added run by run.
"""

import argparse
import dataclasses
import json
import os
import shlex
import statistics
import sys
from pathlib import Path

from hf_seqmodels.comparison.significance import paired_bootstrap
from hf_seqmodels.provenance import provenance
from hf_seqmodels.tasks import translation

from . import data as peers_data
from . import report, toolkits
from .recipe import DIFFERENCES, Recipe

LEFT_OUT = {
    "OpenNMT-py": "3.5.1 pins torch<2.3 (it installs only with --no-deps) and its checkpoints fail torch's "
                  "weights_only loading; eole is its maintained successor",
    "fairseq": "0.12.2 (the last release) does not import on Python 3.11",
}


def same_for_all(recipe: Recipe, stats: dict) -> str:
    """What every toolkit is given alike, in words (results and docs)."""
    return (f"the Multi30k rows ({stats['train']['sentences']:,} training pairs, {stats['validation']['sentences']:,} "
            f"validation and {stats['test']['sentences']:,} test2016 sentences); one joint BPE vocabulary of "
            f"{stats['vocab_size']:,} learned on the training rows (our tokenizer, given to every toolkit as "
            "space-separated pieces, so that all read the same tokens; the longest training sentence has "
            f"{stats['train']['longest_pieces']} pieces, under every length limit); embeddings "
            f"{recipe.embedding_size}, decoder {recipe.cell_type.upper()} {recipe.hidden_size}, Luong general "
            f"attention without input feeding, dropout {recipe.dropout}, decoder embeddings tied with the output "
            f"layer; Adam(W) without weight decay, peak learning rate {recipe.learning_rate} after "
            f"{recipe.warmup_steps} warmup updates, label smoothing {recipe.label_smoothing}, gradient norm clipped "
            f"at {recipe.max_grad_norm}, the loss averaged over target tokens, {recipe.batch_size} sentences per "
            f"update, {recipe.updates} updates, a validation every {recipe.validation_every}; beam "
            f"{recipe.num_beams}, length penalty {recipe.length_penalty}, at most {recipe.max_new_tokens} tokens; "
            "torch 2.13.0 on the CPU and the same environment (threads) for every command")


def subset(data: peers_data.PreparedData, split: str, count: int, name: str) -> Path:
    """The first ``count`` rows of ``split`` as files of stem ``name`` (raw and pieces, both languages)."""
    stem = data.folder / name
    for lang in (data.source_lang, data.target_lang):
        for pieces, suffix in ((False, ""), (True, ".tok")):
            lines = data.lines(split, lang, pieces=pieces)[:count]
            Path(f"{stem}{suffix}.{lang}").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return stem


def run_toolkit(name: str, recipe: Recipe, data: peers_data.PreparedData, work: Path, seed: int,
                args: argparse.Namespace, rows: dict[str, Path]) -> tuple[dict, list[str]]:
    """Train ``name`` and decode: the validation subset at every batch size, test2016 at the fastest, the batch-1
    subset at 1. Returns its run record and its test translations."""
    folder = work / name / f"seed{seed}"
    print(f"[peers] {name}, seed {seed}: training", flush=True)
    trained = toolkits.train(name, recipe, data, folder, seed)
    select = {}
    for size in args.batch_sizes:
        print(f"[peers] {name}, seed {seed}: decoding {args.select_sentences} validation sentences at batch {size}",
              flush=True)
        select[size] = toolkits.decode(name, recipe, data, folder, rows["select"], size, seed, f"select_b{size}")[1]
    best = max(select, key=lambda size: report.sentences_per_second(select[size]))
    print(f"[peers] {name}, seed {seed}: decoding test2016 at batch {best}, then at batch 1", flush=True)
    translations, test = toolkits.decode(name, recipe, data, folder, rows["test"], best, seed, "test")
    test["mean_output_pieces"] = peers_data.mean_pieces(data.tokenizer(), translations)
    batch1 = toolkits.decode(name, recipe, data, folder, rows["batch1"], 1, seed, "batch1")[1]
    (folder / "test_translations.txt").write_text("".join(f"{line}\n" for line in translations), encoding="utf-8")
    stats = data.stats()["train"]
    return {"toolkit": name, "seed": seed, "batch_size": recipe.batch_size,
            "mean_source_tokens": stats["source_tokens"] / stats["sentences"], "train": trained,
            "decode": {"select": select, "best_batch_size": best, "test": test, "batch1": batch1}}, translations


def timing(recipe: Recipe, data: peers_data.PreparedData, args: argparse.Namespace) -> dict:
    """Training speed alone: every toolkit trains the recipe ``--timing_rounds`` times, the toolkits taking turns
    (ours, eole, ours, eole, ...), so that a machine whose load changes slows each alike; nothing is decoded. Each
    run's record (with the load average before it) and, per toolkit, the median tokens/s over the rounds, with and
    without the validations inside the training loop (each toolkit validates differently: ours decodes the
    validation set greedily and scores BLEU, eole computes its loss only)."""
    stats, seed, runs = data.stats()["train"], args.seeds[0], []
    for round_ in range(args.timing_rounds):
        for name in args.toolkits:
            print(f"[peers] timing round {round_ + 1}/{args.timing_rounds}: {name}", flush=True)
            load = os.getloadavg()[0]
            trained = toolkits.train(name, recipe, data, args.work / "timing" / name / f"round{round_}", seed)
            runs.append({"toolkit": name, "round": round_, "seed": seed, "batch_size": recipe.batch_size,
                         "mean_source_tokens": stats["source_tokens"] / stats["sentences"], "load_before": load,
                         "train": trained})
    medians = {}
    for name in args.toolkits:
        mine = [run for run in runs if run["toolkit"] == name]
        medians[name] = {key: statistics.median(report.train_tokens_per_second(run, without) for run in mine)
                         for key, without in (("train_tokens_per_s", False),
                                              ("train_tokens_per_s_without_validation", True))}
    return {"label": args.label, "recipe": dataclasses.asdict(recipe), "rounds": args.timing_rounds,
            "median": medians, "runs": runs}


def score(runs: list[dict], translations: dict[str, list[str]], references: list[str]) -> dict:
    """One paired bootstrap over a seed's toolkits (the first is the baseline); each run gets its ``scores``."""
    compared = paired_bootstrap(translations, references)
    for run in runs:
        run["scores"] = compared["systems"][run["toolkit"]]
    return compared


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--toolkits", nargs="+", default=list(toolkits.TOOLKITS), choices=toolkits.TOOLKITS,
                        help="the first is the baseline of the paired bootstrap")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3], help="a run per toolkit and seed")
    parser.add_argument("--updates", type=int, default=None,
                        help="updates for every toolkit (default: the main job's, its epochs of batches)")
    parser.add_argument("--warmup_steps", type=int, default=None,
                        help="warmup updates (default: the main job's); only for a check shorter than its warmup")
    parser.add_argument("--batch_sizes", nargs="+", type=int, default=[16, 64, 128],
                        help="decoding batch sizes tried on validation sentences; test2016 runs at the fastest")
    parser.add_argument("--select_sentences", type=int, default=300, help="validation sentences to pick the batch")
    parser.add_argument("--batch1_sentences", type=int, default=100, help="test sentences decoded at batch 1")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="OMP_NUM_THREADS of every command (default: the cores this process may use)")
    parser.add_argument("--timing_rounds", type=int, default=None,
                        help="training speed only: train every toolkit this many times, taking turns, decode "
                             "nothing, and write --out/peers_timing.json (the median tokens/s of each) instead of "
                             "the comparison")
    parser.add_argument("--label", default="full run: the main job's budget",
                        help="what the run is, printed above its table (say when it is a short check)")
    parser.add_argument("--work", type=Path, default=toolkits.REPO_ROOT / "outputs" / "peers",
                        help="models, logs, configs and translations")
    parser.add_argument("--out", type=Path, default=toolkits.REPO_ROOT / "results",
                        help="peers.{json,md,png}; when it is the repository's results/, docs/peers.md's table is "
                             "rewritten too")
    args = parser.parse_args(argv)
    for name in ("select_sentences", "batch1_sentences", "updates", "warmup_steps", "threads", "timing_rounds"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}.")
    if min(args.batch_sizes) < 1:
        parser.error(f"--batch_sizes must be at least 1, got {args.batch_sizes}.")
    for name in args.toolkits:
        if name != "ours":
            toolkits.peer_program(name)  # fails now, with the setup command, rather than after training ours

    # Every command runs in this environment: the same threads, and idle OpenMP threads sleeping rather than
    # spinning, as scripts/quickstart.sh runs the main job on a busy machine.
    os.environ.update(OMP_NUM_THREADS=str(args.threads), OMP_WAIT_POLICY="PASSIVE")
    data_args = translation.DataArguments()
    data = peers_data.prepare(args.work / "data", data_args)
    stats = data.stats()
    recipe = Recipe.main_job(stats["train"]["sentences"], args.updates)
    if args.warmup_steps is not None:
        recipe = dataclasses.replace(recipe, warmup_steps=args.warmup_steps)
    recipe.check()
    if args.timing_rounds is not None:
        timed = {**timing(recipe, data, args), "machine": provenance([args.seeds[0]], ["train"])["machine"],
                 "threads": args.threads}
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "peers_timing.json").write_text(json.dumps(timed, indent=2) + "\n")
        print(json.dumps(timed["median"], indent=2))
        return timed
    rows = {"select": subset(data, "validation", args.select_sentences, "select"),
            "batch1": subset(data, "test", args.batch1_sentences, "batch1"),
            "test": data.folder / peers_data.SPLITS["test"]}
    references = data.lines("test", data.target_lang)

    earlier = json.loads((args.out / "peers.json").read_text()) if (args.out / "peers.json").is_file() else None
    kept = []
    if earlier is not None and earlier["recipe"] == dataclasses.asdict(recipe) and earlier["toolkits"] == args.toolkits:
        kept = [run for run in earlier["runs"] if run["seed"] not in args.seeds]
    runs, compared = [], None
    for seed in args.seeds:
        seed_runs, translations = [], {}
        for name in args.toolkits:
            run, translations[name] = run_toolkit(name, recipe, data, args.work, seed, args, rows)
            seed_runs.append(run)
        compared = score(seed_runs, translations, references)
        runs += seed_runs
    seeds = sorted({run["seed"] for run in kept + runs})
    record = provenance(seeds, ["train", "validation", "test"])
    machine = record["machine"]
    results = {
        "label": args.label,
        "command": shlex.join(["python", "-m", "benchmarks.peers.run", *(sys.argv[1:] if argv is None else argv)]),
        "toolkits": args.toolkits,
        "baseline": args.toolkits[0],
        "budget": {"updates": recipe.updates, "main_job_updates": Recipe.main_job(stats["train"]["sentences"]).updates,
                   "seeds": seeds},
        "recipe": dataclasses.asdict(recipe),
        "decoding": {"batch_sizes": args.batch_sizes, "select_sentences": args.select_sentences,
                     "batch1_sentences": args.batch1_sentences},
        "data": stats,
        "machine": f"{machine['cpu']}, {machine['cpu_count']} cores, OMP_NUM_THREADS={args.threads} for every command",
        "provenance": record,
        "signatures": compared["signatures"], "bootstrap": {"samples": compared["samples"], "seed": compared["seed"]},
        "versions": {name: toolkits.version(name) for name in args.toolkits},
        "same_for_all": same_for_all(recipe, stats),
        "differences": {name: DIFFERENCES[name] for name in args.toolkits if name in DIFFERENCES},
        "left_out": LEFT_OUT,
        "runs": sorted(kept + runs, key=lambda run: (run["seed"], args.toolkits.index(run["toolkit"]))),
    }
    official = args.out.resolve() == (toolkits.REPO_ROOT / "results").resolve()
    report.write(results, args.out, report.DOCS if official else None)
    print((args.out / "peers.md").read_text())
    return results


if __name__ == "__main__":
    main()
