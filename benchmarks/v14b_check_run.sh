#!/usr/bin/env bash
# v14 check, short form (2026-12-06, second session): the attention table (dynamic tiles, prepared
# launches with scratch), then the GPU tests that the last changes touch (prepared launches, the
# tile counter, ops on sm_90a incl. the swap-AB tuner, torch ops).
#
#   run(command="bash benchmarks/v14b_check_run.sh", carry=[".whl"], kind="nvidia-h100-x1", timeout_s=480)
#
# Output in $OUT: attn.json/.txt, gpu_tests.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" v14b_check_run
timeout 150 python3 benchmarks/bench_hopper_attention.py --out "$OUT/attn.json" > "$OUT/attn.txt" 2>&1
echo "table rc=$?"; tail -1 "$OUT/attn.txt"
timeout 280 python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 200 --timeout-method thread -n 4 \
  tests/gpu/test_dynamic_tiles_gpu.py tests/gpu/test_ops_hopper_gpu.py tests/gpu/test_launch_overhead_gpu.py \
  tests/gpu/test_ops_gpu.py tests/gpu/test_torch_ops_gpu.py > "$OUT/gpu_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -30
