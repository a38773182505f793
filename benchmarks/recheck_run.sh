#!/usr/bin/env bash
# One device call that re-measures what the last session committed without a GPU run (2026-12-06: v10 of the
# Hopper attention -- exp2 as one MUFU.EX2, per-row reciprocal -- and the GEMM's 192 x 160 tile at the 32/160
# register split): the attention table, the attention GPU tests, the sm_90a GEMM GPU tests, and 4000^3 against
# cuBLAS (the shape whose default is the 192 x 160 tile). About 6-7 minutes.
#
#   run(command="bash benchmarks/recheck_run.sh", carry=[".whl"], timeout_s=600)
#
# Output in $OUT: attn.json/.txt, attn_tests.txt, gemm_tests.txt, gemm4000.json/.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" recheck_run
rm -f "$TESSERA_CACHE_DIR/autotune.json"  # default configs: the table is the untuned call
timeout 100 python3 benchmarks/bench_hopper_attention.py --out "$OUT/attn.json" > "$OUT/attn.txt" 2>&1
echo "attention bench rc=$?"; tail -1 "$OUT/attn.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -W ignore -n 4 --timeout 100 -k "attention" \
  tests/gpu/test_kernels_gpu.py tests/gpu/test_ops_gpu.py tests/gpu/test_ops_hopper_gpu.py > "$OUT/attn_tests.txt" 2>&1
echo "attention tests rc=$?"; tail -2 "$OUT/attn_tests.txt"
timeout 180 python3 -m pytest -q -p no:cacheprovider -W ignore -n 4 --timeout 120 -k "not attention" \
  tests/gpu/test_hopper_gemm_gpu.py tests/gpu/test_hopper_ring_sweep_gpu.py tests/gpu/test_ops_hopper_gpu.py \
  > "$OUT/gemm_tests.txt" 2>&1
echo "gemm tests rc=$?"; tail -2 "$OUT/gemm_tests.txt"
timeout 90 python3 benchmarks/bench_hopper_gemm.py --shapes 4000x4000x4000 --budget-s 70 --out "$OUT/gemm4000.json" \
  > "$OUT/gemm4000.txt" 2>&1
echo "gemm bench rc=$?"; tail -c 800 "$OUT/gemm4000.txt"
