#!/usr/bin/env bash
# 2026-12-06 (fifth session), the day's H200 calls with the least device time: what the last session changed and
# never ran on a GPU (driver-API cubin loader, swapped decode epilogues, the decode attention candidate, one asm
# statement per wgmma), then the tables.
#
#   run(command="STEP=1 bash benchmarks/h200_batch_run.sh", carry=[".whl"], kind="nvidia-h200", timeout_s=600)
#   run(command="STEP=2 bash benchmarks/h200_batch_run.sh", carry=[".whl"], kind="nvidia-h200", timeout_s=600)
#
# STEP=combo (the least device time for the most: 2026-12-07): the touched GPU tests, the attention table by
# default configs with the decode row tuned (split-KV), the GEMM layouts by default configs.
# STEP=1: attention table with --tune and the Triton column (attn.json, attn.txt: one JSON line per row), GPU tests
# of the touched code (gpu_tests.txt), cold start in fresh processes (cold.json). STEP=2: the GEMM layouts table,
# default and tuned (hopper-gemm-layouts.json), then the long GPU tests if time is left. With little device time:
#   STEP=2 GEMM_ARGS="--no-tune --budget-s 280" GEMM_TIMEOUT_S=300 SKIP_TESTS2=1 (default configs only).
# STEP=decode (2026-12-07, ninth and tenth sessions; one call of <= 9 minutes): the stream-K GPU tests, the 30-row
# GEMM table with tuning (after a read flush, the write-flush timing beside; its tuner holds the cluster split-K
# candidates), the phase stamps of the decode kernel and of the 1024x1024x16384 split-K default (decode_stamps),
# the K sweep of intercept and streaming rate (decode_floor), then stream-K beside split-K at 1024x1024x16384
# (decode_config_probe --set skinny).
set -uo pipefail
# (twelfth session) a compile cache warmed on the CPU machine and carried (.devcache: `TESSERA_CACHE_DIR=$PWD/.devcache
# python benchmarks/warm_gemm_cache.py`; the build id hashes file contents, so the device's copy of the tree hits it)
[ -d "$(dirname "$0")/../.devcache" ] && export TESSERA_CACHE_DIR="$(cd "$(dirname "$0")/.." && pwd)/.devcache"
. "$(dirname "$0")/device_env.sh" h200_batch_run
if [ "${STEP:-1}" = twelfth ]; then  # an H200: the issue's table (default and tuned) first, then the GPU tests;
  # another GPU: the tests first, then the table by default configs
  h200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && h200=1
  tests() {
    local left=$((${DEADLINE_S:-565} - SECONDS - 5)); [ "$left" -gt 150 ] && left=150
    [ "$left" -lt 30 ] && { echo "tests skipped"; return; }
    timeout "$left" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 90 --timeout-method thread -n 4 \
      -k "decode or swap or every_layout or scatter or tune or (autotuner_may_pick and (fixupscatter or BM64-BN64-BK128-stages6-schedulecooperative-cluster1-splitk1-))" \
      tests/gpu/test_ops_hopper_gpu.py tests/gpu/test_hopper_ring_sweep_gpu.py tests/gpu/test_hopper_gemm_gpu.py \
      > "$OUT/gpu_tests.txt" 2>&1
    echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
    grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -12
  }
  table() {  # $1: --no-tune or nothing
    local left=$((${DEADLINE_S:-565} - SECONDS)); [ "$left" -lt 90 ] && { echo "table skipped"; return; }
    [ "$h200" = 1 ] && [ "$left" -gt 470 ] && left=470
    rm -f "$TESSERA_CACHE_DIR/autotune.json"
    timeout "$left" python3 benchmarks/bench_gemm_layouts.py $1 --budget-s $((left - 25)) \
      --out "$OUT/hopper-gemm-layouts.json" > "$OUT/log.txt" 2>&1
    echo "gemm rc=$?"; tail -3 "$OUT/log.txt" | cut -c1-600
  }
  probe() {  # name timeout command...: an H200's probes, as the call's time allows
    local name=$1 want=$2; shift 2
    local left=$((${DEADLINE_S:-565} - SECONDS)); [ "$left" -lt 25 ] && { echo "$name skipped"; return; }
    timeout $((want < left ? want : left)) "$@" >> "$OUT/probes.txt" 2>&1; echo "$name rc=$?"
  }
  if [ "$h200" = 1 ]; then
    table ""
    probe do_bench 50 python3 -m pytest -q -rA -p no:cacheprovider -W ignore tests/gpu/test_bench_helpers_gpu.py
    tests
    # where the H200's decode rows stand: the K sweep (intercept and streaming rate), M = 64 and the skinny split-K
    probe deep 80 python3 benchmarks/decode_config_probe.py --set deep --out "$OUT/deep.json"
    probe floor 60 python3 benchmarks/decode_floor.py --out "$OUT/floor.json"
    probe m64 60 python3 benchmarks/decode_config_probe.py --set m64 --out "$OUT/m64.json"
    probe skinny 80 python3 benchmarks/decode_config_probe.py --set skinny --out "$OUT/skinny.json"
  else  # (thirteenth session) the H100 figures are committed: only what has not run on a GPU (do_bench's read
    # probe, the untuned dispatch of the review mend), then the tests if time is left
    timeout 60 python3 -m pytest -q -rA -p no:cacheprovider -W ignore tests/gpu/test_bench_helpers_gpu.py \
      > "$OUT/serial_tests.txt" 2>&1; echo "serial tests rc=$?" | tee -a "$OUT/serial_tests.txt"
    grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/serial_tests.txt" | tail -6
    [ "${H100_TESTS:-0}" = 1 ] && tests
  fi
  exit 0
