"""Provenance: what every results entry records about the run that produced it, so that a figure can be traced to
the code, command, software and machine that made it, and made again.

`provenance` is the one function every writer of results calls (the task scripts' ``results.json``,
``scripts/compare.py``'s ``results/<suite>.json``, ``python -m benchmarks.run``'s entries and the other
``benchmarks/`` results files); each stores its answer under the key ``"provenance"`` of the entry it describes.
Its keys (docs/provenance.md):

* ``recorded``: ``"at run time"``; in entries written before provenance was recorded, ``"backfilled from git
  history"`` (only what the entry itself recorded or git history shows, every other key ``None``, and
  ``evidence``: where each value comes from) or ``"unknown"``.
* ``commit``: the full git commit of the code the process imported (``None`` outside a git checkout);
  ``tree_clean``: whether that code had no uncommitted change (a change under ``results/``, where the runs write,
  does not count); ``changed_files``: the paths that had one. Taken when this module is imported (`LOADED`).
* ``argv``: the exact command line (``sys.orig_argv``: the interpreter, ``-m <module>`` or the script, and every
  argument), and ``cwd``, the folder it ran in (relative to the repository when inside it).
* ``python``, ``torch``, ``transformers``: the versions.
* ``device`` (``"cpu: <model> (2 threads)"`` or ``"cuda: <GPU>"``) and ``threads``, torch's intra-op threads;
  ``machine``: the CPU, its core count, the platform and the load average when the run started, and ``note``
  (e.g. ``"shared machine"``), what the caller says about the machine; ``environment``: the environment variables
  that change a run (threads, visible GPUs, the data folder) where set.
* ``seeds``: the seeds of the run (a list); ``split``: the data splits its figures come from (a list; empty for
  synthetic data).
* ``date``: when the provenance was taken (the run's start), UTC, ISO 8601.
"""

import datetime
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import torch
import transformers

from .data.paths import REPO_ROOT

RECORDED = "at run time"
BACKFILLED = "backfilled from git history"
UNKNOWN = "unknown"
# Environment variables that change what a run does or how fast it goes.
ENVIRONMENT = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "HF_SEQMODELS_DATA",
               "HF_SEQMODELS_METRICS", "CUBLAS_WORKSPACE_CONFIG")
# The keys of a provenance after ``recorded``, in `provenance`'s order.
KEYS = ("commit", "tree_clean", "changed_files", "argv", "cwd", "python", "torch", "transformers", "device", "threads",
        "machine", "environment", "seeds", "split", "date")
RESULTS_FOLDER = "results"  # the runs write here: a change under it leaves the code's tree clean


def provenance(seeds: Sequence[int], split: Sequence[str], device: str | torch.device = "cpu",
               note: str | None = None) -> dict:
    """The provenance of a run now starting or running (see the module's docstring for the keys): ``seeds`` its
    seeds, ``split`` the data splits its figures come from, ``device`` where it runs and ``note`` what to say about
    the machine (``"shared machine"``)."""
    commit, changed = LOADED
    return {
        "recorded": RECORDED,
        "commit": commit,
        "tree_clean": None if changed is None else not changed,
        "changed_files": changed,
        "argv": list(getattr(sys, "orig_argv", sys.argv)),
        "cwd": _relative(Path.cwd()),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "device": describe_device(torch.device(device)),
        "threads": torch.get_num_threads(),
        "machine": {"cpu": cpu_name(), "cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "load_average": [round(load, 2) for load in os.getloadavg()] if hasattr(os, "getloadavg")
                    else None, "note": note},
        "environment": {name: os.environ[name] for name in ENVIRONMENT if name in os.environ},
        "seeds": list(seeds),
        "split": list(split),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def missing_provenance(recorded: str = UNKNOWN, evidence: str | None = None, **known) -> dict:
    """The provenance of an entry written before provenance was recorded: every key ``None`` except ``recorded``
    (`BACKFILLED` or `UNKNOWN`), what ``known`` gives (what the entry itself recorded, or git history shows) and
    ``evidence``, where those values come from."""
    if unknown := set(known) - set(KEYS):
        raise ValueError(f"missing_provenance: {sorted(unknown)} are not provenance keys; they are {list(KEYS)}.")
    return {"recorded": recorded, **dict.fromkeys(KEYS), **known, "evidence": evidence}


def git_state(root: Path = REPO_ROOT) -> tuple[str | None, list[str] | None]:
    """The commit of the checkout at ``root`` and its changed paths outside `RESULTS_FOLDER` (untracked files
    included); both ``None`` where ``root`` is not in a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        status = git("status", "--porcelain", "--", ".", f":(exclude){RESULTS_FOLDER}")
    except (OSError, subprocess.CalledProcessError):
        return None, None
    return commit, [line[3:] for line in status.splitlines()]


# The code a process runs is the code it imported: the checkout's state when this module was imported (at the
# process's start, or for a compare.py run at its forkserver's), not when a run that took hours writes its results.
LOADED = git_state()


def _relative(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def checkout_relative(words: list[str]) -> list[str]:
    """A recorded command's words with the recording checkout's root (what precedes ``scripts/`` in the script's
    path) left out: the card names no path of the machine it was trained on."""
    root = words[0][:words[0].rindex("scripts/")] if words and "scripts/" in words[0] else ""
    return [word.replace(root, "") for word in words] if root else words


def cpu_name() -> str:
    """The CPU's model name (from ``/proc/cpuinfo`` where there is one)."""
    try:
        with open("/proc/cpuinfo") as handle:
            return next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def describe_device(device: torch.device) -> str:
    """E.g. ``"cuda: NVIDIA H100"`` or ``"cpu: Intel(R) Xeon(R) ... (2 threads)"``."""
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return f"{device.type}: {cpu_name()} ({torch.get_num_threads()} threads)"
