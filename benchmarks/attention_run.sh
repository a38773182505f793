#!/usr/bin/env bash
# Issue 15 on the H200: the attention GPU tests (ops.attention now runs the sm_90a kernel on sm_90), then the
# side-by-side benchmark against torch SDPA (cuDNN, flash).
#
#   run(command="bash benchmarks/attention_run.sh", carry=[".whl"], timeout_s=600)
#
# BENCH_ARGS=--tune also tunes each row (tuned_* fields).
# Output in $OUT: attention_tests.txt, hopper_attention.json (+ stdout/stderr), env.txt.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" attention_run
timeout "${TEST_TIMEOUT_S:-240}" python3 -m pytest -q -p no:cacheprovider -W ignore -k "attention" \
  tests/gpu/test_kernels_gpu.py tests/gpu/test_ops_gpu.py tests/gpu/test_ops_hopper_gpu.py > "$OUT/attention_tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/attention_tests.txt"
tail -15 "$OUT/attention_tests.txt"
rm -f "$TESSERA_CACHE_DIR/autotune.json"  # default configs first: `ours` is the untuned call (BENCH_ARGS=--tune adds tuned_*)
timeout "${BENCH_TIMEOUT_S:-300}" python3 benchmarks/bench_hopper_attention.py ${BENCH_ARGS:-} \
  --out "$OUT/hopper_attention.json" > "$OUT/hopper_attention_stdout.txt" 2> "$OUT/hopper_attention_stderr.txt"
echo "bench rc=$?"
cut -c1-600 "$OUT/hopper_attention_stdout.txt"; tail -5 "$OUT/hopper_attention_stderr.txt"
if [ -n "${VARIANTS:-}" ]; then  # A/B runs of the 128-row config: VARIANTS="128,128,3 128,64,3"
  for var in $VARIANTS; do
    rm -f "$TESSERA_CACHE_DIR/autotune.json"  # a variant replaces the rule's pick: no tuned winner may override it
    timeout 120 python3 benchmarks/bench_hopper_attention.py --quick --variant "$var" --out "$OUT/variant_${var//,/_}.json" \
      > "$OUT/variant_${var//,/_}.txt" 2>&1
    echo "variant $var rc=$?"; python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(r['config'], r.get('ratio'), r.get('ours_tflops'), r.get('error','')[:100]) for r in d['rows']], d['geomean_ratio'])" "$OUT/variant_${var//,/_}.json"
  done
fi
