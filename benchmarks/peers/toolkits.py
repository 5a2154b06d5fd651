"""Each toolkit's training and decoding commands, run one at a time as subprocesses, and what is read back from
their logs: the training loop's seconds, the parameters, the decoding seconds by the toolkit's own timer.

Ours (and transformers' MarianMTModel, `PIPELINE`) runs in this interpreter's environment
(scripts/run_translation.py, then `decode_ours`); JoeyNMT and eole in their own virtual environments
(``.venv-peers/<name>``, made by ``benchmarks/peers/setup.sh``). Every command gets the same environment (threads
included) and its peak resident memory is read from the kernel (`run_command`). The configs come from the recipe's
architecture (`architectures.of`): the main job's attention GRU or the Transformer.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import yaml

from . import architectures
from . import data as peers_data
from . import model_shapes
from .recipe import Recipe, Tuning, eole_predict_arguments

REPO_ROOT = Path(__file__).resolve().parents[2]
PEER_VENVS = REPO_ROOT / ".venv-peers"
TOOLKITS = architectures.RNN.toolkits
PIPELINE = ("ours", "marian")  # trained by scripts/run_translation.py and decoded by `decode_ours`, in this environment
PACKAGES = {"joeynmt": "joeynmt", "eole": "eole"}  # the distribution each peer's version is read from


def peer_program(name: str, program: str = "python") -> Path:
    """A program of a peer's virtual environment; a FileNotFoundError says how to make it."""
    path = PEER_VENVS / name / "bin" / program
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: make the peers' environments with "
                                f"`bash benchmarks/peers/setup.sh {name}` (or leave {name} out of --toolkits).")
    return path


def portable(command: str, work: Path) -> str:
    """A recorded shell line without this machine's paths: this interpreter as ``python``, paths inside the
    repository relative to it, paths inside ``work`` (when outside the repository) as ``<work>/...``."""
    # Links are not followed: a peer's .venv-peers/<name>/bin/python links to the system's interpreter.
    roots = [(REPO_ROOT, ""), (Path(os.path.abspath(work)), "<work>/")]
    words = []
    for word in shlex.split(command):
        if word == sys.executable:
            word = "python"
        elif word.startswith("/"):
            path = Path(os.path.normpath(word))
            for root, prefix in roots:
                if path.is_relative_to(root):
                    word = prefix + str(path.relative_to(root))
                    break
        words.append(word)
    return shlex.join(words)


def made_portable(record: dict, work: Path) -> dict:
    """``record`` with every ``command`` in it (at any depth) made `portable`."""
    return {key: portable(value, work) if key == "command" else
            made_portable(value, work) if isinstance(value, dict) else value for key, value in record.items()}


# Linux carries a process's peak resident memory over a fork and an exec, so a command forked from this (large)
# process would report at least this process's size. A small launcher forks the command instead and writes the
# peak that wait4 gives for it (KiB; the largest of the command and the children it waited for).
LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as handle:
    handle.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status) % 256)
"""


def run_command(command: list[str], log: Path, env: dict | None = None, cwd: Path = REPO_ROOT) -> dict:
    """Run ``command`` with its output in ``log``; its wall seconds and peak resident memory (MiB, through
    `LAUNCHER`). A failure raises a RuntimeError naming the log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    peak = log.with_suffix(".peak_kib")
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as handle:
        handle.write(f"$ {shlex.join(command)}\n")
        handle.flush()
        done = subprocess.run([sys.executable, "-c", LAUNCHER, str(peak), *command], stdout=handle,
                              stderr=subprocess.STDOUT, cwd=cwd, env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise RuntimeError(f"`{shlex.join(command)}` failed (exit {done.returncode}): see {log}")
    return {"wall_s": time.perf_counter() - start, "peak_rss_mb": int(peak.read_text()) / 1024,
            "command": shlex.join(command)}


def log_time(line: str) -> datetime:
    """The timestamp at the start of a JoeyNMT (``2026-01-01 12:00:00,123 - ...``) or eole
    (``[2026-01-01 12:00:00,123 INFO] ...``) log line."""
    match = re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})", line)
    if match is None:
        raise ValueError(f"No timestamp in the log line {line!r}.")
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f")


def seconds_between(text: str, first: str, last: str) -> float:
    """Seconds from the first log line containing ``first`` to the last one containing ``last``."""
    lines = text.splitlines()
    try:
        start = next(line for line in lines if first in line)
        end = next(line for line in reversed(lines) if last in line)
    except StopIteration:
        raise ValueError(f"The log lacks a line with {first!r} or {last!r}.") from None
    return (log_time(end) - log_time(start)).total_seconds()


