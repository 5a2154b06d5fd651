"""The benchmark runner's smoke run (every entry at tiny sizes, in a subprocess as a user runs it), made once for
all the test files that check an entry's results, and the fake clock the timing tests measure with."""

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.helpers import common

ROOT = Path(__file__).resolve().parents[2]


def run_benchmarks(out: Path, *args: str) -> dict:
    """``python -m benchmarks.run --smoke`` writing to ``out``; its ``benchmarks.json``."""
    command = [sys.executable, "-m", "benchmarks.run", "--smoke", "--threads", "1", "--out", str(out), *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "benchmarks.json").read_text())


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> tuple[Path, dict]:
    """The output folder of the smoke run of every entry, and its results. Made once per session: under
    pytest-xdist the first worker that needs it runs it, under a lock in the folder the workers share, and the other
    reads its results file."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # this session's folder, holding each worker's own
    out = shared / "benchmarks-smoke-run"
    with open(shared / "benchmarks-smoke-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "benchmarks.json").is_file():  # written last, by a complete run
            out.mkdir(exist_ok=True)
            run_benchmarks(out)
    return out, json.loads((out / "benchmarks.json").read_text())


@pytest.fixture(scope="session")
def smoke_entries(smoke_run) -> dict[str, dict]:
    """The smoke run's entries by name."""
    return smoke_run[1]["entries"]


@pytest.fixture
def clock(monkeypatch):
    """A fake ``time.perf_counter`` for the timing helpers: ``clock.advance(seconds)`` is a call taking that long."""

    class Clock:
        now = 0.0

        def advance(self, seconds: float) -> None:
            self.now += seconds

    fake = Clock()
    monkeypatch.setattr(common.time, "perf_counter", lambda: fake.now)
    return fake
