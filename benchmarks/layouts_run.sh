#!/usr/bin/env bash
# Issue 16 on the H200: warm the compile cache in parallel, the GPU tests of every operand layout, then the
# layouts benchmark (default config and tuned vs cuBLAS).
#
#   run(command="bash benchmarks/layouts_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: warm.txt, layouts_tests.txt, hopper-gemm-layouts.json (+ stdout), env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" layouts_run
timeout 120 python3 benchmarks/warm_gemm_cache.py --jobs 16 > "$OUT/warm.txt" 2>&1
tail -3 "$OUT/warm.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout "${TEST_TIMEOUT_S:-200}" python3 -m pytest -q -p no:cacheprovider -W ignore --timeout 120 \
    tests/gpu/test_ops_hopper_gpu.py "tests/gpu/test_hopper_ring_sweep_gpu.py::test_every_config_the_autotuner_may_pick" \
    > "$OUT/layouts_tests.txt" 2>&1
  echo "tests rc=$?" >> "$OUT/layouts_tests.txt"
  tail -5 "$OUT/layouts_tests.txt"
fi
timeout "${BENCH_TIMEOUT_S:-330}" python3 benchmarks/bench_gemm_layouts.py --budget-s "${BENCH_BUDGET_S:-290}" \
  ${BENCH_ARGS:-} --out "$OUT/hopper-gemm-layouts.json" > "$OUT/layouts_stdout.txt" 2>&1
echo "bench rc=$?"
tail -45 "$OUT/layouts_stdout.txt"
