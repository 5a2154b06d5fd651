#!/usr/bin/env bash
# Creates a virtual environment in the repository and installs the package (editable) with its dev extra.
# torch is pinned here (not in pyproject) to take the local CPU build instead of a multi-GB CUDA wheel.
#   bash scripts/setup.sh            .venv, with the newest versions pyproject.toml allows
#   bash scripts/setup.sh --locked   .venv, with the last known-good versions of the whole stack
#                                    (constraints/locked.txt), to reproduce a published result
#   bash scripts/setup.sh --lowest   .venv-lowest, with the lowest transformers pyproject.toml allows
#                                    (constraints/lowest.txt)
#   --if-changed                     (after any of these) nothing when this environment was last set up by this
#                                    script from the same pyproject.toml and constraints (test.sh, quickstart.sh)
# VENV=<folder> installs into another folder.
set -euo pipefail
cd "$(dirname "$0")/.."
constraints=()
venv="${VENV:-.venv}"
if_changed=false
for option in "$@"; do
  case "$option" in
    --locked) constraints=(--constraint constraints/locked.txt) ;;
    --lowest) venv="${VENV:-.venv-lowest}"; constraints=(--constraint constraints/lowest.txt) ;;
    --if-changed) if_changed=true ;;
    *) echo "setup.sh: unknown option '$option' (use --locked or --lowest, and --if-changed, or nothing)" >&2
       exit 2 ;;
  esac
done
# What this set-up installs from: this script, pyproject.toml and the constraints file, in the stamp it leaves.
stamp="$venv/.hf_seqmodels-setup"
digest=$(cat scripts/setup.sh pyproject.toml ${constraints[1]:+"${constraints[1]}"} | sha256sum | cut -d" " -f1)
if $if_changed && [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$digest" ]; then
  echo "$venv: set up from this pyproject.toml and constraints already (scripts/setup.sh without --if-changed redoes it)"
  exit 0
fi
rm -f "$stamp"
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
echo "$digest" > "$stamp"
