"""A/B of the split-K fixup's sum (2026-12-07, not yet run: no device time was left): "unrolled" (tessera's emitter:
every split's loads in one unrolled block, the own part from registers: 255 registers at 4 splits of a 64-row
consumer, which raises COMPILE_PERF_REGISTER_LIMIT on default decode configs with N <= 2048 and a long K) against
"rolled" (the proposal: the record read back one split at a time, the own part too, the loop kept rolled, as
stream-K does: 148 registers; 168 -> 146 at 2 splits), beside cuBLAS, on the shapes whose default config splits
K. Numerics of both against float64. Adopt "rolled" in emit/splitk.py if it is not slower.

    python benchmarks/ab_splitk_fixup.py --out FILE
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = [(64, 2048, 4096), (64, 1024, 16384), (64, 4096, 4096), (1024, 1024, 16384)]


def rolled_sum(e, v, out, last, part, splits, stride, quads, s) -> None:
    """The proposed sum: every split's part read back from the record in split order, one split at a time."""
    with e.block(f"if ({last}) ", "the sum in split order, read back from the record (this split's part too)"):
        e.line("tsr_fence_gpu();")
        with e.unrolled("j_", quads):
            e.line(f"tsr_ld_cg_f32x4({part} + 512u * j_, &{out}[4 * j_]);")
        e.line("#pragma unroll 1")
        with e.block(f"for (unsigned s_ = 1u; s_ < {splits}u; ++s_) "):
            with e.unrolled("j_", quads):
                e.line("float q_[4];")
                e.line(f"tsr_ld_cg_f32x4({part} + s_ * {stride}u + 512u * j_, q_);")
                e.line(f"{out}[4 * j_] += q_[0]; {out}[4 * j_ + 1] += q_[1]; {out}[4 * j_ + 2] += q_[2]; "
                       f"{out}[4 * j_ + 3] += q_[3];")


def variant_rolled(e, op):
    """The shipped fixup with the proposed sum."""
    _splitk().emit_splitk_fixup(e, op, total=rolled_sum)


def _splitk():
    from tessera.target.nvidia.emit import splitk

    return splitk


def use(emitter) -> None:
    """Emit nv.splitk_fixup with `emitter` from now on, with a fresh compile cache (records are keyed by the
    kernel, not by the emitter)."""
    from tessera.compiler import driver
    from tessera.runtime import cache as C
    from tessera.runtime.cache import CompileCache
    from tessera.target.nvidia.emit import cuda as CU

    CU.TABLE.emitters["nv.splitk_fixup"] = emitter
    C._default = CompileCache(tempfile.mkdtemp(prefix="ab-splitk-"))
    driver.clear_memo()


def main() -> int:
    import torch

    import bench_gemm_layouts as BG
    from tessera.ops import _hopper as H
    from tessera.target.nvidia.emit import splitk as SK

    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "ab-splitk-fixup.json"))
    args = p.parse_args()
    bench = BG.Bench(torch)
    rows = []
    source = SK.emit_splitk_fixup

    for name, emitter in (("unrolled", source), ("rolled", variant_rolled)):
        use(emitter)
        for M, N, K in SHAPES:
            cfg = H.default_config(M, N, K)
            ck, _ = H.compile_plain(cfg.as_dict(), "bf16", "NT")
            e = BG.row(bench, "NT", M, N, K, False)
            row = {"variant": name, "config": e["config"], "default_config": e["default_config"],
                   "registers": ck.report.registers, "local_bytes": ck.report.local_bytes,
                   "ms": e["ms"], "ratio": e.get("ratio_default"), "rel_err": e["rel_err"]}
            print(json.dumps(row), flush=True)
            rows.append(row)
    with open(args.out, "w") as f:
        json.dump({"command": "python benchmarks/ab_splitk_fixup.py", "device": torch.cuda.get_device_name(),
                   "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
