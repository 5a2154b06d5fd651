"""Model cards rendered from results files, and the Hub folder a trained model is uploaded as.

* `catalog`: what a card knows beyond the results: each task's Auto class and scores, the bundled data sets.
* `results`: the run a card states (``results.json``, ``results/<suite>.json``), `format_metric`, and the benchmark
  figures a card quotes, looked up by model family and measure (``results/benchmarks.json``), with the commit
  each was measured at (`run_commit`).
* `describe`, `speed`: the card's sentences on the model, its training and its family's benchmark figures.
* `render`: `render_card`, from the templates in ``templates/`` (package data: an installed package renders too).
* `staging`: `stage_hub_folder` and `check_hub_folder`, offline.
* `hub`: `prepare_hub_folder` (results -> card -> checked folder), `load_check` (loads it back where hf_seqmodels
  cannot be imported) and `upload`.

The repository's own rendering (the tables of README.md and docs/, the cards of ``model_cards/``) is not part of the
package: it lives in ``tools/render/`` (``python -m tools.render [--check]``) and uses this one.
"""

from .catalog import BASE_MODELS, DATASETS, TASKS, CardTask, Metric
from .describe import describe_architecture
from .hub import HubFolder, load_check, prepare_hub_folder, upload
from .render import TEMPLATE_DIR, card_data, render_card
from .results import (
    MEASURES, benchmark_family, benchmark_figure, find_results_file, format_metric, load_benchmarks, load_run,
    run_scores,
)
from .speed import speed_lines
from .staging import check_hub_folder, check_model_dir, stage_hub_folder

__all__ = [
    "BASE_MODELS", "DATASETS", "MEASURES", "TASKS", "TEMPLATE_DIR", "CardTask", "HubFolder", "Metric",
    "benchmark_family", "benchmark_figure", "card_data", "check_hub_folder", "check_model_dir",
    "describe_architecture", "find_results_file", "format_metric", "load_benchmarks", "load_check", "load_run",
    "prepare_hub_folder", "render_card", "run_scores", "speed_lines", "stage_hub_folder", "upload",
]
