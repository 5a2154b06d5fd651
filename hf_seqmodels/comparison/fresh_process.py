"""Run a task in a fresh process, its output in a log file: what `scripts/compare.py` does for each model, so that
runs side by side share no state (Accelerate's, torch's threads, the RNGs).

Each process is forked from a server process (multiprocessing's ``forkserver``) that has imported the tasks and run
nothing else, so a run starts without the seconds of importing torch, transformers and datasets again. It takes the
caller's environment variables, working directory and ``sys.path`` of the moment it starts, as a spawned process
would, and the caller's command line (``sys.orig_argv``), which the run's provenance records as its command. Where the platform has no forkserver (Windows), each process is spawned.
"""

import importlib
import multiprocessing
import os
import sys
import threading
from multiprocessing import connection, forkserver
from pathlib import Path

# What the server imports once: every module a comparison runs in its processes.
PRELOADED = ("hf_seqmodels.comparison.peak_memory", "hf_seqmodels.tasks.language_modeling",
             "hf_seqmodels.tasks.text_classification", "hf_seqmodels.tasks.token_classification",
             "hf_seqmodels.tasks.translation", "hf_seqmodels.tasks.word_vectors")
# compare.py starts and awaits runs from several threads; one thread at a time changes PYTHONPATH, starts a process
# or reads the exit status of one that has ended. A child's status is one message on a pipe, and Process.start()
# reads those of the other children that have ended (multiprocessing.process._cleanup): two threads reading one
# child's at once left one of them with end of file, which multiprocessing reports as exit code 255.
_ONE_AT_A_TIME = threading.Lock()


def _context():
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOADED))
    # Python 3.11's server imports them with its own default sys.path, not the caller's (it ignores the sys_path it
    # is given): it gets the caller's as PYTHONPATH while it starts, so that it imports the code the caller runs.
    with _ONE_AT_A_TIME:
        saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(sys.path)
        try:
            forkserver.ensure_running()  # a no-op once the server runs
        finally:
            if saved is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = saved
    return context


def run_in_process(task: str, parsed: tuple, log: Path, num_threads: int = 0) -> int:
    """Run ``<task>.run(*parsed)`` (``task`` a module name such as ``"hf_seqmodels.tasks.text_classification"``,
    ``parsed`` its argument dataclasses) in a fresh process whose stdout and stderr go to ``log``, with
    ``num_threads`` torch threads (0: the task's own choice). Returns the exit code: 0, or 1 when the run raised
    (its traceback is in the log)."""
    context = _context()
    with _ONE_AT_A_TIME:  # the caller's environment, not one that another thread's server start has changed
        process = context.Process(target=_run_logged, args=(task, parsed, str(log), num_threads, dict(os.environ),
                                                            os.getcwd(), list(sys.path), list(sys.orig_argv)))
        process.start()
    connection.wait([process.sentinel])  # until the run ends, without reading its status
    with _ONE_AT_A_TIME:
        process.join()
    return process.exitcode


def _run_logged(task: str, parsed: tuple, log: str, num_threads: int, environment: dict, cwd: str,
                path: list[str], argv: list[str]) -> None:
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    sys.path[:] = path
    sys.orig_argv = argv
    stream = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(stream, 1)
    os.dup2(stream, 2)
    if num_threads > 0:
        import torch

        os.environ["OMP_NUM_THREADS"] = str(num_threads)  # make_accelerator then leaves the thread count alone
        torch.set_num_threads(num_threads)
    importlib.import_module(task).run(*parsed)
