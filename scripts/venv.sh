# Sourced by test.sh and quickstart.sh: takes an optional first argument --locked or --lowest off the arguments,
# sets up the virtual environment as scripts/setup.sh does with it (unless it was, from the same pyproject.toml and
# constraints: --if-changed), and leaves its folder in $venv.
setup=()
venv=.venv
case "${1:-}" in
  --locked) setup=(--locked); shift ;;
  --lowest) setup=(--lowest); venv=.venv-lowest; shift ;;
esac
venv="${VENV:-$venv}"
VENV="$venv" bash scripts/setup.sh "${setup[@]}" --if-changed
