#!/usr/bin/env bash
# The one script to run on the GPU machine (H200): GPU tests, then the side-by-side benchmark.
#
#   run(command="bash benchmarks/gpu_run.sh", carry=[".whl"], timeout_s=600)
#
# Needs, carried in .whl/ (any depth; one version of each package, pure or cp312 manylinux):
#   xdsl==0.74.0 with immutabledict and ordered-set (the device lacks them), fla-core==0.6.0 (optional peer),
#   and whatever toolchain wheels the lead pins (e.g. .whl/toolchain/cuda_core-*.whl).
# The device already has python3 3.12, torch, triton, cupy, numpy, ml-dtypes, pytest, cuda-core,
# cuda-bindings and nvidia-cuda-nvrtc. Everything lands in $OUT (the run tool's folder; /tmp/tessera-out
# elsewhere): gpu_tests.txt, gpu_figures.json (tessera.ops figures), runtime_figures.json (runtime
# figures), bench.json (also a dated copy), env.txt. Each step is time-boxed so the whole fits one
# 10-minute call; the benchmark's table is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tessera-out}
mkdir -p "$OUT"
TEST_TIMEOUT_S=${TEST_TIMEOUT_S:-300}
BENCH_TIMEOUT_S=${BENCH_TIMEOUT_S:-200}
export PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1
export TESSERA_CACHE_DIR=${TESSERA_CACHE_DIR:-/tmp/tessera-cache}   # shared by the tests and the benchmark
export TESSERA_GPU_OUT="$OUT/gpu_figures.json" TESSERA_FIGURES="$OUT/runtime_figures.json"
t0=$(date +%s)

# 1. carried wheels -> /tmp/site, then src/ first on the path
mapfile -t wheels < <(find .whl -type f -name '*.whl' 2>/dev/null | sort)
if [ "${#wheels[@]}" -gt 0 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "${wheels[@]}" || { echo "gpu_run: installing the carried wheels failed" >&2; exit 1; }
fi
export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"

{
  date -u +"date %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
  python3 - <<'EOF'
import importlib.metadata as md, sys
print("python", sys.version.split()[0])
for d in ("torch", "triton", "cupy-cuda13x", "cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc", "xdsl", "numpy",
          "ml_dtypes", "fla-core", "pytest"):
    try:
        print(d, md.version(d))
    except md.PackageNotFoundError:
        print(d, "absent")
import tessera.runtime as rt
print("tessera sees a GPU:", rt.has_gpu(), rt.why_no_gpu() or rt.device_info())
EOF
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# 2. GPU tests (every test in tests/gpu; they skip only without a device)
# (pytest-timeout, on the device image: a hung kernel ends that run with its stack, not the whole time box)
timeout -k 10 "$TEST_TIMEOUT_S" python3 -m pytest tests/gpu -q -p no:cacheprovider -o addopts="" -rsxf \
  -o timeout=150 -o timeout_method=thread --durations=15 -W ignore::DeprecationWarning > "$OUT/gpu_tests.txt" 2>&1
test_rc=$?
[ "$test_rc" -eq 124 ] && echo "gpu_run: GPU tests stopped at the ${TEST_TIMEOUT_S}s time box" >> "$OUT/gpu_tests.txt"
echo "== GPU tests (exit $test_rc, $(( $(date +%s) - t0 ))s so far): $(tail -n 1 "$OUT/gpu_tests.txt")"
grep -E "^(FAILED|ERROR)|Error:|error: [A-Z_]+:" "$OUT/gpu_tests.txt" | head -n 30

# 3. the benchmark (peers side by side); its JSON is also kept under its dated name
timeout -k 10 "$BENCH_TIMEOUT_S" python3 benchmarks/bench_kernels.py --out "$OUT/bench.json" \
  > "$OUT/bench_log.txt" 2>&1
bench_rc=$?
[ "$bench_rc" -eq 124 ] && echo "gpu_run: benchmark stopped at the ${BENCH_TIMEOUT_S}s time box" >> "$OUT/bench_log.txt"
[ -f "$OUT/bench.json" ] && cp "$OUT/bench.json" "$OUT/$(date -u +%F)-h200.json"
echo "== benchmark (exit $bench_rc, $(( $(date +%s) - t0 ))s in all)"
grep -v -E "^\s*$" "$OUT/bench_log.txt" | tail -n 40
exit $(( test_rc != 0 || bench_rc != 0 ))
