"""Two runs at once (area "concurrency"): a second run into the output or checkpoint folder of a running one is
refused before it writes anything, with the pid, host and start time of the first; a run that ended, however it
ended, blocks nobody; the processes of one launch are one run.

The first run is a real process: a forked child that calls `training.start_run` and waits, or two run_clm.py runs
started together into one folder.
"""

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from hf_seqmodels.cards import render_card, stage_hub_folder
from hf_seqmodels.storage import atomic_folders
from hf_seqmodels.training.loop import TrainingArguments, start_run

from ..cards.runs import NER_RUN
from ..cards.test_hub import bert_folder
from .outcomes import assert_outcome

AREA = "concurrency"
REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_CLM = REPO_ROOT / "scripts" / "run_clm.py"


class FirstRun:
    """A process that has started a run into ``output_dir`` (and ``checkpoint_dir``) and holds it until killed: a
    fork of this one, which starts without importing torch and transformers again."""

    def __init__(self, output_dir: Path, checkpoint_dir: Path):
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns into pytest
            try:
                os.close(read_end)
                os.environ.pop("RANK", None)
                start_run(TrainingArguments(output_dir=str(output_dir), checkpoint_dir=str(checkpoint_dir)))
                os.write(write_end, b"started")
                while True:
                    signal.pause()
            finally:
                os._exit(1)
        os.close(write_end)
        started = os.read(read_end, 16)  # b"" when the child ended before
        os.close(read_end)
        assert started == b"started", "the first run did not start"
        self.running = True

    def kill(self) -> None:
        if self.running:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.running = False


@pytest.fixture
def first_run(tmp_path):
    run = FirstRun(tmp_path / "out", tmp_path / "out-checkpoints")
    yield run
    run.kill()


def start(output_dir, **options):
    return start_run(TrainingArguments(output_dir=str(output_dir), **options))


def test_a_second_run_into_a_running_ones_folders_is_refused(tmp_path, first_run):
    holder = f"process {first_run.pid} on host {socket.gethostname()}, started 20"
    for output_dir, options, option in [
        (tmp_path / "out", {}, "--output_dir"),
        (tmp_path / "out", {"overwrite_output_dir": True}, "--output_dir"),
        (tmp_path / "out", {"checkpoint_dir": str(tmp_path / "c")}, "--output_dir"),
        (f"{tmp_path}/out/", {}, "--output_dir"),  # the same folder, named another way
        (tmp_path / "sub" / ".." / "out", {}, "--output_dir"),
        (tmp_path / "other", {"checkpoint_dir": str(tmp_path / "out-checkpoints")}, "--checkpoint_dir"),
    ]:
        assert_outcome(AREA, lambda: start(output_dir, **options),
                       error=f"{option}=.* is in use by another run \\({holder}.*; lock file .*\\.lock\\): wait for "
                             f"it to end, stop it, or pass another {option}")
    model_dir = bert_folder(tmp_path)
    assert_outcome(AREA, lambda: stage_hub_folder(model_dir, tmp_path / "out", render_card(NER_RUN)),
                   error=f"--staging_dir=.*out is in use by another run \\({holder}")
    assert_outcome(AREA, lambda: sorted(p.name for p in tmp_path.iterdir() if p != model_dir),
                   check=lambda names: names == [".other.lock", ".out-checkpoints.lock", ".out.lock"])
    assert_outcome(AREA, lambda: atomic_folders.holds_lock(tmp_path / "other"), check=lambda held: not held)  # released


def test_a_run_that_ended_blocks_nobody(tmp_path, first_run, monkeypatch):
    first_run.kill()  # SIGKILL: no clean-up ran, the lock file is left behind
    assert_outcome(AREA, lambda: start(tmp_path / "out"), check=lambda started: started[1].resume_from is None)
    lock = tmp_path / ".other.lock"
    lock.write_text(json.dumps({"pid": 999999, "host": "elsewhere", "started": "yesterday"}))  # nobody holds it
    assert_outcome(AREA, lambda: start(tmp_path / "other"),
                   check=lambda started: json.loads(lock.read_text())["pid"] == os.getpid())
    lock.write_text("garbage")
    assert_outcome(AREA, lambda: start(tmp_path / "third", checkpoint_dir=str(tmp_path / "other")),
                   check=lambda started: json.loads((tmp_path / ".third.lock").read_text())["pid"] == os.getpid())


def test_the_processes_of_one_launch_are_one_run(tmp_path, first_run, monkeypatch):
    """Under a launcher the other processes (RANK > 0) join the run of process 0, which holds the lock."""
    monkeypatch.setenv("RANK", "1")
    assert_outcome(AREA, lambda: start(tmp_path / "out"), check=lambda started: started[1].resume_from is None)


@pytest.mark.slow
def test_two_training_runs_started_together_into_one_folder(tmp_path, data_dir):
    """run_clm.py twice at once into one folder: one trains and saves, the other is refused with a clear error
    (the folder is in use, or, if the first has already finished, not empty); the folder then holds the complete
    model of the one that ran."""
    output = tmp_path / "lm"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.pop("RANK", None)
    command = [sys.executable, str(RUN_CLM), "--output_dir", str(output), "--max_train_samples", "100",
               "--max_eval_samples", "20", "--embedding_size", "8", "--hidden_size", "8", "--block_size", "16",
               "--max_train_steps", "2", "--per_device_eval_batch_size", "16"]

    def run_twice():
        runs = [subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True) for _ in range(2)]
        logs = [run.communicate(timeout=300)[0] for run in runs]  # reading as they write: a full pipe would block
        return [(run.returncode, log) for run, log in zip(runs, logs)]

    def one_ran(outcomes) -> bool:
        codes = sorted(code for code, _ in outcomes)
        refused = [log for code, log in outcomes if code != 0]
        results = json.loads((output / "results.json").read_text())
        clear = ("is in use by another run (process", "is not empty; pass --overwrite_output_dir")
        return (codes[0] == 0 and codes[1] != 0 and any(message in refused[0] for message in clear)
                and results["steps"] == 2 and loaded_model_ok(output))

    assert_outcome(AREA, run_twice, check=one_ran, timeout=400)


def loaded_model_ok(folder: Path) -> bool:
    return AutoModelForCausalLM.from_pretrained(folder).config.vocab_size == len(AutoTokenizer.from_pretrained(folder))
