"""Decoding speed like for like: ours, JoeyNMT and eole timed in the same scope (raw test2016 source lines in,
detokenized translations out, model loading not counted) at every batch size and thread count, the toolkits taking
turns item by item.

    python -m benchmarks.peers.decoding_grid --models ours=WORK/ours/seed1/model \\
        joeynmt=WORK/joeynmt/seed1/model eole=WORK/eole/seed1/model --batch_sizes 1 16 64 128 256 --threads 1 2 \\
        --rounds 3 --sentences 200 --out results/peers_decoding.json

Run it in our environment (.venv) on a quiet machine, after the quality phase of `benchmarks.peers.run` has trained
the models (WORK is its ``--work``; ``--data`` its data folder). For each thread count, one server process per
toolkit (`serve_ours`, and `serve_joeynmt` / `serve_eole` in the peers' environments) loads its model once with
OMP_NUM_THREADS and torch's threads at that count; then in each round, for each batch size, each toolkit in turn
decodes the sentences (`serving`'s line protocol): all of test2016, or its first ``--sentences`` at batch 1. Every
toolkit decodes the same batches (`serving.batches`) with the same search (beam ``num_beams``, at most
``max_new_tokens`` tokens, the recipe's length penalty in each toolkit's formula unless ``--length_penalties``
says otherwise). The json holds every measurement, the medians (`report_decoding.summary`) and the paired rounds
(`report_decoding.paired`); the table is printed (`report_decoding.markdown`).
"""

import argparse
import dataclasses
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from hf_seqmodels.comparison.runner import write_json
from hf_seqmodels.provenance import provenance
from hf_seqmodels.tasks import translation

from . import report_decoding, toolkits
from .data import PreparedData
from .recipe import Recipe, eole_predict_arguments
from .toolkits import portable

SERVERS = {name: f"benchmarks.peers.serve_{name}" for name in toolkits.TOOLKITS}


class Server:
    """One toolkit's server process at one thread count: started (its model loaded) by `start`, asked for one
    measurement at a time by `ask`, ended by `close`. Its standard error goes to ``log``."""

    def __init__(self, name: str, command: list[str], threads: int, log: Path):
        self.name, self.command, self.threads, self.log = name, command, threads, log
        self.process: subprocess.Popen | None = None
        self.ready: dict = {}

    def start(self) -> dict:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads), "OMP_WAIT_POLICY": "PASSIVE",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(toolkits.REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        with self.log.open("w", encoding="utf-8") as handle:
            handle.write(f"$ {shlex.join(self.command)}\n")
            handle.flush()
            self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=handle, text=True, encoding="utf-8", cwd=toolkits.REPO_ROOT,
                                            env=env, bufsize=1)
        self.ready = self.answer()
        if not self.ready.get("ready"):
            raise RuntimeError(f"{self.name} did not say it was ready: {self.ready}")
        return self.ready

    def answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            tail = "".join(self.log.read_text(encoding="utf-8").splitlines(keepends=True)[-20:])
            raise RuntimeError(f"The {self.name} server ended (exit {self.process.returncode}); the end of {self.log}:"
                               f"\n{tail}")
        return json.loads(line)

    def ask(self, command: dict) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.answer()

    def close(self) -> None:
        """End the server: its input closed, it exits when its last measurement is written."""
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait(timeout=120)
            self.process.stdout.close()


def server_command(name: str, model: Path, data: PreparedData, recipe: Recipe, threads: int, seed: int) -> list[str]:
    """The command of ``name``'s server: its environment's interpreter, the model, test2016's raw sources, our
    tokenizer.json and the recipe's search (for eole, also the ``eole predict`` options the quality phase gives)."""
    python = sys.executable if name == "ours" else str(toolkits.peer_program(name))
    command = [python, "-m", SERVERS[name], "--model", str(model), "--source", str(data.raw("test", data.source_lang)),
               "--tokenizer", str(data.tokenizer_dir / "tokenizer.json"), "--threads", str(threads),
               "--num_beams", str(recipe.num_beams), "--length_penalty", str(recipe.length_penalty),
               "--max_new_tokens", str(recipe.max_new_tokens)]
    if name == "eole":
        command += ["--", *eole_predict_arguments(recipe, model, data.pieces("test", data.source_lang),
                                                  Path(os.devnull), 1, seed)]
    return command


def grid(servers: dict[str, Server], args: argparse.Namespace, sentences: int) -> list[dict]:
    """Every round, every batch size, every toolkit in turn, on the servers of one thread count: the measurements,
    each with the load average before it."""
    measurements = []
    for round_ in range(args.rounds):
        for batch_size in args.batch_sizes:
            count = min(args.sentences, sentences) if batch_size == 1 else sentences
            for name, server in servers.items():
                load = os.getloadavg()[0]
                measured = server.ask({"batch_size": batch_size, "sentences": count, "round": round_})
                print(f"[decoding] threads {server.threads}, round {round_ + 1}/{args.rounds}, batch {batch_size}: "
                      f"{name} {report_decoding.sentences_per_second(measured):.1f} sentences/s", flush=True)
                measurements.append({**measured, "load_before": load})
    return measurements


