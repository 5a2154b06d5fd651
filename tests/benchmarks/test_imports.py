"""Every benchmark module imports: the peers' command imported a function that a refactoring of benchmarks.run
removed, and no test that runs a benchmark reached it."""

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(".".join(path.relative_to(ROOT).with_suffix("").parts)
                 for path in (ROOT / "benchmarks").rglob("*.py") if path.stem != "__main__")


@pytest.mark.parametrize("module", MODULES)
def test_every_benchmark_module_imports(module):
    importlib.import_module(module)
