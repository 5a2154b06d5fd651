"""Run a task in a fresh process (``multiprocessing`` spawn), its output in a log file: what `scripts/compare.py`
does for each model, so that runs side by side share no state (Accelerate's, torch's threads, the RNGs)."""

import importlib
import multiprocessing
import os
from pathlib import Path


def run_in_process(task: str, parsed: tuple, log: Path, num_threads: int = 0) -> int:
    """Run ``<task>.run(*parsed)`` (``task`` a module name such as ``"hf_seqmodels.tasks.text_classification"``,
    ``parsed`` its argument dataclasses) in a spawned process whose stdout and stderr go to ``log``, with
    ``num_threads`` torch threads (0: the task's own choice). Returns the exit code: 0, or 1 when the run raised
    (its traceback is in the log)."""
    process = multiprocessing.get_context("spawn").Process(target=_run_logged,
                                                            args=(task, parsed, str(log), num_threads))
    process.start()
    process.join()
    return process.exitcode


def _run_logged(task: str, parsed: tuple, log: str, num_threads: int) -> None:
    stream = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(stream, 1)
    os.dup2(stream, 2)
    if num_threads > 0:
        import torch

        os.environ["OMP_NUM_THREADS"] = str(num_threads)  # make_accelerator then leaves the thread count alone
        torch.set_num_threads(num_threads)
    importlib.import_module(task).run(*parsed)
