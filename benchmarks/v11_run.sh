#!/usr/bin/env bash
# v11 of the Hopper attention (d = 64 takes turns at the tensor cores by default; pingpong is a tuning candidate):
# the attention GPU tests (every candidate pinned, against float64), where a warm ops.attention call spends its
# host time, Nsight Compute on the shortest-tile row (B16 H16 S1k d128), and the full table. About 6 minutes.
#
#   run(command="bash benchmarks/v11_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: attn_tests.txt, host.txt, details.txt, hot.txt, attn.json/.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" v11_run
rm -f "$TESSERA_CACHE_DIR/autotune.json"
timeout 200 python3 -m pytest -q -p no:cacheprovider -W ignore -n 4 --timeout 120 -k "attention" \
  tests/gpu/test_kernels_gpu.py tests/gpu/test_ops_gpu.py tests/gpu/test_ops_hopper_gpu.py > "$OUT/attn_tests.txt" 2>&1
echo "attention tests rc=$?"; tail -3 "$OUT/attn_tests.txt"
timeout 60 python3 benchmarks/profile_host.py 20000 > "$OUT/host.txt" 2>&1
echo "host rc=$?"; head -40 "$OUT/host.txt" | cut -c1-160
rm -f "$TESSERA_CACHE_DIR/autotune.json"
timeout 150 python3 benchmarks/bench_hopper_attention.py --out "$OUT/attn.json" > "$OUT/attn.txt" 2>&1
echo "attention bench rc=$?"; tail -1 "$OUT/attn.txt"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(r['config'], r.get('ratio'), r.get('ours_tflops'), r.get('correct')) for r in d['rows']])" "$OUT/attn.json"
timeout 150 bash benchmarks/profile_attention.sh --shape 16,16,1024 > "$OUT/ncu_summary.txt" 2>&1
echo "ncu rc=$?"; head -60 "$OUT/ncu_summary.txt" | cut -c1-220
