#!/usr/bin/env bash
# Creates .venv in the repository and installs the package (editable) with its dev extra.
# torch is pinned here (not in pyproject) to take the local CPU build instead of a multi-GB CUDA wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[dev]"
