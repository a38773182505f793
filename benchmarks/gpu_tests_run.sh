#!/usr/bin/env bash
# Every GPU test file on the H200, each test bounded (pytest-timeout), after a layout or runtime change.
#
#   run(command="bash benchmarks/gpu_tests_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: gpu_tests.txt (pytest -rA), env.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tessera-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1 TESSERA_CACHE_DIR=${TESSERA_CACHE_DIR:-/tmp/tessera-cache}
mapfile -t wheels < <(find .whl -type f -name '*.whl' 2>/dev/null | sort)
if [ "${#wheels[@]}" -gt 0 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "${wheels[@]}" || { echo "gpu_tests_run: installing the carried wheels failed" >&2; exit 1; }
fi
export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt" 2>&1
timeout "${TEST_TIMEOUT_S:-540}" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --durations=10 \
  --timeout 200 --timeout-method thread -n 3 tests/gpu > "$OUT/gpu_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -40
