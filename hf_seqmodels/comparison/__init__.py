"""Suites of models trained side by side on one task, with several seeds, and their tables (what
``scripts/compare.py`` runs): `suites` declares them, `runner` runs them, `aggregate` summarises the seeds,
`significance` compares translations by paired bootstrap, `report` draws the table and the chart.

The quality experiments with a protocol of their own, each run as ``python -m hf_seqmodels.comparison.<name>`` and
writing ``results/<name>.json``: `translation_bleu` (the main job: ``scripts/run_translation.py``'s defaults, the
attention GRU and LSTM), `ptb_lm` (PTB language models under a time budget), `multi30k_training_options`
(teacher forcing, scheduled sampling, checkpoint averaging) and `recipe_search` (a suite model's recipe chosen on
validation: ``results/<suite>_recipe_search.json``)."""

from .runner import RunOptions, run_suite
from .suites import DEFAULT_SEEDS, SUITES, Suite

__all__ = ["DEFAULT_SEEDS", "RunOptions", "SUITES", "Suite", "run_suite"]
