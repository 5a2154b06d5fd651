#!/usr/bin/env bash
# Sets up .venv and runs the test suite offline. Exits non-zero when a test fails, and also when no test is
# collected (pytest's exit code 5). Extra arguments go to pytest, e.g. `bash scripts/test.sh -k tokenization`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
exec .venv/bin/python -m pytest -x -q tests "$@"
