#!/usr/bin/env bash
# Nsight Compute on the sm_90a flash attention (the second launch of profile_attention.py): the details page
# (throughput, warp stalls, pipes) and the hottest SASS lines by stall samples, in $OUT.
set -uo pipefail
. "$(dirname "$0")/device_env.sh" profile_attention
ncu -k regex:flash_attention --launch-skip 1 --launch-count 1 --set full --import-source no -f -o "$OUT/fa" \
  python3 benchmarks/profile_attention.py "$@" > "$OUT/ncu_log.txt" 2>&1
echo "ncu rc=$?"; tail -3 "$OUT/ncu_log.txt"
ncu -i "$OUT/fa.ncu-rep" --page details > "$OUT/details.txt" 2>&1
ncu -i "$OUT/fa.ncu-rep" --page source --print-source sass --csv 2>/dev/null | python3 benchmarks/ncu_hot.py 45 > "$OUT/hot.txt"
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall|Tensor" "$OUT/details.txt" | head -40
head -30 "$OUT/hot.txt" | cut -c1-200
rm -f "$OUT/fa.ncu-rep"
