#!/usr/bin/env bash
# What the attention's O epilogue costs: each default-config row timed as built (A) and with the O stores of
# interior tiles dropped (B; B writes no O, so only its time means anything), plus the attention-candidate GPU
# tests (every tuning candidate pinned, against float64). About 2 minutes.
#
#   run(command="bash benchmarks/epilogue_ceiling_run.sh", carry=[".whl"], timeout_s=400)
set -uo pipefail
. "$(dirname "$0")/device_env.sh" epilogue_ceiling_run
timeout 120 python3 benchmarks/ab_source_edit.py --attention --drop-lines "reinterpret_cast<tsr_u32*>((wbase" \
  --runs 40 > "$OUT/ceiling.txt" 2>&1
echo "ceiling rc=$?"; cat "$OUT/ceiling.txt" | tail -8
rm -f "$TESSERA_CACHE_DIR/autotune.json"
timeout 200 python3 -m pytest -q -p no:cacheprovider -W ignore -n 4 --timeout 120 \
  -k "attention_candidate or tune_attention" tests/gpu/test_ops_hopper_gpu.py > "$OUT/cand_tests.txt" 2>&1
echo "candidate tests rc=$?"; tail -3 "$OUT/cand_tests.txt"
