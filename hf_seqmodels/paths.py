"""Where the bundled data sets and `evaluate` metric scripts live: one setting each.

* ``HF_SEQMODELS_DATA``: the data folder (one sub-folder per data set, each with
  ``{train,validation,test}.jsonl.gz``). Default: ``<repo>/../shared/data``.
* ``HF_SEQMODELS_METRICS``: a folder of `evaluate` metric scripts (one sub-folder per metric).
  Default: ``<repo>/../shared/evaluate_metrics``. A metric missing there is loaded from the Hub by name.

Both are read at call time, so tests and users can change them without re-importing.
"""

import os
from pathlib import Path

import evaluate

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The folder holding the bundled data sets (``$HF_SEQMODELS_DATA``)."""
    return Path(os.environ.get("HF_SEQMODELS_DATA", REPO_ROOT.parent / "shared" / "data"))


def metrics_dir() -> Path:
    """The folder holding local copies of `evaluate` metric scripts (``$HF_SEQMODELS_METRICS``)."""
    return Path(os.environ.get("HF_SEQMODELS_METRICS", REPO_ROOT.parent / "shared" / "evaluate_metrics"))


def load_metric(name: str) -> evaluate.EvaluationModule:
    """``evaluate.load`` from the local copy ``metrics_dir()/name`` when it exists, else from the Hub by name."""
    folder = metrics_dir() / name
    if folder.is_dir():
        return evaluate.load(str(folder))
    try:
        return evaluate.load(name)
    except (FileNotFoundError, ConnectionError) as error:
        raise FileNotFoundError(
            f"The `evaluate` metric {name!r} is neither in {folder} nor reachable on the Hub: set "
            "HF_SEQMODELS_METRICS to a folder of evaluate metric scripts (one sub-folder per metric)."
        ) from error
