"""Profile one Tessera sm_90a GEMM config beside cuBLAS under Nsight Compute (ncu), on the device.

    python3 benchmarks/profile_hopper_gemm.py M N K BM BN stages schedule [--dtype bf16] [--cluster 2] [--splitk 2]

Each implementation runs twice (a warm-up, then the launch ncu should profile: pass
`--launch-skip 1 --launch-count 1` per kernel name, or profile every launch). Without
ncu it simply runs them; the point is the counters ncu reads, not the timing.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def main() -> None:
    p = argparse.ArgumentParser()
    for name in ("M", "N", "K", "BM", "BN", "stages"):
        p.add_argument(name, type=int)
    p.add_argument("schedule")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--cluster", type=int, default=1)
    p.add_argument("--splitk", type=int, default=1, help="split-K in one launch (warp-specialize splitk=)")
    a = p.parse_args()
    import torch

    from bench_hopper_gemm import tessera_gemm

    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[a.dtype]
    A = torch.randn(a.M, a.K, device="cuda", dtype=dt)
    W = torch.randn(a.N, a.K, device="cuda", dtype=dt)
    out = torch.empty(a.M, a.N, device="cuda", dtype=dt)
    cfg = {"BM": a.BM, "BN": a.BN, "BK": 64, "stages": a.stages, "SPLIT_K": 1, "splitk": a.splitk,
           "schedule": a.schedule, "cluster": a.cluster}
    for _ in range(2):
        tessera_gemm(A, W, out, cfg, arch="sm_90a")
        torch.matmul(A, W.T)
    torch.cuda.synchronize()
    err = (out.double() - (A.double() @ W.double().T)).abs().max().item()
    print(f"tessera {cfg} max abs err {err:.3g}")


if __name__ == "__main__":
    main()
