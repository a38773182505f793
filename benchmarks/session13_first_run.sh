#!/usr/bin/env bash
# First GPU run of the 2026-12-06 session: the code committed last session without a GPU run (gemm backward
# with the fused activation derivative, training step, CUDA graphs; rank-1/mask/atomic/cumsum surface ops and
# the sm_90a masked epilogue and atomic split-K), then the attention table and the other attention/GEMM GPU tests.
#
#   run(command="bash benchmarks/session13_first_run.sh", carry=[".whl"], kind="nvidia-h100-x1", timeout_s=600)
#
# Output in $OUT: torch_surface_tests.txt, attn.json/.txt, tests_*.txt, env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" session13_first_run
timeout 200 python3 -m pytest -q -rf -p no:cacheprovider -W ignore -n 4 --timeout 150 \
  tests/gpu/test_torch_ops_gpu.py tests/gpu/test_surface_gpu.py tests/gpu/test_launcher_gpu.py \
  > "$OUT/torch_surface_tests.txt" 2>&1
echo "torch+surface tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/torch_surface_tests.txt" | tail -20
rm -f "$TESSERA_CACHE_DIR/autotune.json"
timeout 150 python3 benchmarks/bench_hopper_attention.py --out "$OUT/attn.json" > "$OUT/attn.txt" 2>&1
echo "attention bench rc=$?"; tail -1 "$OUT/attn.txt"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(r['config'], r.get('ratio'), r.get('correct')) for r in d['rows']])" "$OUT/attn.json"
timeout 200 python3 -m pytest -q -rf -p no:cacheprovider -W ignore -n 4 --timeout 120 \
  tests/gpu/test_hopper_gemm_gpu.py tests/gpu/test_ops_hopper_gpu.py tests/gpu/test_kernels_gpu.py \
  > "$OUT/tests_hopper.txt" 2>&1
echo "hopper tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests_hopper.txt" | tail -20
