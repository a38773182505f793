#!/usr/bin/env bash
# v14 check (2026-12-06): the attention table (dynamic tiles, prepared launches with scratch), then every GPU test.
#
#   run(command="bash benchmarks/v14_check_run.sh", carry=[".whl"], kind="nvidia-h100-x1", timeout_s=600)
#
# Output in $OUT: attn.json/.txt, gpu_tests.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" v14_check_run
timeout 150 python3 benchmarks/bench_hopper_attention.py --out "$OUT/attn.json" > "$OUT/attn.txt" 2>&1
echo "table rc=$?"; tail -1 "$OUT/attn.txt"
timeout 400 python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 200 --timeout-method thread -n 4 \
  -k "not keep_memory_flat" tests/gpu > "$OUT/gpu_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -30