def logged_number(text: str, pattern: str) -> float:
    """The number captured by ``pattern`` in the last line that matches it."""
    found = re.findall(pattern, text)
    if not found:
        raise ValueError(f"The log has no line matching {pattern!r}.")
    return float(found[-1])


# What each peer's logs say (JoeyNMT 2.3.0, eole 0.6.4).
def joeynmt_train_seconds(text: str) -> float:
    """From the line before the first update to the end of training (validations included, as ours)."""
    return seconds_between(text, "Train config:", "Training ended")


def joeynmt_validation_seconds(text: str) -> float:
    """The greedy decoding of its validations (its own "Generation took" timer; their loss and BLEU not counted)."""
    return sum(map(float, re.findall(r"Generation took ([\d.]+)\[sec\]", text)))


def joeynmt_parameters(text: str) -> int:
    return int(logged_number(text, r"Total params: (\d+)"))


def joeynmt_decode_seconds(text: str) -> float:
    return logged_number(text, r"Generation took ([\d.]+)\[sec\]")


def ours_decode_seconds(text: str) -> float:
    """The ``seconds`` `decode_ours` printed last in its log."""
    return json.loads(text.strip().splitlines()[-1])["seconds"]


def eole_train_seconds(text: str) -> float:
    """From the start of the training loop to the saving of the last checkpoint (its validation included)."""
    return seconds_between(text, "Start training loop", "Saving optimizer and weights")


def eole_validation_seconds(text: str) -> float:
    """Its validations (the loss of the validation set), by its own timer."""
    return sum(map(float, re.findall(r"valid stats calculation\s+took: ([\d.]+) s", text)))


def eole_parameters(text: str) -> int:
    return int(logged_number(text, r"\* number of parameters: (\d+)"))


def eole_decode_seconds(text: str) -> float:
    """Its whole prediction time with ``-report_time``: the encoder and first step, then the rest."""
    return (logged_number(text, r"Step 0 time \(s\): ([\d.]+)")
            + logged_number(text, r"Subsequent prediction time including all \(s\): ([\d.]+)"))


