#!/usr/bin/env bash
# Issue 5 on the H200: the sm_90a GEMM GPU tests, then the side-by-side Hopper GEMM benchmark.
#
#   run(command="bash benchmarks/hopper_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: hopper_tests.txt, hopper_gemm.json (+ stdout/stderr), env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" hopper_run
timeout "${TEST_TIMEOUT_S:-330}" python3 -m pytest -q -p no:cacheprovider -W ignore tests/gpu/test_hopper_gemm_gpu.py \
  tests/gpu/test_tma_gpu.py tests/gpu/test_ops_hopper_gpu.py tests/gpu/test_kernels_gpu.py tests/gpu/test_ops_gpu.py \
  > "$OUT/hopper_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/hopper_tests.txt"
tail -3 "$OUT/hopper_tests.txt"
timeout "${BENCH_TIMEOUT_S:-240}" python3 benchmarks/bench_hopper_gemm.py --budget-s "${BENCH_BUDGET_S:-210}" \
  --out "$OUT/hopper_gemm.json" > "$OUT/hopper_gemm_stdout.txt" 2> "$OUT/hopper_gemm_stderr.txt"
echo "bench rc=$?"
tail -60 "$OUT/hopper_gemm_stdout.txt"