def named(pairs: list[str], option: str, kind=str) -> dict:
    """``name=value`` words as a dict (the names among the toolkits)."""
    found = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or name not in toolkits.TOOLKITS:
            raise SystemExit(f"--{option} takes toolkit=value ({', '.join(toolkits.TOOLKITS)}), got {pair!r}.")
        found[name] = kind(value)
    return found


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", required=True,
                        help="toolkit=model: ours's saved folder, JoeyNMT's model_dir, eole's model path "
                             "(<work>/<toolkit>/seed<n>/model after benchmarks.peers.run); they take turns in the "
                             "order ours, joeynmt, eole, and ours is the baseline of the paired rounds")
    parser.add_argument("--data", type=Path, default=toolkits.REPO_ROOT / "outputs" / "peers" / "data",
                        help="the data folder benchmarks.peers.run prepared (<work>/data): test2016, tokenizer")
    parser.add_argument("--batch_sizes", nargs="+", type=int, default=[1, 16, 64, 128, 256])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=200, help="test sentences decoded at batch 1 (the first)")
    parser.add_argument("--all_sentences", type=int, default=None,
                        help="test sentences at the other batch sizes (default: all of test2016; fewer for a check)")
    parser.add_argument("--length_penalties", nargs="*", default=[],
                        help="toolkit=alpha in its own formula (default: the recipe's, for each)")
    parser.add_argument("--seed", type=int, default=1, help="eole's predict seed (beam search draws nothing)")
    parser.add_argument("--label", default="decoding grid")
    parser.add_argument("--work", type=Path, default=toolkits.REPO_ROOT / "outputs" / "peers" / "decoding",
                        help="the servers' logs")
    parser.add_argument("--out", type=Path, default=toolkits.REPO_ROOT / "results" / report_decoding.RESULTS,
                        help="the results (benchmarks.peers.report renders them into results/peers.md from there)")
    args = parser.parse_args(argv)
    models = dict(sorted(named(args.models, "models", Path).items(), key=lambda item: toolkits.TOOLKITS.index(item[0])))
    penalties = named(args.length_penalties, "length_penalties", float)
    for name in ("rounds", "sentences", "all_sentences"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}.")
    if min(args.batch_sizes) < 1 or min(args.threads) < 1:
        parser.error("--batch_sizes and --threads must be at least 1.")
    command = portable(shlex.join(["python", "-m", "benchmarks.peers.decoding_grid",
                                   *(sys.argv[1:] if argv is None else argv)]), args.work)

    defaults = translation.DataArguments()
    data = PreparedData(args.data, defaults.source_lang, defaults.target_lang)
    base = Recipe.main_job(data.stats()["train"]["sentences"])
    recipes = {name: dataclasses.replace(base, length_penalty=penalties.get(name, base.length_penalty))
               for name in models}
    sentences = min(args.all_sentences or data.stats()["test"]["sentences"], data.stats()["test"]["sentences"])
    measurements, servers_run = [], {}
    for threads in args.threads:
        servers = {name: Server(name, server_command(name, model, data, recipes[name], threads, args.seed), threads,
                                args.work / f"{name}.threads{threads}.log") for name, model in models.items()}
        try:
            for name, server in servers.items():
                print(f"[decoding] threads {threads}: loading {name}", flush=True)
                servers_run.setdefault(name, {})[str(threads)] = {**server.start(),
                                                                  "command": portable(shlex.join(server.command),
                                                                                      args.work)}
            measurements += grid(servers, args, sentences)
        finally:
            for server in servers.values():
                server.close()
    machine = provenance([args.seed], ["test"])
    machine["argv"] = shlex.split(portable(shlex.join(machine["argv"]), args.work))
    same_tokenizer = None
    if "ours" in models:  # ours cuts with its own saved tokenizer; the peers with the one that cut their pieces
        same_tokenizer = ((models["ours"] / "tokenizer.json").read_bytes()
                          == (data.tokenizer_dir / "tokenizer.json").read_bytes())
    results = {
        "label": args.label, "command": command, "batch_sizes": args.batch_sizes, "threads": args.threads,
        "rounds": args.rounds, "batch1_sentences": min(args.sentences, sentences), "sentences": sentences,
        "models": {name: portable(str(model), args.work) for name, model in models.items()},
        "search": {"num_beams": base.num_beams, "max_new_tokens": base.max_new_tokens,
                   "length_penalty": {name: recipe.length_penalty for name, recipe in recipes.items()}},
        "tokenizer_is_the_pieces": same_tokenizer,
        "machine": f"{machine['machine']['cpu']}, {machine['machine']['cpu_count']} cores",
        "servers": servers_run, "measurements": measurements,
        "summary": report_decoding.summary(measurements), "paired": report_decoding.paired(measurements),
        "provenance": machine,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, results)
    print(report_decoding.markdown(results), end="")
    return results


if __name__ == "__main__":
    main()
