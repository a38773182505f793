#!/usr/bin/env bash
# Every GPU test file on the H200, each test bounded (pytest-timeout), after a layout or runtime change.
#
#   run(command="bash benchmarks/gpu_tests_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: gpu_tests.txt (pytest -rA), env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" gpu_tests_run
# The memory-flat tests read the device's free memory (cuMemGetInfo), which the other workers move: they run
# alone, after the parallel run.
timeout "${TEST_TIMEOUT_S:-480}" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --durations=10 \
  --timeout 200 --timeout-method thread -n 3 -k "not keep_memory_flat" tests/gpu > "$OUT/gpu_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
timeout 120 python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 100 -k keep_memory_flat tests/gpu \
  >> "$OUT/gpu_tests.txt" 2>&1
echo "serial tests rc=$?" >> "$OUT/gpu_tests.txt"
grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -40
