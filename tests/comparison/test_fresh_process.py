"""`comparison.fresh_process.run_in_process`: each run is a fresh process with the caller's environment variables and
working directory of the moment it starts (not those of the forkserver's start) and its command line, the caller's code
(the package from the caller's sys.path, whatever the working directory), the threads asked for, its output in the log,
and nothing left by an earlier run."""

import concurrent.futures
import json
import sys

import pytest

import hf_seqmodels
from hf_seqmodels.comparison.fresh_process import run_in_process

PROBE = "tests.comparison.fresh_process_probe"
THREADS, RUNS_PER_THREAD = 4, 40


def test_each_run_is_fresh_and_sees_the_callers_environment_now(tmp_path, monkeypatch):
    seen = []
    for value, threads in (("first", 1), ("second", 2)):
        monkeypatch.setenv("HF_SEQMODELS_PROBE", value)
        (tmp_path / value).mkdir()
        monkeypatch.chdir(tmp_path / value)
        log = tmp_path / f"{value}.log"
        assert run_in_process(PROBE, (str(tmp_path / f"{value}.json"), "HF_SEQMODELS_PROBE"), log, threads) == 0
        assert log.read_text() == "a line for the log\n"
        seen.append(json.loads((tmp_path / f"{value}.json").read_text()))
    assert seen == [{"variable": value, "cwd": str(tmp_path / value), "threads": threads, "marked": False,
                     "package": hf_seqmodels.__file__, "argv": sys.orig_argv}  # the caller's command
                    for value, threads in (("first", 1), ("second", 2))]


def test_a_run_that_raises_exits_1_with_its_traceback_in_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_SEQMODELS_PROBE", "fail")
    log = tmp_path / "run.log"
    assert run_in_process(PROBE, (str(tmp_path / "out.json"), "HF_SEQMODELS_PROBE"), log) == 1
    assert "RuntimeError: the probe was told to fail" in log.read_text()
    assert not (tmp_path / "out.json").exists()


@pytest.mark.slow
def test_runs_started_and_awaited_from_several_threads_each_get_their_own_exit_code(tmp_path):
    # Unserialised, a thread's Process.start() could read another run's exit status as that thread did: 255 for one.
    def runs(thread: int) -> list[int]:
        return [run_in_process(PROBE, (str(tmp_path / f"{thread}-{i}.json"), "HF_SEQMODELS_PROBE"),
                               tmp_path / f"{thread}-{i}.log", 1) for i in range(RUNS_PER_THREAD)]

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        codes = [code for thread_codes in pool.map(runs, range(THREADS)) for code in thread_codes]
    assert codes == [0] * (THREADS * RUNS_PER_THREAD)
