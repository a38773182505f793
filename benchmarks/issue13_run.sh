#!/usr/bin/env bash
# Issue 13 on the H200: the sm_90a ring sweep, the launch time bound, and the runtime/ops GPU tests it touches.
#
#   run(command="bash benchmarks/issue13_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: issue13_tests.txt (pytest -rA: every test's outcome), env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" issue13_run
timeout "${TEST_TIMEOUT_S:-540}" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --durations=15 \
  --timeout 200 --timeout-method thread \
  tests/gpu/test_launch_timeout_gpu.py tests/gpu/test_hopper_ring_sweep_gpu.py tests/gpu/test_runtime_launch.py \
  tests/gpu/test_ops_hopper_gpu.py > "$OUT/issue13_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/issue13_tests.txt"
grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/issue13_tests.txt" | tail -40
