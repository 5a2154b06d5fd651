"""Decoding speed like for like: every engine timed in the same scope (raw test2016 source lines in, detokenized
translations out, model loading not counted) at every batch size and thread count, the engines taking turns item by
item.

    python -m benchmarks.peers.decoding_grid --models ours=WORK/ours/seed1/model \\
        joeynmt=WORK/joeynmt/seed1/model eole=WORK/eole/seed1/model --batch_sizes 1 16 64 128 256 --threads 1 2 \\
        --rounds 3 --sentences 200 --out results/peers_decoding.json
    python -m benchmarks.peers.decoding_grid --architecture transformer --models ours=WORK/ours/seed1/model \\
        joeynmt=WORK/joeynmt/seed1/model eole=WORK/eole/seed1/model marian=WORK/marian/seed1/model \\
        --out results/peers_transformer_decoding.json

Run it in our environment (.venv) on a quiet machine, after the quality phase of `benchmarks.peers.run` has trained
the models (WORK is its ``--work``; ``--data`` its data folder). An engine (`ENGINES`: a row of the grid) is one
server decoding one toolkit's model: for the main job's attention GRU (``--architecture rnn``, the default) each
toolkit's own decoder; for the Transformer (``--architecture transformer``) also ours through transformers'
GenerationMixin loop and through CTranslate2 (float32 and int8, exported when its server loads), and transformers'
MarianMTModel through its generate(). Ours (``ours``: generate(), our decoding loop) is the baseline every other row
is paired against. For each thread count, one server process per engine (`serve_ours`, `serve_ctranslate2`, and
`serve_joeynmt` / `serve_eole` in the peers' environments) loads its model once with OMP_NUM_THREADS and torch's
threads at that count; then in each round, for each batch size, each engine in turn decodes the sentences
(`serving`'s line protocol): all of test2016, or its first ``--sentences`` at batch 1. Every engine decodes the same
batches (`serving.batches`) with the same search (beam ``num_beams``, at most ``max_new_tokens`` tokens, the recipe's
length penalty in each toolkit's formula unless ``--length_penalties`` says otherwise). The json holds every
measurement, the medians (`report_decoding.summary`) and the paired rounds (`report_decoding.paired`); the table is
printed (`report_decoding.markdown`).
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
from .architectures import ARCHITECTURES, RNN, TRANSFORMER, Architecture
from .data import PreparedData
from .recipe import Recipe, eole_predict_arguments
from .toolkits import portable

SERVER = "benchmarks.peers.serve_{}"  # a server's module; its lines name the toolkit after "serve_" unless --name


@dataclasses.dataclass(frozen=True)
class Engine:
    """A row of the grid: one server (`serving`'s protocol) decoding one toolkit's model."""

    name: str  # the row's name (the measurements' ``toolkit``)
    toolkit: str  # whose model it decodes (``--models``), with whose length penalty (``--length_penalties``)
    server: str  # the server's module, run in the toolkit's environment
    decodes: str  # what its timed call runs per batch, in words (the results' ``engines``)
    options: tuple[str, ...] = ()  # the server's options beyond those every server takes

    def server_options(self) -> list[str]:
        """``options``, and ``--name`` where the server would name its lines otherwise."""
        return [*self.options, *([] if self.server == SERVER.format(self.name) else ["--name", self.name])]


OWN = {
    "ours": "generate() with our decoding loop (the package's default): the tokenizer call, generate(), batch_decode",
    "joeynmt": "its predict() (what `joeynmt translate` runs) on our tokenizer's pieces, joined into text by it",
    "eole": "its InferenceEnginePY.infer_list() (what `eole predict` runs) on our tokenizer's pieces, joined into "
            "text by it",
}


def own(toolkit: str) -> Engine:
    """``toolkit``'s own decoder, in its own server."""
    return Engine(toolkit, toolkit, SERVER.format(toolkit), OWN[toolkit])


def ctranslate2(quantization: str) -> Engine:
    """Our model exported to CTranslate2 with ``quantization`` (`serve_ctranslate2`)."""
    return Engine(f"ours_ctranslate2_{quantization}", "ours", SERVER.format("ctranslate2"),
                  f"our model exported to CTranslate2 when the server loads, {quantization} weights and compute: the "
                  "tokenizer call, translate_batch, batch_decode", ("--quantization", quantization))


# Each comparison's rows, in the order they take turns; ours (the baseline of the paired rounds) first.
ENGINES = {
    RNN.name: (
        own("ours"),
        Engine("ours_int8", "ours", SERVER.format("ours"),
               "generate() with our decoding loop on our model quantized for serving (int8 linear layers and GRU "
               "kernels, torch's dynamic quantization: `quantize_for_serving`): the tokenizer call, generate(), "
               "batch_decode", ("--int8",)),
        *(own(name) for name in RNN.toolkits[1:])),
    TRANSFORMER.name: (
        own("ours"),
        Engine("ours_generationmixin", "ours", SERVER.format("ours"),
               "generate(custom_generate=None), transformers' GenerationMixin loop on our model: the tokenizer call, "
               "generate(), batch_decode", ("--generationmixin",)),
        ctranslate2("float32"), ctranslate2("int8"),
        Engine("marian", "marian", SERVER.format("ours"),
               "transformers' MarianMTModel trained through our pipeline, its generate() (GenerationMixin's loop): "
               "the tokenizer call, generate(), batch_decode"),
        own("joeynmt"), own("eole")),
}


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


def server_command(engine: Engine, model: Path, data: PreparedData, recipe: Recipe, threads: int,
                   seed: int) -> list[str]:
    """The command of ``engine``'s server: its toolkit's interpreter, the model, test2016's raw sources, our
    tokenizer.json, the recipe's search and the engine's options (for eole, also the ``eole predict`` options the
    quality phase gives)."""
    python = sys.executable if engine.toolkit in toolkits.PIPELINE else str(toolkits.peer_program(engine.toolkit))
    command = [python, "-m", engine.server, "--model", str(model), "--source",
               str(data.raw("test", data.source_lang)), "--tokenizer", str(data.tokenizer_dir / "tokenizer.json"),
               "--threads", str(threads), "--num_beams", str(recipe.num_beams), "--length_penalty",
               str(recipe.length_penalty), "--max_new_tokens", str(recipe.max_new_tokens), *engine.server_options()]
    if engine.toolkit == "eole":
        command += ["--", *eole_predict_arguments(recipe, model, data.pieces("test", data.source_lang),
                                                  Path(os.devnull), 1, seed)]
    return command


def warm_up(servers: dict[str, Server], batch_sizes: list[int], sentences: int) -> None:
    """One untimed batch of each size per server, before the first round: a server's own warm-up decodes one small
    batch as it loads, so the first round would otherwise be the first at each batch size's shapes (ours at batch 1,
    1 thread: 24.7 sentences/s in that round, 45.0 in the next)."""
    for batch_size in batch_sizes:
        for server in servers.values():
            server.ask({"batch_size": batch_size, "sentences": min(batch_size, sentences), "round": -1})


def grid(servers: dict[str, Server], args: argparse.Namespace, sentences: int) -> list[dict]:
    """`warm_up`, then every round, every batch size, every toolkit in turn, on the servers of one thread count: the
    measurements, each with the load average before it."""
    warm_up(servers, args.batch_sizes, sentences)
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


def named(pairs: list[str], option: str, names: tuple[str, ...], kind=str) -> dict:
    """``name=value`` words as a dict, the names among ``names`` (the comparison's toolkits)."""
    found = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or name not in names:
            raise SystemExit(f"--{option} takes toolkit=value ({', '.join(names)}), got {pair!r}.")
        found[name] = kind(value)
    return found


def chosen(architecture: Architecture, models: dict, names: list[str] | None) -> list[Engine]:
    """The comparison's engines that run, in `ENGINES`' order: those ``names`` gives, or every one whose toolkit
    ``models`` has. A name not among them, or one whose toolkit has no model, is refused."""
    engines = ENGINES[architecture.name]
    if names is None:
        return [engine for engine in engines if engine.toolkit in models]
    valid = {engine.name: engine for engine in engines}
    if unknown := [name for name in names if name not in valid]:
        raise SystemExit(f"--engines {' '.join(unknown)}: not rows of the {architecture.name} grid; valid options: "
                         f"{', '.join(valid)}.")
    if missing := [name for name in names if valid[name].toolkit not in models]:
        raise SystemExit(f"--engines {' '.join(missing)}: --models gives no model of "
                         f"{', '.join(dict.fromkeys(valid[name].toolkit for name in missing))}.")
    return [engine for engine in engines if engine.name in names]


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The options, the defaults of ``--data``, ``--work`` and ``--out`` those of ``--architecture``'s comparison
    (its folder under outputs/, its results file under results/), checked."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--architecture", default=RNN.name, choices=ENGINES,
                        help="the comparison: 'rnn', the main job's attention GRU, or 'transformer', our Transformer "
                             "(its rows: ENGINES); each has its own models, data and results file")
    parser.add_argument("--models", nargs="+", required=True,
                        help="toolkit=model: ours's saved folder, JoeyNMT's model_dir, eole's model path, Marian's "
                             "saved folder (<work>/<toolkit>/seed<n>/model after benchmarks.peers.run); the engines "
                             "take turns in ENGINES' order, and ours is the baseline of the paired rounds")
    parser.add_argument("--engines", nargs="+", default=None,
                        help="the rows to run (default: every one of the comparison whose toolkit --models gives)")
    parser.add_argument("--data", type=Path, default=None,
                        help="the data folder benchmarks.peers.run prepared (<work>/data: test2016, tokenizer; "
                             "default: outputs/<the comparison's folder>/data)")
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
    parser.add_argument("--work", type=Path, default=None,
                        help="the servers' logs (default: outputs/<the comparison's folder>/decoding)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the results (default: results/<the comparison's decoding results>, peers_decoding.json "
                             "or peers_transformer_decoding.json; benchmarks.peers.report renders them from there)")
    args = parser.parse_args(argv)
    for name in ("rounds", "sentences", "all_sentences"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}.")
    if min(args.batch_sizes) < 1 or min(args.threads) < 1:
        parser.error("--batch_sizes and --threads must be at least 1.")
    architecture = ARCHITECTURES[args.architecture]
    outputs = toolkits.REPO_ROOT / "outputs" / architecture.work
    args.data = args.data or outputs / "data"
    args.work = args.work or outputs / "decoding"
    args.out = args.out or toolkits.REPO_ROOT / "results" / architecture.decoding_results
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    architecture = ARCHITECTURES[args.architecture]
    models = dict(sorted(named(args.models, "models", architecture.toolkits, Path).items(),
                         key=lambda item: architecture.toolkits.index(item[0])))
    penalties = named(args.length_penalties, "length_penalties", architecture.toolkits, float)
    engines = chosen(architecture, models, args.engines)
    command = portable(shlex.join(["python", "-m", "benchmarks.peers.decoding_grid",
                                   *(sys.argv[1:] if argv is None else argv)]), args.work)

    defaults = translation.DataArguments()
    data = PreparedData(args.data, defaults.source_lang, defaults.target_lang)
    base = architecture.recipe.main_job(data.stats()["train"]["sentences"])
    recipes = {name: dataclasses.replace(base, length_penalty=penalties.get(name, base.length_penalty))
               for name in models}
    sentences = min(args.all_sentences or data.stats()["test"]["sentences"], data.stats()["test"]["sentences"])
    measurements, servers_run = [], {}
    for threads in args.threads:
        servers = {engine.name: Server(engine.name, server_command(engine, models[engine.toolkit], data,
                                                                   recipes[engine.toolkit], threads, args.seed),
                                       threads, args.work / f"{engine.name}.threads{threads}.log")
                   for engine in engines}
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
        "label": args.label, "command": command, "architecture": architecture.name,
        "batch_sizes": args.batch_sizes, "threads": args.threads,
        "rounds": args.rounds, "warm_up": "one untimed batch of each size per engine before the first round",
        "batch1_sentences": min(args.sentences, sentences), "sentences": sentences,
        "models": {name: portable(str(model), args.work) for name, model in models.items()},
        "engines": {engine.name: {"toolkit": engine.toolkit, "decodes": engine.decodes} for engine in engines},
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
