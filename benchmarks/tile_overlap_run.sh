#!/usr/bin/env bash
# Tile overlap (ws_tile_overlap, 2026-12-06): the attention table with the code before it (.ab_old/src: `git archive
# ec074ba src | tar -x -C .ab_old`) and after, in one session on one GPU, then the attention GPU tests.
#
#   run(command="bash benchmarks/tile_overlap_run.sh", carry=[".whl", ".ab_old"], kind="nvidia-h100-x1", timeout_s=600)
#
# Output in $OUT: attn_old.json/.txt, attn_new.json/.txt, tests_attention.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" tile_overlap_run
NEW_PATH=$PYTHONPATH
OLD_PATH="$PWD/.ab_old/src:/tmp/site"
PYTHONPATH=$OLD_PATH TESSERA_CACHE_DIR=/tmp/tessera-cache-old timeout 170 python3 benchmarks/bench_hopper_attention.py \
  --out "$OUT/attn_old.json" > "$OUT/attn_old.txt" 2>&1
echo "old rc=$?"; tail -1 "$OUT/attn_old.txt"
PYTHONPATH=$NEW_PATH timeout 170 python3 benchmarks/bench_hopper_attention.py --out "$OUT/attn_new.json" \
  > "$OUT/attn_new.txt" 2>&1
echo "new rc=$?"; tail -1 "$OUT/attn_new.txt"
python3 - "$OUT/attn_old.json" "$OUT/attn_new.json" <<'PY'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
for a, b in zip(old["rows"], new["rows"]):
    print(f"{b['config']:40s} old {a.get('ratio')} new {b.get('ratio')} ours {a.get('ours_tflops', 0):.0f} -> "
          f"{b.get('ours_tflops', 0):.0f} TFLOP/s correct {b.get('correct')}")
print("geomean old", old.get("geomean_ratio"), "new", new.get("geomean_ratio"))
PY
timeout 200 python3 -m pytest -q -rf -p no:cacheprovider -W ignore -n 4 --timeout 120 -k "attention" \
  tests/gpu/test_kernels_gpu.py tests/gpu/test_ops_gpu.py tests/gpu/test_ops_hopper_gpu.py > "$OUT/tests_attention.txt" 2>&1
echo "attention tests rc=$?"; tail -2 "$OUT/tests_attention.txt"