def version(name: str) -> dict:
    """The toolkit's version and its torch's (ours and Marian: our package's, transformers' and torch's)."""
    if name in PIPELINE:
        import torch
        import transformers

        import hf_seqmodels

        return {"hf_seqmodels": getattr(hf_seqmodels, "__version__", "dev"), "transformers": transformers.__version__,
                "torch": torch.__version__}
    script = (f"import importlib.metadata as m, torch, json; "
              f"print(json.dumps({{'{PACKAGES[name]}': m.version('{PACKAGES[name]}'), 'torch': torch.__version__}}))")
    output = subprocess.run([str(peer_program(name)), "-c", script], capture_output=True, text=True, check=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def pipeline_arguments(name: str, recipe: Recipe, data: peers_data.PreparedData, model_dir: Path, seed: int,
                       tuning: Tuning) -> list[str]:
    """scripts/run_translation.py's arguments that train ``name`` of `PIPELINE` on ``recipe`` (either architecture's;
    marian: transformers' MarianMTModel of the Transformer's sizes) into ``model_dir``."""
    writers = architectures.of(recipe).module
    return (writers.marian_arguments if name == "marian" else writers.ours_arguments)(recipe, data, model_dir, seed,
                                                                                       tuning)


def train(name: str, recipe: Recipe, data: peers_data.PreparedData, folder: Path, seed: int,
          tuning: Tuning) -> dict:
    """Train ``name`` on the recipe (either architecture's, `architectures`) with ``tuning`` into ``folder``:
    ``train_s`` (the training loop, as its logs time it), ``validation_s`` (the part of it spent validating),
    ``wall_s`` and ``peak_rss_mb`` of the command, ``parameters``, ``command``; for the attention GRU also
    ``model_shape``, what the toolkit built as its saved configuration says (`model_shapes`)."""
    trained = run_training(name, recipe, data, folder, seed, tuning)
    if architectures.of(recipe) is architectures.RNN:
        trained["model_shape"] = model_shapes.shape(name, folder)
    return trained


def run_training(name: str, recipe: Recipe, data: peers_data.PreparedData, folder: Path, seed: int,
                 tuning: Tuning) -> dict:
    """`train` but the model's shape."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "train.log"
    writers = architectures.of(recipe).module
    if name in PIPELINE:
        model_dir = folder / "model"
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        run = run_command([sys.executable, "scripts/run_translation.py",
                           *pipeline_arguments(name, recipe, data, model_dir, seed, tuning)], log, env)
        results = json.loads((model_dir / "results.json").read_text())
        # run_translation.py trains its tokenizer itself: the same file as the one that cut the peers' pieces?
        same = (model_dir / "tokenizer.json").read_bytes() == (data.tokenizer_dir / "tokenizer.json").read_bytes()
        return {**run, "train_s": results["train_runtime_s"], "validation_s": results["evaluation_runtime_s"],
                "parameters": results["num_parameters"],
                "steps": results["steps"], "train_tokens_counted": results["train_tokens"],
                "test_bleu_own_run": results.get("test_bleu"), "tokenizer_is_the_pieces": same}
    if name == "joeynmt":
        config = folder / "train.yaml"
        config.write_text(yaml.safe_dump(writers.joeynmt_config(recipe, data, folder / "model", seed, 64, tuning)))
        run = run_command([str(peer_program(name)), "-m", "joeynmt", "train", str(config), "--skip-test"], log)
        text = log.read_text(encoding="utf-8")
        return {**run, "train_s": joeynmt_train_seconds(text), "validation_s": joeynmt_validation_seconds(text),
                "parameters": joeynmt_parameters(text), "steps": recipe.updates}
    if name == "eole":
        config = folder / "train.yaml"
        config.write_text(yaml.safe_dump(writers.eole_config(recipe, data, folder / "model", seed, tuning)))
        run = run_command([str(peer_program(name, "eole")), "train", "-config", str(config)], log)
        text = log.read_text(encoding="utf-8")
        return {**run, "train_s": eole_train_seconds(text), "validation_s": eole_validation_seconds(text),
                "parameters": eole_parameters(text), "steps": recipe.updates}
    raise ValueError(f"Unknown toolkit {name!r}; valid options: {architectures.TOOLKITS}.")


def decode(name: str, recipe: Recipe, data: peers_data.PreparedData, folder: Path, rows: Path, batch_size: int,
           seed: int, tag: str) -> tuple[list[str], dict]:
    """Translate the sentences of ``rows`` (a stem: ``<rows>.<lang>`` raw, ``<rows>.tok.<lang>`` pieces, for both
    languages) with the model trained in ``folder``, beam search as the recipe says, ``batch_size`` sentences per
    batch. Returns the detokenized translations and ``seconds`` (the toolkit's own timer, loading not counted),
    ``sentences``, ``wall_s``, ``peak_rss_mb``, ``command``."""
    src = data.source_lang
    work = folder / "decode"
    work.mkdir(parents=True, exist_ok=True)
    log, output = work / f"{tag}.log", work / f"{tag}.out"
    if name in PIPELINE:
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        run = run_command([sys.executable, "-m", "benchmarks.peers.decode_ours", str(folder / "model"),
                           f"{rows}.{src}", str(output), "--batch_size", str(batch_size), "--num_beams",
                           str(recipe.num_beams), "--length_penalty", str(recipe.length_penalty),
                           "--max_new_tokens", str(recipe.max_new_tokens)], log, env)
        seconds = ours_decode_seconds(log.read_text(encoding="utf-8"))
        translations = output.read_text(encoding="utf-8").splitlines()
    elif name == "joeynmt":
        # `joeynmt test` reads the data, testing and model sections; the tuning (training section) is not read
        config = architectures.of(recipe).module.joeynmt_config(recipe, data, folder / "model", seed, batch_size,
                                                                 recipe.untuned(name))
        config["data"]["test"] = f"{rows}.tok"
        del config["data"]["dev"]  # `joeynmt test` decodes every split it is given
        path = work / f"{tag}.yaml"
        path.write_text(yaml.safe_dump(config))
        run = run_command([str(peer_program(name)), "-m", "joeynmt", "test", str(path), "--output-path",
                           str(output)], log)
        seconds = joeynmt_decode_seconds(log.read_text(encoding="utf-8"))
        translations = Path(f"{output}.test").read_text(encoding="utf-8").splitlines()
    elif name == "eole":
        run = run_command([str(peer_program(name, "eole")), "predict",
                           *eole_predict_arguments(recipe, folder / "model", Path(f"{rows}.tok.{src}"), output,
                                                   batch_size, seed)], log)
        seconds = eole_decode_seconds(log.read_text(encoding="utf-8"))
        translations = output.read_text(encoding="utf-8").splitlines()
    else:
        raise ValueError(f"Unknown toolkit {name!r}; valid options: {architectures.TOOLKITS}.")
    if name not in PIPELINE:
        tokenizer = data.tokenizer()
        translations = [peers_data.detokenize(tokenizer, line) for line in translations]
    expected = len(Path(f"{rows}.{src}").read_text(encoding="utf-8").splitlines())
    if len(translations) != expected:
        raise RuntimeError(f"{name} gave {len(translations)} translations for {expected} sentences: see {log}.")
    return translations, {**run, "seconds": seconds, "sentences": expected}