fi
if [ "${STEP:-1}" = defaults ]; then  # (eleventh session, ~5 minutes) the new defaults' GPU tests, then the table
  timeout 150 python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 90 --timeout-method thread -n 4 \
    -k "decode or swap or every_layout or scatter or (autotuner_may_pick and (fixupscatter or BM64-BN64-BK128-stages6-schedulecooperative-cluster1-splitk1-))" \
    tests/gpu/test_ops_hopper_gpu.py tests/gpu/test_hopper_ring_sweep_gpu.py tests/gpu/test_hopper_gemm_gpu.py \
    > "$OUT/gpu_tests.txt" 2>&1
  echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
  timeout 40 python3 -m pytest -q -rA -p no:cacheprovider -W ignore tests/gpu/test_bench_helpers_gpu.py \
    >> "$OUT/gpu_tests.txt" 2>&1
  echo "serial tests rc=$?" >> "$OUT/gpu_tests.txt"
  grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -12
  left=$((${DEADLINE_S:-400} - SECONDS)); [ "$left" -lt 90 ] && exit 0
  # (twelfth session) an H200 tunes too (the issue's table: default and tuned); another GPU the defaults only
  tune=--no-tune; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && tune=
  rm -f "$TESSERA_CACHE_DIR/autotune.json"
  timeout "$left" python3 benchmarks/bench_gemm_layouts.py $tune --budget-s $((left - 25)) \
    --out "$OUT/hopper-gemm-layouts.json" > "$OUT/log.txt" 2>&1
  echo "gemm rc=$?"; tail -3 "$OUT/log.txt" | cut -c1-600
  exit 0
fi
if [ "${STEP:-1}" = auto ]; then  # an H200 runs the decode step (the table with it), another GPU the probes
  if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then STEP=decode; else STEP=probe; fi
  echo "STEP=$STEP"
fi
if [ "${STEP:-1}" = probe ]; then  # (eleventh session; ~6 minutes) the touched GPU tests, then the probes only
  timeout 110 python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 60 --timeout-method thread -n 4 \
    -k "stream or scatter or column or i32 or swapped or decode or flush or copy" tests/gpu/test_hopper_gemm_gpu.py \
    tests/gpu/test_column_major_store_gpu.py tests/gpu/test_ops_hopper_gpu.py tests/gpu/test_bench_helpers_gpu.py \
    > "$OUT/gpu_tests.txt" 2>&1
  echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
  grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -8
  : > "$OUT/log.txt"
  for fix in gather scatter; do
    timeout 30 python3 benchmarks/decode_stamps.py --shape 1024x1024x16384 --config '{"BM": 128, "BN": 256, "BK": 64,
