"""Top SASS lines by warp-stall samples from `ncu --page source --print-source sass --csv` output (stdin)."""

import csv
import sys

rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith('"')) if r and r[0] != "Kernel Name"]
head, body = rows[0], rows[1:]
print(head)
def col(name):
    return next((i for i, h in enumerate(head) if h.strip() == name), None)
src = col("Source")
samp = col("Warp Stall Sampling (All Samples)")
if samp is None:
    samp = next(i for i, h in enumerate(head) if "Sampl" in h)
tot = sum(float(r[samp] or 0) for r in body if len(r) > samp)
top = sorted((r for r in body if len(r) > samp), key=lambda r: -float(r[samp] or 0))[:int(sys.argv[1]) if len(sys.argv) > 1 else 40]
for r in top:
    extra = [f"{head[i]}={r[i]}" for i in range(len(head)) if "stall" in head[i].lower() and r[i] not in ("", "0")][:6]
    print(f"{float(r[samp]) / tot:6.1%} {r[src][:70]:70s}", " ".join(extra)[:300])
