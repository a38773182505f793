"""Two sm_90a attention configs on one row, timed alternately in one process (ab_source_edit's harness: L2 flushed,
median of --runs), outputs compared (max abs difference; two configs sum in different orders).

    python3 benchmarks/ab_attention_config.py --a 128,128,3 --b 128,160,2 --rows 1x16x16384,2x16x8192,4x16x4096
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from ab_source_edit import _time_ab  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="BLOCK_M,BLOCK_N,stages[,schedule[,tiles]] (A)")
    p.add_argument("--b", required=True, help="BLOCK_M,BLOCK_N,stages[,schedule[,tiles]] (B)")
    p.add_argument("--rows", required=True, help="BxHxS[xD][c], comma-separated (c: causal); D defaults to 128")
    p.add_argument("--runs", type=int, default=40)
    a = p.parse_args()
    import torch

    import tessera
    from tessera.kernels import flash_attention as FA
    from tessera.ops._attention import kernel_specs
    from tessera.ops.configs import AttentionConfig

    def config(text):
        bm, bn, stages, *rest = text.split(",")
        return AttentionConfig(int(bm), int(bn), int(stages), rest[0] if rest else "cooperative",
                               tiles=rest[1] if len(rest) > 1 else None)

    cfgs = (config(a.a), config(a.b))
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    rows = []
    for spec in a.rows.split(","):
        causal = spec.endswith("c")
        B, H, S, *D = (int(x) for x in spec.rstrip("c").split("x"))
        D = D[0] if D else 128
        kernels = []
        for cfg in cfgs:
            specs, meta, knobs = kernel_specs("bf16", D, causal, S % cfg.BLOCK_N == 0, True, cfg, hopper=True)
            kernels.append((tessera.compile(FA.flash_attention.trace(*specs, **meta), "sm_90a", **knobs), cfg))
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        outs = [(torch.empty_like(q), torch.empty(B, H, S, device="cuda")) for _ in range(2)]
        calls = [lambda kk=kk, o=o, g=(-(-S // cfg.BLOCK_M), B * H): kk.launch(g, [q, k, v, o[0], o[1], 1 / math.sqrt(D)])
                 for (kk, cfg), o in zip(kernels, outs)]
        row = _time_ab(torch, flush, calls, lambda: float((outs[0][0].float() - outs[1][0].float()).abs().max()),
                       (B, H, S, D, causal), {"a": a.a, "b": a.b}, f"B = {a.b} (A = {a.a})", a.runs)
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        row.update(a_tflops=flops / row["a_ms"] / 1e9, b_tflops=flops / row["b_ms"] / 1e9)
        rows.append(row)
    out = Path(os.environ.get("OUT") or "/tmp") / "ab_attention_config.json"
    out.write_text(json.dumps({"command": "python3 benchmarks/ab_attention_config.py " + " ".join(sys.argv[1:]),
                               "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
