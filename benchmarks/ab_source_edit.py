"""A/B one edit of the emitted CUDA on the GPU: the kernel as compiled (A) against the same kernel with an edit
applied to its source (B), side by side, checked against each other, timed alternately with an L2 flush.

    python3 benchmarks/ab_source_edit.py --drop-lines "tsr_tma_store_2d(" [--runs 50]

The edit drops every source line containing the given text (through `tessera.compiler.testing.inject_faults`,
the fault-injection hook, so the compiler itself is unchanged). It answers "what does this emitted feature buy"
without a switch in the product (B may compute something else: dropping the output stores times the kernel
without its writes; `bitwise_equal` says whether A and B agreed). The shapes and configs are DEFAULT's (what
v10 of bench_hopper_gemm chose). Prints one line per shape and writes JSON to $OUT/ab_source_edit.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

DEFAULT = {  # shape -> the config v10 of bench_hopper_gemm chose for it
    (2048, 2048, 2048): {"BM": 128, "BN": 256, "stages": 4, "schedule": "cooperative", "cluster": 1, "splitk": 1},
    (4096, 4096, 4096): {"BM": 128, "BN": 256, "stages": 4, "schedule": "cooperative", "cluster": 2, "splitk": 1},
    (1024, 1024, 16384): {"BM": 128, "BN": 128, "stages": 6, "schedule": "pingpong", "cluster": 1, "splitk": 2},
    (128, 8192, 8192): {"BM": 128, "BN": 64, "stages": 8, "schedule": "pingpong", "cluster": 1, "splitk": 1},
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--drop-lines", required=True, help="drop emitted source lines containing this text (B)")
    p.add_argument("--runs", type=int, default=50)
    a = p.parse_args()
    import torch

    import tessera
    from tessera.compiler import testing
    from tessera.compiler.driver import default_pipeline
    from tessera.kernels import gemm as G

    T = tessera.tensor
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    rows = []
    for (M, N, K), cfg in DEFAULT.items():
        A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        W = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        specs = (T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"), None, None,
                 tessera.scalar("f32"), None)
        traced = G.gemm.trace(*specs, BM=cfg["BM"], BN=cfg["BN"], BK=64, TRANS_B=True)
        pipe = default_pipeline("sm_90a", cfg["stages"], cfg["schedule"], cfg["cluster"], cfg["splitk"])
        ka = tessera.compile(traced, "sm_90a", pipeline=pipe)
        drop = lambda src: "\n".join(l for l in src.splitlines() if a.drop_lines not in l)  # noqa: E731
        with testing.inject_faults(source=drop):
            kb = tessera.compile(traced, "sm_90a", pipeline=pipe)
        assert ka.source != kb.source, f"no line contains {a.drop_lines!r}"
        outs = [torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        grid = G.grid(M, N, BM=cfg["BM"], BN=cfg["BN"])
        calls = [lambda k=k, o=o: k.launch(grid, [A, W, o, 1.0]) for k, o in zip((ka, kb), outs)]
        for c in calls:
            c()
        torch.cuda.synchronize()
        same = bool(torch.equal(outs[0], outs[1]))
        times = [[], []]
        for r in range(a.runs):
            for i in (r % 2, 1 - r % 2):
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                calls[i]()
                e.record()
                e.synchronize()
                times[i].append(s.elapsed_time(e))
        ma, mb = statistics.median(times[0]), statistics.median(times[1])
        rows.append({"shape": [M, N, K], "config": cfg, "a_ms": ma, "b_ms": mb, "b_over_a_time": mb / ma,
                     "bitwise_equal": same})
        print(f"{M}x{N}x{K}: A {ma * 1e3:.1f} us, B (without '{a.drop_lines}') {mb * 1e3:.1f} us, "
              f"B/A {mb / ma:.3f}, outputs equal {same}", flush=True)
    out = Path(os.environ.get("OUT") or "/tmp") / "ab_source_edit.json"
    out.write_text(json.dumps({"drop_lines": a.drop_lines, "runs": a.runs, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
