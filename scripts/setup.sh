#!/usr/bin/env bash
# Creates a virtual environment in the repository and installs the package (editable) with its dev extra.
# torch is pinned here (not in pyproject) to take the local CPU build instead of a multi-GB CUDA wheel.
#   bash scripts/setup.sh            .venv, with the newest versions pyproject.toml allows
#   bash scripts/setup.sh --locked   .venv, with the last known-good versions of the whole stack
#                                    (constraints/locked.txt), to reproduce a published result
#   bash scripts/setup.sh --lowest   .venv-lowest, with the lowest transformers pyproject.toml allows
#                                    (constraints/lowest.txt)
# VENV=<folder> installs into another folder.
set -euo pipefail
cd "$(dirname "$0")/.."
constraints=()
case "${1:-}" in
  "") venv="${VENV:-.venv}" ;;
  --locked) venv="${VENV:-.venv}"; constraints=(--constraint constraints/locked.txt) ;;
  --lowest) venv="${VENV:-.venv-lowest}"; constraints=(--constraint constraints/lowest.txt) ;;
  *) echo "setup.sh: unknown option '$1' (use --locked, --lowest or nothing)" >&2; exit 2 ;;
esac
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "torch==2.13.0"
# The rest through uv (installed into the environment by pip): it resolves and installs the same newest versions as
# pip, in a tenth of the time (~8 s against ~60 s). torch, already there, satisfies pyproject's range and stays.
"$venv/bin/python" -m pip install --quiet uv
"$venv/bin/uv" pip install --quiet --python "$venv/bin/python" "${constraints[@]}" -e ".[dev]"
"$venv/bin/python" -c "import torch, transformers; print(f'{transformers.__file__.split(\"/lib/\")[0]}: torch {torch.__version__}, transformers {transformers.__version__}')"
