"""Where causal attention's short tiles lose (issue 15: B8 H16 S2k d128 causal is the one row below 0.9x cuDNN):
every causal candidate timed on that row and on S4k (ops.tune_attention, L2 flushed, median), printed as a table.

    python benchmarks/causal_probe.py
"""

import json
import os

from tessera import ops

rows = []
for B, S in ((8, 2048), (4, 4096)):
    res = ops.tune_attention(B, 16, S, S, 128, causal=True, progress=False, runs=20)
    for t in res.timings:
        rows.append({"B": B, "S": S, "config": t.config, "ms": None if t.seconds is None else t.seconds * 1e3,
                     "error": t.error})
        print(B, S, t.config, "error" if t.seconds is None else f"{t.seconds * 1e3:.3f} ms", flush=True)
out = os.path.join(os.environ.get("OUT") or "/tmp", "causal_probe.json")
with open(out, "w") as f:
    json.dump(rows, f, indent=1)
