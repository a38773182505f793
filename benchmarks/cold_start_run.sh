#!/usr/bin/env bash
# Second H200 call of 2026-12-06: the GPU tests of the day's fixes (tuned configs looked up, swapped tuning
# arguments, scratch under graph capture, prepared launches with scratch) and the cold-start figures (launch
# records, lazy imports) against Triton in fresh processes.
#
#   run(command="bash benchmarks/cold_start_run.sh", carry=[".whl"], kind="nvidia-h200", timeout_s=330)
#
# Output in $OUT: gpu_tests.txt, cold.json/.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" cold_start_run
timeout 75 python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 70 --timeout-method thread -n 4 \
  -k "tune_gemm or keep_memory_flat or cuda_graph or prepared_launch" \
  tests/gpu/test_ops_hopper_gpu.py tests/gpu/test_launch_overhead_gpu.py tests/gpu/test_torch_ops_gpu.py \
  tests/gpu/test_dynamic_tiles_gpu.py > "$OUT/gpu_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -15
unset TESSERA_CACHE_DIR
timeout 200 python3 benchmarks/cold_start.py --runs 3 --out "$OUT/cold.json" > "$OUT/cold.txt" 2>&1
echo "cold rc=$?"; cat "$OUT/cold.txt" | tail -5
