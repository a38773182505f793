#!/usr/bin/env bash
# tiles=dynamic on the GPU: its tests (every tile on every launch), then alternating A/B of static against
# dynamic tiles on causal and non-causal attention rows (outputs compared).
#
#   run(command="bash benchmarks/dynamic_tiles_run.sh", carry=[".whl"], kind="nvidia-h100-x1", timeout_s=600)
#
# Output in $OUT: dynamic_tests.txt, ab_dynamic_causal.json, ab_dynamic_full.json, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" dynamic_tiles_run
timeout 240 python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 200 tests/gpu/test_dynamic_tiles_gpu.py \
  > "$OUT/dynamic_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/dynamic_tests.txt"
tail -5 "$OUT/dynamic_tests.txt"
python3 benchmarks/ab_attention_config.py --a 128,128,2,cooperative --b 128,128,2,cooperative,dynamic \
  --rows 8x16x2048c,4x16x4096c,1x16x16384c --runs ${RUNS:-30} && mv "$OUT/ab_attention_config.json" "$OUT/ab_dynamic_causal.json"
python3 benchmarks/ab_attention_config.py --a 128,128,3 --b 128,128,3,cooperative,dynamic \
  --rows 16x16x1024,4x16x4096 --runs ${RUNS:-30} && mv "$OUT/ab_attention_config.json" "$OUT/ab_dynamic_full.json"
