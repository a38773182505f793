#!/usr/bin/env bash
# Set-up and entry points for a fresh machine (Python >= 3.11; no GPU needed).
#   ./run.sh demo   the main job: trace the shipped kernels, compile them, run them
#                   (on the GPU when there is one, else on the CPU reference interpreter)
#   ./run.sh test   the test suite (unit + lit), as CI runs it
set -euo pipefail
cd "$(dirname "$0")"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}  # tile-sized matmuls: threads cost more than they give
VENV=${TESSERA_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
stamp="$VENV/.tessera-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  python -m pip install -q --upgrade pip >/dev/null
  python -m pip install -q -e '.[test]'
  touch "$stamp"
fi
case "${1:-}" in
  demo) shift; exec tessera demo "$@" ;;
  test) shift
        python -m pytest tests/unit tests/gpu "$@"
        lit -q tests/lit ;;
  *) echo "usage: ./run.sh demo|test" >&2; exit 2 ;;
esac
