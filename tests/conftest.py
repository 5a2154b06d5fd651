"""Shared test settings: one torch thread (the machine is shared; tiny models gain nothing from more) and the
bundled data folder."""

from pathlib import Path

import pytest
import torch

from hf_seqmodels.data import paths

REPO_ROOT = Path(__file__).resolve().parent.parent

torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` run first (each group in the collection's order), so that with ``--dist worksteal``
    (scripts/test.sh) the long tests are shared out between the workers from the start and both end on short ones,
    not one of them alone on a long one. A module fixture that trains is used by slow tests only (else it would be
    made again for the others). Tests marked ``cuda`` need a GPU: skipped where torch sees none (CI, this suite on
    a CPU machine)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # a stable sort
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The bundled data sets (``$HF_SEQMODELS_DATA``, else ``<repo>/../shared/data``). A missing folder fails the
    tests that need it rather than skipping them, so that a run without the data cannot pass unnoticed."""
    path = paths.data_dir()
    if not path.is_dir():
        pytest.fail(f"data folder {path} not found: set HF_SEQMODELS_DATA to the folder of the bundled data sets")
    return path
