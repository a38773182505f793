#!/usr/bin/env bash
# A/B of the general body's warp-scheduler barriers (schedule=pingpong: consumers take turns at issuing each
# step's wgmmas) against the default (cooperative) on the full attention table, back to back on one machine,
# plus the pingpong GPU numerics test. About 5 minutes.
#
#   run(command="bash benchmarks/pingpong_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: pingpong.json/.txt, cooperative.json/.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" pingpong_run
rm -f "$TESSERA_CACHE_DIR/autotune.json"
for sched in pingpong cooperative; do
  timeout 150 python3 benchmarks/bench_hopper_attention.py --schedule "$sched" --out "$OUT/$sched.json" > "$OUT/$sched.txt" 2>&1
  echo "$sched rc=$?"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(r['config'], r.get('ratio'), r.get('ours_tflops'), r.get('correct'), r.get('error','')[:100]) for r in d['rows']], d['geomean_ratio'], d['host'])" "$OUT/$sched.json"
done
