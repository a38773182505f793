"""A/B of tile overlap (ws_tile_overlap) on the GPU, in one process: each attention row's kernel with tile overlap
(A, as the compiler builds it) against the same program and launch shape with it off (B: the builder's
`_tile_overlap_carry` answers None, so Q keeps one slot and each tile starts cold), timed alternately with an L2
flush (ab_source_edit's harness). Also the non-causal default (ring of 3, where two Q slots do not fit) against
a ring of 2 with tile overlap. An experiment's switch, patched in here, not a knob of the product.

    python3 benchmarks/ab_tile_overlap.py [--runs 40]     # JSON to $OUT/ab_tile_overlap.json
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

ROWS = [  # (B, H, S, D, causal, A's stages, B's stages, B has tile overlap)
    (8, 16, 2048, 128, True, 2, 2, False),
    (4, 16, 4096, 128, True, 2, 2, False),
    (1, 16, 16384, 128, True, 2, 2, False),
    (4, 16, 4096, 128, False, 3, 2, True),
    (16, 16, 1024, 128, False, 3, 2, True),
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=40)
    a = p.parse_args()
    import torch

    import tessera
    from tessera.kernels import flash_attention as FA
    from tessera.ops._attention import kernel_specs
    from tessera.ops.configs import AttentionConfig
    from tessera.target.nvidia.passes import ws_tile_overlap as TO

    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    real = TO.TileOverlap._tile_overlap_carry
    rows = []
    for B, H, S, D, causal, sa, sb, b_overlaps in ROWS:
        kernels = []
        for stages, overlaps in ((sa, not b_overlaps), (sb, b_overlaps)):
            specs, meta, knobs = kernel_specs("bf16", D, causal, True, True, AttentionConfig(128, 128, stages),
                                              hopper=True)
            TO.TileOverlap._tile_overlap_carry = real if overlaps else (lambda self: None)
            try:
                kernels.append(tessera.compile(FA.flash_attention.trace(*specs, **meta), "sm_90a", **knobs))
            finally:
                TO.TileOverlap._tile_overlap_carry = real
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        outs = [(torch.empty_like(q), torch.empty(B, H, S, device="cuda")) for _ in range(2)]
        grid = (-(-S // 128), B * H)
        calls = [lambda kk=kk, o=o: kk.launch(grid, [q, k, v, o[0], o[1], 1 / math.sqrt(D)])
                 for kk, o in zip(kernels, outs)]
        name = (f"ring {sb}, tile overlap {'on' if b_overlaps else 'off'} (A: ring {sa}, "
                f"tile overlap {'off' if b_overlaps else 'on'})")
        row = _time_ab(torch, flush, calls, lambda: bool(torch.equal(outs[0][0], outs[1][0])),
                       (B, H, S, D, causal), {"a_stages": sa, "b_stages": sb}, name, a.runs)
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        row.update(a_tflops=flops / row["a_ms"] / 1e9, b_tflops=flops / row["b_ms"] / 1e9)
        rows.append(row)
    out = Path(os.environ.get("OUT") or "/tmp") / "ab_tile_overlap.json"
    out.write_text(json.dumps({"command": "python3 benchmarks/ab_tile_overlap.py", "runs": a.runs, "rows": rows},
                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
