#!/usr/bin/env bash
# Wider key blocks for d = 128 (FlashAttention-3 takes 176 keys a step for non-causal d = 128): the attention
# table with the 128-row sm_90a config replaced by each variant (bench --variant; causal rows take it too).
#
#   run(command="bash benchmarks/bn_variants_run.sh", carry=[".whl"], kind="nvidia-h100-x1", timeout_s=600)
#
# Output in $OUT: attn_<variant>.json/.txt, attn_default.json/.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" bn_variants_run
for v in ${VARIANTS:-default 128,176,2 128,160,2}; do
  tag=${v//,/_}
  if [ "$v" = default ]; then extra=""; else extra="--variant $v"; fi
  timeout 170 python3 benchmarks/bench_hopper_attention.py $extra --out "$OUT/attn_$tag.json" > "$OUT/attn_$tag.txt" 2>&1
  echo "$v rc=$?"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['geomean_ratio'], [(r['config'][:28], r.get('ratio'), round(r.get('ours_tflops', 0)), r.get('correct')) for r in d['rows']])" "$OUT/attn_$tag.json"
done
