"""Suites of models trained side by side on one task, with several seeds, and their tables (what
``scripts/compare.py`` runs): `suites` declares them, `runner` runs them, `aggregate` summarises the seeds,
`significance` compares translations by paired bootstrap, `report` draws the table and the chart."""

from .runner import RunOptions, run_suite
from .suites import DEFAULT_SEEDS, SUITES, Suite

__all__ = ["DEFAULT_SEEDS", "RunOptions", "SUITES", "Suite", "run_suite"]
