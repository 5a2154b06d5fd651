"""Prints the bad-input suite's counts by area and outcome at the end of a run (and writes them as JSON to
``$BAD_INPUTS_SUMMARY`` when set)."""

import json
import os

from .outcomes import COUNTS, OUTCOMES


def pytest_terminal_summary(terminalreporter):
    if not COUNTS:
        return
    terminalreporter.section("bad-input cases by outcome")
    total = {outcome: sum(counts[outcome] for counts in COUNTS.values()) for outcome in OUTCOMES}
    for area, counts in sorted(COUNTS.items()) + [("all", total)]:
        terminalreporter.write_line(f"{area:14s} " + "  ".join(f"{outcome}: {counts[outcome]}" for outcome in OUTCOMES))
    if path := os.environ.get("BAD_INPUTS_SUMMARY"):
        with open(path, "w") as file:
            json.dump({area: dict(counts) for area, counts in COUNTS.items()}, file, indent=2)
