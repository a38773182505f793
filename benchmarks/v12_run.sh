#!/usr/bin/env bash
# v12 of the Hopper attention (16-byte O stores after a quad transpose in registers): the A/B against the 4-byte
# stores on the attention rows (ab_source_edit --edit narrow-stores: A is the product, B the old stores), the
# full table, and the GPU tests the change touches (attention, sm_90a GEMM, the issue-17 surface ops).
#
#   run(command="bash benchmarks/v12_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: ab.txt + ab_source_edit.json, attn.json/.txt, tests_*.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" v12_run
timeout 120 python3 benchmarks/ab_source_edit.py --attention --edit narrow-stores --runs 40 > "$OUT/ab.txt" 2>&1
echo "ab rc=$?"; tail -4 "$OUT/ab.txt"
rm -f "$TESSERA_CACHE_DIR/autotune.json"
timeout 150 python3 benchmarks/bench_hopper_attention.py --out "$OUT/attn.json" > "$OUT/attn.txt" 2>&1
echo "attention bench rc=$?"; tail -1 "$OUT/attn.txt"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(r['config'], r.get('ratio'), r.get('ours_tflops'), r.get('correct')) for r in d['rows']])" "$OUT/attn.json"
timeout 150 python3 -m pytest -q -p no:cacheprovider -W ignore -n 4 --timeout 100 -k "attention" \
  tests/gpu/test_kernels_gpu.py tests/gpu/test_ops_gpu.py tests/gpu/test_ops_hopper_gpu.py > "$OUT/tests_attention.txt" 2>&1
echo "attention tests rc=$?"; tail -2 "$OUT/tests_attention.txt"
timeout 180 python3 -m pytest -q -p no:cacheprovider -W ignore -n 4 --timeout 120 -k "not attention" \
  tests/gpu/test_hopper_gemm_gpu.py tests/gpu/test_ops_hopper_gpu.py tests/gpu/test_surface_gpu.py \
  tests/gpu/test_launcher_gpu.py > "$OUT/tests_gemm_surface.txt" 2>&1
echo "gemm + surface tests rc=$?"; tail -2 "$OUT/tests_gemm_surface.txt"
