"""Where the repository and the bundled data sets live.

``HF_SEQMODELS_DATA``: the data folder (one sub-folder per data set, each with ``{train,validation,test}.jsonl.gz``).
Default: ``<repo>/../shared/data``. It is read at call time, so tests and users can change it without re-importing.
(The `evaluate` metric scripts' folder, ``HF_SEQMODELS_METRICS``, is `evaluation.metrics_dir`.)

`check_model_path` checks a model option (a folder or a Hub repository id) before transformers reads it.
"""

import os
from pathlib import Path

from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

REPO_ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """The folder holding the bundled data sets (``$HF_SEQMODELS_DATA``)."""
    return Path(os.environ.get("HF_SEQMODELS_DATA", REPO_ROOT.parent / "shared" / "data"))


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
