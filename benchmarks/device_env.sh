# Sourced by the H200 run scripts (issue13_run.sh, gpu_tests_run.sh, hopper_run.sh): from the repository root,
# OUT made, unbuffered Python with one BLAS thread and a compile cache in /tmp, the carried wheels (.whl/, any
# depth) installed into /tmp/site, src/ first on the path, and the GPU's name, driver and clocks in $OUT/env.txt.
# $1 names the calling script in the message of a failed install.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/tessera-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1 TESSERA_CACHE_DIR=${TESSERA_CACHE_DIR:-/tmp/tessera-cache}
mapfile -t wheels < <(find .whl -type f -name '*.whl' 2>/dev/null | sort)
if [ "${#wheels[@]}" -gt 0 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "${wheels[@]}" || { echo "$1: installing the carried wheels failed" >&2; exit 1; }
fi
export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
# Byte-compile tessera and the carried wheels as `pip install` does, so a fresh process imports .pyc files (an
# image that sets PYTHONDONTWRITEBYTECODE would otherwise compile ~40 modules in every process: 60 ms of a cold
# start here): import and compile times then read as an installed package's.
python3 -m compileall -q -j 0 src /tmp/site > /dev/null 2>&1 || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt" 2>&1
