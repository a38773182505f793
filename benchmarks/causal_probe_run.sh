#!/usr/bin/env bash
# The causal short-tile row: every causal candidate timed (benchmarks/causal_probe.py) and Nsight Compute on
# B8 H16 S2k d128 causal at the default config. About 2 minutes.
#
#   run(command="bash benchmarks/causal_probe_run.sh", carry=[".whl"], kind="nvidia-h100-x1", timeout_s=400)
set -uo pipefail
. "$(dirname "$0")/device_env.sh" causal_probe_run
export TESSERA_CACHE_DIR=/tmp/probe-cache
timeout 150 python3 benchmarks/causal_probe.py > "$OUT/probe.txt" 2>&1
echo "probe rc=$?"; cat "$OUT/probe.txt" | tail -12
rm -rf /tmp/probe-cache
timeout 150 bash benchmarks/profile_attention.sh --causal --shape 8,16,2048 > "$OUT/ncu_summary.txt" 2>&1
echo "ncu rc=$?"; grep -E "Duration|Throughput|Issue Slots|No Eligible|Warp Cycles" "$OUT/details.txt" | head -10
head -25 "$OUT/hot.txt" | cut -c1-150
timeout 100 python3 -m pytest -q -p no:cacheprovider -W ignore --timeout 60 tests/gpu/test_surface_gpu.py > "$OUT/surface_tests.txt" 2>&1
echo "surface tests rc=$?"; tail -2 "$OUT/surface_tests.txt"
