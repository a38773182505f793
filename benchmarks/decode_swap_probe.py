"""Swap-AB for decode GEMMs (issue 16, item 2), probed before it is built into ops: C = A @ W^T with M <= 64 computed
as C^T = W @ A^T by the same sm_90a kernel (W fills wgmma's M; A's M rows become a wgmma N of 16..64), the output
written through C's transposed view (strides (1, N), register stores), against torch.matmul (cuBLAS) on the same
tensors, alternating, L2 flushed, median of --runs; and a device copy of W's bytes for the bandwidth ceiling.

    python3 benchmarks/decode_swap_probe.py [--runs 30]     # JSON to $OUT/decode_swap_probe.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (1, 14336, 4096), (16, 14336, 4096),
          (64, 14336, 4096)]
CONFIGS = [(64, 16, 128, 8, 1, 0), (64, 16, 128, 8, 2, 0), (64, 16, 128, 8, 1, 1), (64, 64, 128, 4, 1, 0),
           (64, 64, 128, 4, 1, 1), (64, 64, 128, 4, 2, 0), (64, 32, 128, 6, 1, 1)]  # BM, BN, BK, stages, splitk, streamk


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=30)
    a = p.parse_args()
    import torch

    import tessera
    from tessera.kernels import gemm as G
    from tessera.ops._cold_l2 import ColdL2

    T = tessera.tensor
    flush = ColdL2(torch)  # .evict(): L2 evicted by a read before every call
    specs = (T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"), None, None, tessera.scalar("f32"),
             None)
    kernels = {}
    for BM, BN, BK, stages, splitk, streamk in CONFIGS:
        tr = G.gemm.trace(*specs, BM=BM, BN=BN, BK=BK, TRANS_B=True)
        pipe = (f"tessera-lower-to-nv{{arch=sm_90a stages={stages} schedule=cooperative store=registers"
                + (f" splitk={splitk}" if splitk > 1 else "") + (" streamk=1" if streamk else "") + "}")
        try:
            kernels[(BM, BN, BK, stages, splitk, streamk)] = tessera.compile(tr, "sm_90a", pipeline=pipe)
        except Exception as err:  # noqa: BLE001 - a probe: report and go on
            print(f"config {(BM, BN, BK, stages, splitk, streamk)}: {type(err).__name__}: {str(err)[:200]}",
                  flush=True)

    def timed(fn, runs):
        out = []
        for _ in range(runs):
            flush.evict()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            out.append(s.elapsed_time(e) * 1e3)
        return statistics.median(out)

    rows = []
    for M, N, K in SHAPES:
        A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        W = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        ref = (A.double() @ W.double().T)
        C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        Wc = torch.empty_like(W)
        from tessera import ops
        C2 = torch.empty_like(C)
        calls = {"cublas": lambda: torch.matmul(A, W.T, out=C), "copy": lambda: Wc.copy_(W),
                 "ops_default": lambda: ops.gemm(A, W, trans_b=True, out=C2)}
        for cfg, ck in kernels.items():
            BM, BN = cfg[0], cfg[1]
            Cs = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            dummy = torch.empty(N, M, device="cuda", dtype=torch.bfloat16)
            values, _ = ck.values([W, A, dummy, 1.0])
            at = ck._at
            values[at[(2, "ptr", None)]] = Cs.data_ptr()
            values[at[(2, "stride", 0)]], values[at[(2, "stride", 1)]] = 1, N  # C^T: [n, m] at n + m * N
            grid = (-(-N // BM), -(-M // BN))
            ck.launch_values(grid, values)
            torch.cuda.synchronize()
            err = float((Cs.double() - ref).abs().max() / ref.abs().max())
            calls[f"swap {BM}x{BN}x{cfg[2]} s{cfg[3]} k{cfg[4]}{' sk' * cfg[5]}"] = (lambda ck=ck, grid=grid, values=values:
                                                             ck.launch_values(grid, values))
            rows.append({"shape": [M, N, K], "config": list(cfg), "rel_err": err})
        times = {name: [] for name in calls}
        for r in range(3):  # rounds of every call, interleaved
            for name, fn in calls.items():
                fn()
                times[name].append(timed(fn, a.runs // 3 or 1))
        med = {name: statistics.median(v) for name, v in times.items()}
        nbytes = N * K * 2
        line = {"shape": [M, N, K], "us": med, "copy_tbs": nbytes / med["copy"] / 1e6,
                "cublas_tbs": nbytes / med["cublas"] / 1e6}
        best = min((n for n in med if n.startswith("swap")), key=med.get, default=None)
        if best:
            line.update(best=best, best_ratio=med["cublas"] / med[best], best_tbs=nbytes / med[best] / 1e6,
                        ops_default_ratio=med["cublas"] / med["ops_default"])
        print(json.dumps(line), flush=True)
        rows.append(line)
    out = Path(os.environ.get("OUT") or "/tmp") / "decode_swap_probe.json"
    out.write_text(json.dumps({"command": "python3 benchmarks/decode_swap_probe.py", "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
