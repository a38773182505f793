#!/usr/bin/env bash
# Issue 13 on the H200: the sm_90a ring sweep, the launch time bound, and the runtime/ops GPU tests it touches.
#
#   run(command="bash benchmarks/issue13_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: issue13_tests.txt (pytest -rA: every test's outcome), env.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tessera-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1 TESSERA_CACHE_DIR=${TESSERA_CACHE_DIR:-/tmp/tessera-cache}
mapfile -t wheels < <(find .whl -type f -name '*.whl' 2>/dev/null | sort)
if [ "${#wheels[@]}" -gt 0 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "${wheels[@]}" || { echo "issue13_run: installing the carried wheels failed" >&2; exit 1; }
fi
export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt" 2>&1
timeout "${TEST_TIMEOUT_S:-540}" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --durations=15 \
  --timeout 200 --timeout-method thread \
  tests/gpu/test_launch_timeout_gpu.py tests/gpu/test_hopper_ring_sweep_gpu.py tests/gpu/test_runtime_launch.py \
  tests/gpu/test_ops_hopper_gpu.py > "$OUT/issue13_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/issue13_tests.txt"
grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/issue13_tests.txt" | tail -40
