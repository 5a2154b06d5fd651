"""The bad-input suite's one rule for judging a case: what a user who did something wrong gets back.

Each case is a call that a user could make with a bad config, input, file, option or data file (or a kill, or a
concurrent run), and what should come of it:

- ``error=<regex>``: the call must raise a ValueError / TypeError / OSError subclass (FileNotFoundError,
  FileExistsError, PermissionError, ...) whose message matches ``regex``, which names what to change (the field,
  argument, option, file, row or column). That is a **clear error**. Any other exception, or one whose message does
  not match, is a **raw error**. Returning normally is **silent**.
- ``check=<callable>``: the call must return, and ``check(result)`` must be true: **correct**; false is
  **silent** (a wrong result), an exception a **raw error**.
- A call that has not returned after ``timeout`` seconds is a **hang**.

`judge` returns the outcome; `assert_outcome` also records it for the summary that ``conftest.py`` prints (counts
by area and outcome, and in ``$BAD_INPUTS_SUMMARY`` as JSON when that is set).
"""

import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

CLEAR_ERRORS = (ValueError, TypeError, OSError)
OUTCOMES = ("clear error", "correct", "raw error", "silent", "hang")
COUNTS: dict[str, Counter] = {}  # area -> outcome -> number of cases, filled by assert_outcome


@dataclass
class Judged:
    outcome: str
    detail: str  # the message, or the result, shown when a case fails


def judge(call: Callable[[], object], error: str | None = None, check: Callable[[object], bool] | None = None,
          timeout: float = 120.0) -> Judged:
    """Run ``call`` and judge it (see the module docstring). Exactly one of ``error`` and ``check`` is given."""
    if (error is None) == (check is None):
        raise TypeError("Give exactly one of `error` (the expected message) and `check` (the expected result).")
    box: dict = {}

    def target():
        try:
            box["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - judged below, whatever it is
            box["exception"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return Judged("hang", f"no return after {timeout} s")
    if "exception" in box:
        exc = box["exception"]
        message = f"{type(exc).__name__}: {exc}"
        clear = error is not None and isinstance(exc, CLEAR_ERRORS) and re.search(error, str(exc)) is not None
        return Judged("clear error" if clear else "raw error", message)
    result = box.get("result")
    if error is not None:
        return Judged("silent", f"returned {result!r:.200}, expected an error matching {error!r}")
    return Judged("correct" if check(result) else "silent", f"returned {result!r:.200}")


def assert_outcome(area: str, call: Callable[[], object], error: str | None = None,
                   check: Callable[[object], bool] | None = None, timeout: float = 120.0) -> None:
    """Judge the case, count it under ``area``, and fail unless it gave a clear error or the correct result."""
    judged = judge(call, error, check, timeout)
    COUNTS.setdefault(area, Counter())[judged.outcome] += 1
    wanted = "clear error" if error is not None else "correct"
    assert judged.outcome == wanted, f"{judged.outcome}: {judged.detail}"
