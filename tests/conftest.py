"""Shared test settings: one torch thread (the machine is shared; tiny models gain nothing from more) and the
bundled data folder."""

import os
from pathlib import Path

import pytest
import torch

REPO_ROOT = Path(__file__).resolve().parent.parent

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The bundled data sets: ``$HF_SEQMODELS_DATA``, else ``<repo>/../shared/data``; skips when absent."""
    path = Path(os.environ.get("HF_SEQMODELS_DATA", REPO_ROOT.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"data folder {path} not found; set HF_SEQMODELS_DATA")
    return path