"stages": 4, "schedule": "cooperative", "cluster": 1, "splitk": 4, "multicast": "b", "fixup": "'$fix'"}' \
      --out "$OUT/stamps-$fix.json" >> "$OUT/log.txt" 2>&1; echo "stamps $fix rc=$?"
  done
  timeout 90 python3 benchmarks/decode_config_probe.py --set skinny --out "$OUT/skinny.json" >> "$OUT/log.txt" 2>&1
  echo "skinny rc=$?"
  timeout 70 python3 benchmarks/decode_config_probe.py --set m64 --out "$OUT/m64.json" >> "$OUT/log.txt" 2>&1
  echo "m64 rc=$?"; grep '^{"shape' "$OUT/log.txt" | cut -c1-700
  exit 0
fi
if [ "${STEP:-1}" = decode ]; then
  # at most 8 files come back: gpu_tests.txt, log.txt (every script's output), env.txt and five JSON files
  # (gemm table, skinny, m64, stamps, floor)
  # stream-K's tests first (its even split first ran on a GPU in the tenth session)
  # (eleventh session) then the column-major and i32 stores, the swapped decode products, do_bench's read eviction
  timeout "${TESTS_TIMEOUT_S:-100}" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 60 \
    --timeout-method thread -n 4 -k "stream or scatter or column or i32 or swapped or decode or flush or copy" \
    tests/gpu/test_hopper_gemm_gpu.py tests/gpu/test_column_major_store_gpu.py tests/gpu/test_ops_hopper_gpu.py \
    tests/gpu/test_bench_helpers_gpu.py > "$OUT/gpu_tests.txt" 2>&1
  echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
  grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -8
  rm -f "$TESSERA_CACHE_DIR/autotune.json"
  timeout "${GEMM_TIMEOUT_S:-265}" python3 benchmarks/bench_gemm_layouts.py --budget-s "${GEMM_BUDGET_S:-235}" \
    --out "$OUT/hopper-gemm-layouts.json" > "$OUT/log.txt" 2>&1
  echo "gemm rc=$?"; tail -3 "$OUT/log.txt" | cut -c1-400
  # (eleventh session) then, as time allows: the skinny probe (split-K fixup=scatter beside gather), M = 64
  # unswapped in 64 x 64 tiles beside the swapped default, the decode kernel's phases, the K sweep
  probe() {  # name timeout command...: run it if the call's ~570 s leave time for it
    local name=$1 want=$2; shift 2
    local left=$((${DEADLINE_S:-570} - SECONDS)); [ "$left" -lt 25 ] && { echo "$name skipped"; return; }
    timeout $((want < left ? want : left)) "$@" >> "$OUT/log.txt" 2>&1; echo "$name rc=$?"
  }
  probe skinny 80 python3 benchmarks/decode_config_probe.py --set skinny --out "$OUT/skinny.json"
  probe m64 60 python3 benchmarks/decode_config_probe.py --set m64 --out "$OUT/m64.json"
  grep '^{"shape' "$OUT/log.txt" | cut -c1-700
  probe stamps 45 python3 benchmarks/decode_stamps.py --out "$OUT/stamps.json"
  probe floor 60 python3 benchmarks/decode_floor.py --out "$OUT/floor.json"
  exit 0
fi
if [ "${STEP:-1}" = combo ]; then  # one call of ~9 minutes: every touched GPU test, both tables by default configs
  timeout "${TESTS_TIMEOUT_S:-120}" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 100 \
    --timeout-method thread -n 4 -k "not tune_ and not keep_memory_flat and not tutorial and not ring_depth and not \
autotuner_may_pick" tests/gpu/test_runtime_launch.py tests/gpu/test_ops_gpu.py tests/gpu/test_ops_hopper_gpu.py \
    tests/gpu/test_torch_ops_gpu.py tests/gpu/test_dynamic_tiles_gpu.py tests/gpu/test_hopper_gemm_gpu.py > "$OUT/gpu_tests.txt" 2>&1
  echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
  grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -25
  rm -f "$TESSERA_CACHE_DIR/autotune.json"
  timeout "${ATTN_TIMEOUT_S:-190}" python3 benchmarks/bench_hopper_attention.py --no-triton --tune-decode \
    --out "$OUT/attn.json" > "$OUT/attn.txt" 2>&1
  echo "attention rc=$?"; tail -1 "$OUT/attn.txt" | cut -c1-400
  timeout "${GEMM_TIMEOUT_S:-250}" python3 benchmarks/bench_gemm_layouts.py --no-tune --budget-s "${GEMM_BUDGET_S:-230}" \
    --out "$OUT/hopper-gemm-layouts.json" > "$OUT/gemm.txt" 2>&1
  echo "gemm rc=$?"; tail -3 "$OUT/gemm.txt" | cut -c1-400
