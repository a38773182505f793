#!/usr/bin/env bash
# v14 (dynamic tiles by default, 2026-12-06): the attention table with the new defaults, then the attention GPU
# tests (every candidate pinned, the dynamic-tile launches) in one session on one GPU.
#
#   run(command="bash benchmarks/dynamic_tiles_table_run.sh", carry=[".whl"], kind="nvidia-h100-x1", timeout_s=600)
#
# Output in $OUT: attn.json/.txt, tests_attention.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" dynamic_tiles_table_run
timeout 240 python3 benchmarks/bench_hopper_attention.py --out "$OUT/attn.json" > "$OUT/attn.txt" 2>&1
echo "table rc=$?"; tail -14 "$OUT/attn.txt"
timeout 300 python3 -m pytest -q -rf -p no:cacheprovider -W ignore -n 4 --timeout 150 -k "attention or dynamic" \
  tests/gpu/test_kernels_gpu.py tests/gpu/test_ops_gpu.py tests/gpu/test_ops_hopper_gpu.py \
  tests/gpu/test_dynamic_tiles_gpu.py > "$OUT/tests_attention.txt" 2>&1
echo "attention tests rc=$?"; tail -3 "$OUT/tests_attention.txt"
