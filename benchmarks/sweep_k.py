"""Per-tile overhead vs per-K-step cost: Tessera configs and cuBLAS at M = N = 4096 over K (device only).

    python3 benchmarks/sweep_k.py [--out sweep.json]

t(K) = waves * (overhead + K/64 * step) is fitted per implementation; the overhead is what a tile costs
besides its K loop (epilogue, pipeline drain/fill), the step what one 64-deep K step costs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))

CONFIGS = {
    "coop128x256c2": {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "SPLIT_K": 1, "schedule": "cooperative", "cluster": 2},
    "coop128x256c1": {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "SPLIT_K": 1, "schedule": "cooperative", "cluster": 1},
    "ping128x128c2": {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "SPLIT_K": 1, "schedule": "pingpong", "cluster": 2},
}
KS = (256, 512, 1024, 2048, 4096, 8192)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="sweep_k.json")
    p.add_argument("--mn", type=int, default=4096)
    a = p.parse_args()
    import torch

    from bench_hopper_gemm import tessera_gemm
    from tessera.ops._cold_l2 import ColdL2

    flush = ColdL2(torch)  # .evict(): L2 evicted by a read before every call
    M = N = a.mn
    out = {"M": M, "N": N, "rows": []}
    for K in KS:
        A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        W = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        fns = {"cublas": lambda: torch.matmul(A, W.T)}
        for name, cfg in CONFIGS.items():
            fns[name] = (lambda cfg=cfg: tessera_gemm(A, W, C, cfg))
        for f in fns.values():
            f()
        torch.cuda.synchronize()
        ms = {n: [] for n in fns}
        for r in range(25):
            torch.cuda._sleep(1_000_000)
            for n, f in fns.items():
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                flush.evict()
                s.record()
                f()
                e.record()
                ms[n].append((s, e))
        torch.cuda.synchronize()
        row = {"K": K, **{n: statistics.median(s.elapsed_time(e) for s, e in v) for n, v in ms.items()}}
        out["rows"].append(row)
        print(json.dumps(row), flush=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
