"""Where the bundled data sets and `evaluate` metric scripts live: one setting each.

* ``HF_SEQMODELS_DATA``: the data folder (one sub-folder per data set, each with
  ``{train,validation,test}.jsonl.gz``). Default: ``<repo>/../shared/data``.
* ``HF_SEQMODELS_METRICS``: a folder of `evaluate` metric scripts (one sub-folder per metric).
  Default: ``<repo>/../shared/evaluate_metrics``. A metric missing there is loaded from the Hub by name.

Both are read at call time, so tests and users can change them without re-importing.

`check_model_path` checks a model option (a folder or a Hub repository id) before transformers reads it.
"""

import os
from pathlib import Path

import evaluate
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

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


def check_model_path(name_or_path: str, option: str = "--model_name_or_path") -> None:
    """Raise a ValueError naming ``option`` unless ``name_or_path`` is an existing folder or a Hub repository id.

    The Hub is not asked. A well-formed id whose first part is a local folder (``outputs/my-run``) is read as a
    path that does not exist, not as a Hub id: that is what a mistyped output folder looks like.
    """
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return
    under_a_local_folder = "/" in name_or_path and path.parent.is_dir()
    if _is_repo_id(name_or_path) and not under_a_local_folder:
        return
    raise ValueError(f"{option}={name_or_path!r}: there is no such folder ({path.absolute()}). Pass a saved model "
                     "folder (the output_dir of a training script) or a Hub repository id 'user/name'.")


def _is_repo_id(name: str) -> bool:
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True
