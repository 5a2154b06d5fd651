"""What benchmarks.peers.toolkits reads of a command: its peak memory, and the figures the peers' logs state."""

import resource
from datetime import datetime

import pytest

from benchmarks.peers import toolkits


def test_peak_memory_is_the_commands_own(tmp_path):
    """A command's peak, not this (larger) process's: Linux would carry this one's over the fork."""
    ballast = bytearray(300 * 2**20)  # this process is now above 300 MiB
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 300 * 1024
    small = toolkits.run_command(["true"], tmp_path / "small.log")
    large = toolkits.run_command(["python3", "-c", "x = bytearray(200 * 2**20)"], tmp_path / "large.log")
    assert small["peak_rss_mb"] < 100
    assert 200 <= large["peak_rss_mb"] < 300
    assert large["command"] in (tmp_path / "large.log").read_text()
    with pytest.raises(RuntimeError, match="false.*exit 1.*failed.log"):
        toolkits.run_command(["false"], tmp_path / "failed.log")
    del ballast


JOEY_TRAIN = """2026-11-28 04:12:04,455 - INFO - joeynmt.training - Train config:
2026-11-28 04:12:33,505 - INFO - joeynmt.training - Epoch   1, Step:       10, Batch Loss:     5.857192
2026-11-28 04:13:05,572 - INFO - joeynmt.prediction - Generation took 27.2558[sec].
2026-11-28 04:13:30,101 - INFO - joeynmt.prediction - Generation took 2.5[sec].
2026-11-28 04:13:33,335 - INFO - joeynmt.training - Training ended since maximum num. of updates 20 was reached.
2026-11-28 04:11:16,973 - INFO - joeynmt.model - Total params: 4715520
"""
EOLE_LOG = """[2026-11-28 04:09:11,553 INFO] * number of parameters: 3965808
[2026-11-28 04:09:11,588 INFO] Start training loop and validate every 20 steps...
[2026-11-28 04:09:40,001 INFO] valid stats calculation
                           took: 10.25 s.
[2026-11-28 04:10:13,900 INFO] valid stats calculation
                           took: 1.5 s.
[2026-11-28 04:10:14,017 INFO] Saving optimizer and weights to step_20, and symlink to /tmp/pj/eole_model
[2026-11-28 04:11:04,248 INFO] Step 0 time (s): 0.06
[2026-11-28 04:11:04,248 INFO] Subsequent prediction time including all (s): 1.13
"""


def elapsed(start: str, end: str) -> float:
    return (datetime.fromisoformat(end.replace(",", ".")) - datetime.fromisoformat(start.replace(",", "."))
            ).total_seconds()


def test_log_figures():
    assert toolkits.joeynmt_train_seconds(JOEY_TRAIN) == elapsed("2026-11-28 04:12:04,455", "2026-11-28 04:13:33,335")
    assert toolkits.joeynmt_parameters(JOEY_TRAIN) == 4715520
    assert toolkits.joeynmt_decode_seconds(JOEY_TRAIN) == 2.5  # the last
    assert toolkits.joeynmt_validation_seconds(JOEY_TRAIN) == pytest.approx(27.2558 + 2.5)
    assert toolkits.eole_validation_seconds(EOLE_LOG) == pytest.approx(10.25 + 1.5)
    assert toolkits.eole_train_seconds(EOLE_LOG) == elapsed("2026-11-28 04:09:11,588", "2026-11-28 04:10:14,017")
    assert toolkits.eole_parameters(EOLE_LOG) == 3965808
    assert abs(toolkits.eole_decode_seconds(EOLE_LOG) - 1.19) < 1e-9
    ours = '$ python -m benchmarks.peers.decode_ours m s o\n{"seconds": 6.0, "sentences": 1000}\n'
    assert toolkits.ours_decode_seconds(ours) == 6.0
