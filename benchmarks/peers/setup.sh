#!/usr/bin/env bash
# One virtual environment per peer toolkit, beside (never inside) our .venv and git-ignored:
#   .venv-peers/joeynmt   joeynmt 2.3.0 (+ importlib_metadata, which its requirements miss)
#   .venv-peers/eole      eole 0.6.4 (+ aiohttp, which its requirements miss)
# and both tokenizers at constraints/locked.txt's version: the decoding servers (serve_joeynmt.py, serve_eole.py)
# cut and join the pieces with our tokenizer.json, as our environment does.
# Both get torch 2.13.0 (the local CPU build, as scripts/setup.sh installs it), so that every toolkit runs on the
# same torch. These environments are only for benchmarks/peers/ (run.py, decoding_grid.py): never a dependency of
# the package, its tests or CI.
#   bash benchmarks/peers/setup.sh             both
#   bash benchmarks/peers/setup.sh eole        one
set -euo pipefail
cd "$(dirname "$0")/../.."
declare -A packages=(
  [joeynmt]="joeynmt==2.3.0 importlib_metadata tokenizers==0.23.3"
  [eole]="eole==0.6.4 aiohttp tokenizers==0.23.3"
)
peers=("$@")
[ ${#peers[@]} -gt 0 ] || peers=(joeynmt eole)
for peer in "${peers[@]}"; do
  if [ -z "${packages[$peer]:-}" ]; then
    echo "setup.sh: unknown peer '$peer' (use: ${!packages[*]})" >&2
    exit 2
  fi
  venv=".venv-peers/$peer"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  # torch pinned beside the peer, so that its requirements cannot move it.
  # shellcheck disable=SC2086  # the list is split on purpose
  "$venv/bin/python" -m pip install --quiet "torch==2.13.0" ${packages[$peer]}
  "$venv/bin/python" -c "import importlib.metadata as m, torch; print('$venv:', '$peer', m.version('$peer'), 'torch', torch.__version__)"
done