elif [ "${STEP:-1}" = tests ]; then  # the least device time: the GPU tests of the touched code, then the quick table
  timeout "${TESTS_TIMEOUT_S:-110}" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 100 \
    --timeout-method thread -n 4 -k "not tune_ and not keep_memory_flat and not tutorial and not ring_depth and not \
autotuner_may_pick" tests/gpu/test_runtime_launch.py tests/gpu/test_ops_gpu.py tests/gpu/test_ops_hopper_gpu.py \
    tests/gpu/test_torch_ops_gpu.py tests/gpu/test_dynamic_tiles_gpu.py > "$OUT/gpu_tests.txt" 2>&1
  echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
  grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -25
  timeout "${ATTN_TIMEOUT_S:-60}" python3 benchmarks/bench_hopper_attention.py --quick --no-triton \
    --out "$OUT/attn_quick.json" > "$OUT/attn_quick.txt" 2>&1
  echo "attention rc=$?"; cut -c1-300 "$OUT/attn_quick.txt" | tail -4
elif [ "${STEP:-1}" = 1 ]; then
  rm -f "$TESSERA_CACHE_DIR/autotune.json"  # `ours` is the untuned call; --tune adds tuned_*
  timeout "${ATTN_TIMEOUT_S:-320}" python3 benchmarks/bench_hopper_attention.py ${ATTN_ARGS:---tune} --out "$OUT/attn.json" > "$OUT/attn.txt" 2>&1
  echo "attention rc=$?"; tail -1 "$OUT/attn.txt" | cut -c1-400
  timeout "${TESTS_TIMEOUT_S:-140}" python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 120 --timeout-method thread -n 4 \
    -k "not tune_ and not keep_memory_flat and not tutorial and not ring_depth and not autotuner_may_pick" \
    tests/gpu/test_runtime_launch.py tests/gpu/test_ops_gpu.py tests/gpu/test_ops_hopper_gpu.py \
    tests/gpu/test_torch_ops_gpu.py tests/gpu/test_dynamic_tiles_gpu.py tests/gpu/test_kernels_gpu.py \
    tests/gpu/test_launch_timeout_gpu.py tests/gpu/test_hopper_gemm_gpu.py > "$OUT/gpu_tests.txt" 2>&1
  echo "tests rc=$?" >> "$OUT/gpu_tests.txt"
  grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests.txt" | tail -25
  unset TESSERA_CACHE_DIR
  timeout "${COLD_TIMEOUT_S:-95}" python3 benchmarks/cold_start.py --runs 2 --out "$OUT/cold.json" > "$OUT/cold.txt" 2>&1
  echo "cold rc=$?"; tail -6 "$OUT/cold.txt"
else
  rm -f "$TESSERA_CACHE_DIR/autotune.json"
  timeout "${GEMM_TIMEOUT_S:-445}" python3 benchmarks/bench_gemm_layouts.py ${GEMM_ARGS:---budget-s 415} --out "$OUT/hopper-gemm-layouts.json" \
    > "$OUT/gemm.txt" 2>&1
  echo "gemm rc=$?"; tail -3 "$OUT/gemm.txt" | cut -c1-400
  [ -n "${SKIP_TESTS2:-}" ] && exit 0
  timeout 70 python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 60 -n 3 -k "tune_" \
    tests/gpu/test_ops_hopper_gpu.py > "$OUT/gpu_tests2.txt" 2>&1
  echo "tests rc=$?" >> "$OUT/gpu_tests2.txt"
  timeout 40 python3 -m pytest -q -rA -p no:cacheprovider -W ignore --timeout 35 -k "keep_memory_flat" \
    tests/gpu/test_launch_overhead_gpu.py tests/gpu/test_runtime_launch.py >> "$OUT/gpu_tests2.txt" 2>&1
  echo "serial tests rc=$?" >> "$OUT/gpu_tests2.txt"; grep -E "^(FAILED|ERROR)|passed|failed|rc=" "$OUT/gpu_tests2.txt" | tail
fi
