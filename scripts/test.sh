#!/usr/bin/env bash
# Sets up a virtual environment (scripts/setup.sh) and runs the test suite offline in it. Exits non-zero when a
# test fails, and also when no test is collected (pytest's exit code 5).
#   bash scripts/test.sh                       every test, newest allowed versions (.venv)
#   bash scripts/test.sh --lowest tests/models  the model tests with the lowest allowed transformers (.venv-lowest)
#   bash scripts/test.sh --locked               every test with constraints/locked.txt
# Other arguments go to pytest, e.g. `bash scripts/test.sh -k tokenization`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
# Two workers (pytest-xdist), one torch thread each: the machines have 2 cores and most tests are small. The tests
# marked slow come first (tests/conftest.py) and an idle worker takes half of the other's queue
# (worksteal), so the two end together.
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 OMP_NUM_THREADS=1
exec "$venv/bin/python" -m pytest -x -q -n 2 --dist worksteal "$@"  # pyproject's testpaths: tests/
