#!/usr/bin/env bash
# Issue 17's GPU parts on the H200: torch custom ops (cuda lane, torch.compile, training step, CUDA graphs),
# the one-line launcher, tessera.testing's timer, the tutorials' GPU benchmarks. Each test bounded.
#
#   run(command="bash benchmarks/torch_habits_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: torch_habits_tests.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" torch_habits_run
timeout "${TEST_TIMEOUT_S:-240}" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 120 \
  --timeout-method thread tests/gpu/test_torch_ops_gpu.py tests/gpu/test_launcher_gpu.py \
  tests/gpu/test_bench_helpers_gpu.py tests/gpu/test_tutorials_gpu.py > "$OUT/torch_habits_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/torch_habits_tests.txt"
grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/torch_habits_tests.txt" | tail -30
