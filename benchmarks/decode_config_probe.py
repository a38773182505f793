"""Decode GEMM configs side by side (issue 16, item 2): which tile, split and fixup fill the H200's bandwidth.

    python benchmarks/decode_config_probe.py [--set v1|v2|skinny|rotate|kpair|m64|deep] [--runs 25] [--out FILE]

For each decode shape (M = 1, 16, 64 with N = 4096 and 14336, K = 4096; NT and NN) every config in CONFIGS is
launched as ops.gemm would launch it (swapped ones through C's transposed view: bench_gemm_layouts.make_swap_call),
checked against float64, and timed interleaved with cuBLAS (torch.matmul on the same tensors) and ops.gemm's
default, each call after a 256 MB L2 eviction (a read: bench_gemm_layouts.Bench: median of --runs). Split configs run
twice: with the shipped split-K fixup ("unrolled" sum) and with the rolled sum of benchmarks/ab_splitk_fixup.py,
whose registers are reported beside. Other sets (see each CONFIGS_* below): v2 (256-deep K steps), skinny
(1024 x 1024 x 16384 instead of the decode shapes), rotate (each config also with `k_rotate`'s source edit),
kpair (K split in a 2-CTA cluster, multicast=k; the decode shapes and the skinny one), m64 (M = 64 unswapped in
64 x 64 tiles), deep (the swapped tiles' ring depth, M = 1 and 16).
Output: one JSON line per shape and $OUT/decode-config-probe.json (--out).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (1, 14336, 4096), (16, 14336, 4096),
          (64, 14336, 4096)]
LAYOUTS = ("NT", "NN")


def swapped(bm, bn, stages, splitk=1, streamk=False, bk=128):
    d = {"BM": bm, "BN": bn, "BK": bk, "stages": stages, "schedule": "cooperative", "cluster": 1, "splitk": splitk,
         "multicast": "b", "store": "registers", "swap_ab": True}
    return {**d, "streamk": True} if streamk else d


def plain(bm, bn, stages, splitk=1, bk=64):
    return {"BM": bm, "BN": bn, "BK": bk, "stages": stages, "schedule": "cooperative", "cluster": 1, "splitk": splitk,
            "multicast": "b"}


# (name, config, the M values it is for)
CONFIGS = [
    ("swap64x16 s8", swapped(64, 16, 8), (1, 16)),
    ("swap64x16 s8 k2", swapped(64, 16, 8, 2), (1, 16)),
    ("swap64x16 s8 k4", swapped(64, 16, 8, 4), (1, 16)),
    ("swap64x16 s8 streamk", swapped(64, 16, 8, streamk=True), (1, 16)),
    ("swap128x16 s5", swapped(128, 16, 5), (1, 16)),
    ("swap128x16 s5 k2", swapped(128, 16, 5, 2), (1, 16)),
    ("swap64x64 s4", swapped(64, 64, 4), (64,)),
    ("swap64x64 s6", swapped(64, 64, 6), (64,)),
    ("swap64x64 s4 k2", swapped(64, 64, 4, 2), (64,)),
    ("swap64x64 s6 k2", swapped(64, 64, 6, 2), (64,)),
    ("swap64x64 s4 k4", swapped(64, 64, 4, 4), (64,)),
    ("swap64x64 s4 streamk", swapped(64, 64, 4, streamk=True), (64,)),
    ("swap128x64 s4 k2", swapped(128, 64, 4, 2), (64,)),
    ("64x128 s8", plain(64, 128, 8), (64,)),
    ("64x128 s8 k2", plain(64, 128, 8, 2), (64,)),
    ("64x128 s8 k4", plain(64, 128, 8, 4), (64,)),
]
# --set v2 (after v1 on the H100: no K split nor stream-K won anywhere): 256-deep K steps (each weight row read in
# 512-byte runs, more bytes in flight per barrier), against the v1 winners and the unswapped 64 x 128 tiles
CONFIGS_V2 = [
    ("swap64x16 s8", swapped(64, 16, 8), (1, 16)),
    ("swap64x16 bk256 s4", swapped(64, 16, 4, bk=256), (1, 16)),
    ("swap64x16 bk256 s5", swapped(64, 16, 5, bk=256), (1, 16)),
    ("swap128x16 s5", swapped(128, 16, 5), (1, 16)),
    ("swap128x16 bk256 s3", swapped(128, 16, 3, bk=256), (1, 16)),
    ("swap64x64 s6", swapped(64, 64, 6), (64,)),
    ("swap64x64 bk256 s3", swapped(64, 64, 3, bk=256), (64,)),
    ("64x128 s8", plain(64, 128, 8), (64,)),
    ("64x128 s8 k2", plain(64, 128, 8, 2), (64,)),
]
# --set skinny: 1024 x 1024 x 16384 (64 tiles of 128 x 128; 0.88-0.93x cuBLAS on the H100 by the default, ping-pong
# 128 x 128 with K split in 2): bigger tiles split further (128 units of 128 x 256 x K/4), cooperative, stream-K
SKINNY = [(1024, 1024, 16384)]
ALL = (1024,)
CONFIGS_SKINNY = [
    ("128x128 pp s6 k2", {**plain(128, 128, 6, 2), "schedule": "pingpong"}, ALL),
    ("128x128 s5 k2", plain(128, 128, 5, 2), ALL),
    ("128x256 s4 k4", plain(128, 256, 4, 4), ALL),
    ("256x128 s4 k4", plain(256, 128, 4, 4), ALL),
    ("128x256 s4 k4 c2", {**plain(128, 256, 4, 4), "cluster": 2}, ALL),
    ("128x256 s4 streamk", {**plain(128, 256, 4), "streamk": True}, ALL),
    ("128x128 pp s6 streamk", {**plain(128, 128, 6), "schedule": "pingpong", "streamk": True}, ALL),
    ("128x128 s5 streamk", {**plain(128, 128, 5), "streamk": True}, ALL),
    # (eleventh session) fixup=scatter: each split sums and stores its own columns once all four have arrived
    ("128x256 s4 k4 scatter", {**plain(128, 256, 4, 4), "fixup": "scatter"}, ALL),
    ("128x256 s4 k2 scatter", {**plain(128, 256, 4, 2), "fixup": "scatter"}, ALL),
    ("128x128 s5 k2 scatter", {**plain(128, 128, 5, 2), "fixup": "scatter"}, ALL),
]

# --set rotate: each tile starts its K loop at its own K step (tile index mod the steps, wrapping), so the CTAs
# streaming at one time read different columns of the weight (different DRAM channels and banks) instead of all
# the same column block at once; a source edit of the producer's TMA coordinates (K_ROTATE), summed in another
# order per tile but the same products
CONFIGS_ROTATE = [
    ("swap64x16 s8", swapped(64, 16, 8), (1, 16)),
    ("swap128x16 s5", swapped(128, 16, 5), (1, 16)),
    ("swap64x64 s6", swapped(64, 64, 6), (64,)),
]


# --set kpair: each tile's K steps split between the two CTAs of a cluster, summed through distributed shared
# memory (nv.cluster_splitk_fixup: no global scratch, fence or counter), so N = 4096's 64 decode tiles fill 128
# SMs; against the unsplit tiles and split-K through global scratch
def kpair(cfg):
    return {**cfg, "cluster": 2, "multicast": "k"}


CONFIGS_KPAIR = [
    ("swap64x16 s8", swapped(64, 16, 8), (1, 16)),
    ("swap64x16 s8 kpair", kpair(swapped(64, 16, 8)), (1, 16)),
    ("swap64x32 s6 kpair", kpair(swapped(64, 32, 6)), (1, 16)),
    ("swap128x16 s5", swapped(128, 16, 5), (1, 16)),
    ("swap128x16 s5 kpair", kpair(swapped(128, 16, 5)), (1, 16)),
    ("swap64x16 s8 k2", swapped(64, 16, 8, 2), (1, 16)),
    ("swap64x64 s6", swapped(64, 64, 6), (64,)),
    ("swap64x64 s6 kpair", kpair(swapped(64, 64, 6)), (64,)),
    ("swap64x64 s5 kpair", kpair(swapped(64, 64, 5)), (64,)),
    ("swap128x64 s4 kpair", kpair(swapped(128, 64, 4)), (64,)),
    ("128x256 s4 k4", plain(128, 256, 4, 4), ALL),
    ("128x128 s4 kpair", kpair(plain(128, 128, 4)), ALL),
    ("128x128 s4 k2", plain(128, 128, 4, 2), ALL),
]

# --set deep (thirteenth session): the ring depth of the swapped decode tiles. On the H200 the 64 CTAs of N = 4096
# streamed at ~3.1 TB/s against a 4.25 TB/s copy (seventh session); if bytes in flight limit them (64 x 128 KB at
# ~2 us of loaded latency covers ~4 TB/s at best), 11-deep rings (176 KB) stream faster, and the pair (128 CTAs) too
CONFIGS_DEEP = [
    ("swap64x16 s8", swapped(64, 16, 8), (1, 16)),
    ("swap64x16 s11", swapped(64, 16, 11), (1, 16)),
    ("swap64x32 s6", swapped(64, 32, 6), (1, 16)),
    ("swap64x32 s9", swapped(64, 32, 9), (1, 16)),
    ("swap128x16 s5", swapped(128, 16, 5), (1, 16)),
    ("swap128x16 s6", swapped(128, 16, 6), (1, 16)),
    ("swap64x16 s8 kpair", kpair(swapped(64, 16, 8)), (1, 16)),
]

# --set m64 (eleventh session): M = 64 unswapped in 64 x 64 tiles, as many CTAs as the swapped 64 x 64 default (64
# at N = 4096) but C stored row-major through TMA: the swapped tile's C^T epilogue (2014 cycles on the H100, ~1 us
# of a 17 us kernel) is what the M = 64 rows lose to cuBLAS by
CONFIGS_M64 = [
    ("swap64x64 s6", swapped(64, 64, 6), (64,)),
    ("64x64 s8", plain(64, 64, 8), (64,)),
    ("64x64 s12", plain(64, 64, 12), (64,)),
    ("64x64 bk128 s6", plain(64, 64, 6, bk=128), (64,)),
    ("64x64 bk128 s6 k2", plain(64, 64, 6, 2, bk=128), (64,)),
]


def k_rotate(src: str) -> str:
    """The producer's K loop with each tile starting at K step (weight row / 64) mod steps, wrapping around."""
    import re

    lines = src.splitlines()
    first_load = next(j for j, b in enumerate(lines) if "&A_tmap, " in b and "tma_load" in b)
    for i in range(first_load, -1, -1):  # the loop just around the first load: the producer's K loop
        m = re.match(r"(\s*)for \(int (v_\d+) = (v_\d+); \2 < (v_\d+); \2 \+= (v_\d+)\) \{$", lines[i])
        if not m:
            continue
        indent, k, start, end, step = m.groups()
        body_end = next(j for j in range(i + 1, len(lines)) if lines[j] == indent + "}")
        body = lines[i + 1:body_end]
        c0, c1 = re.search(r"&A_tmap, (v_\d+), (v_\d+)", lines[first_load]).groups()
        row = c1 if c0 == k else c0  # NT: (k, row); MN-major weight (TT): (row, k)
        pre = (f"{indent}  const int kt_ = ({end} - {start} + {step} - 1) / {step};\n"
               f"{indent}  int kr_ = {k} + ({row} / 64 % kt_) * {step};\n"
               f"{indent}  if (kr_ >= {start} + kt_ * {step}) kr_ -= kt_ * {step};")
        body = [re.sub(rf"\b{k}\b", "kr_", b) for b in body]
        return "\n".join(lines[:i + 1] + [pre] + body + lines[body_end:])
    raise ValueError("k_rotate: no producer K loop with A loads")


def main() -> int:
    import torch

    import ab_splitk_fixup as AB
    import bench_gemm_layouts as BG
    import tessera.ops as ops
    from tessera.compiler import testing
    from tessera.ops import _hopper as H
    from tessera.target.nvidia.emit import splitk as SK

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=25)
    p.add_argument("--set", choices=("v1", "v2", "skinny", "rotate", "kpair", "m64", "deep"), default="v1")
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "decode-config-probe.json"))
    args = p.parse_args()
    bench = BG.Bench(torch)
    configs = {"v1": CONFIGS, "v2": CONFIGS_V2, "skinny": CONFIGS_SKINNY, "rotate": CONFIGS_ROTATE,
               "kpair": CONFIGS_KPAIR, "m64": CONFIGS_M64, "deep": CONFIGS_DEEP}[args.set]
    shapes = {"skinny": SKINNY, "kpair": SHAPES + SKINNY, "m64": [s for s in SHAPES if s[0] == 64],
              "deep": [s for s in SHAPES if s[0] <= 16]}.get(args.set, SHAPES)
    report = {"command": f"python benchmarks/decode_config_probe.py --set {args.set}", "device": torch.cuda.get_device_name(),
              "copy_tbs": bench.copy_tbs(), "runs": args.runs, "rows": [], "registers": {}}
    fixups = (("unrolled", SK.emit_splitk_fixup), ("rolled", AB.variant_rolled))
    if args.set == "rotate":
        fixups = (("", SK.emit_splitk_fixup), ("rot", SK.emit_splitk_fixup))
    elif args.set in ("kpair", "m64", "deep"):  # the shipped fixup only
        fixups = (("", SK.emit_splitk_fixup),)
    for layout in LAYOUTS:
        for M, N, K in shapes:
            ta, tb = False, layout[1] == "T"
            g = torch.Generator(device="cuda").manual_seed(M * 7 + N * 3 + K)
            a = (torch.randn((M, K), device="cuda", generator=g) / K ** 0.5).bfloat16()
            b = torch.randn((K, N), device="cuda", generator=g).bfloat16()
            B = b.t().contiguous() if tb else b
            y = B.t() if tb else B
            ref = a.double() @ y.double()
            outs, fns = {}, {}

            def out(name):
                outs[name] = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
                return outs[name]

            o = out("cublas")
            fns["cublas"] = lambda o=o: torch.matmul(a, y, out=o)
            AB.use(SK.emit_splitk_fixup)  # ops.gemm's kernels are the shipped ones
            o = out("ops_default")
            fns["ops_default"] = lambda o=o: ops.gemm(a, B, trans_b=tb, out=o)
            fns["ops_default"]()
            default = ops.last_run().config
            for fix, emitter in fixups:
                AB.use(emitter)
                for name, cfg, ms in configs:
                    split = cfg["splitk"] > 1 or cfg.get("streamk")
                    if M not in ms or (fix == "rolled" and (not split or cfg.get("fixup") == "scatter")):
                        continue
                    label = f"{name} {fix}" if split or fix == "rot" else name
                    try:
                        o = out(label)
                        with testing.inject_faults(source=k_rotate if fix == "rot" else None):
                            if cfg.get("swap_ab"):
                                fns[label] = BG.make_swap_call(torch, M, N, a, B, o, ta, tb, cfg)
                            else:
                                fns[label] = BG.make_call(torch, cfg, a, B, o, ta, tb, M, N)
                            lay = H.layout_of(not tb, True) if cfg.get("swap_ab") else layout
                            ck, _ = H.compile_plain(cfg, "bf16", lay)
                        if fix == "rot":
                            assert "kr_" in ck.source, "the rotation edit did not apply"
                        report["registers"][f"{label} {lay}"] = [ck.report.registers, ck.report.local_bytes]
                    except Exception as err:  # noqa: BLE001 - a probe: report and go on
                        print(f"{layout} {M}x{N}x{K} {label}: {type(err).__name__}: {str(err)[:300]}", flush=True)
            errs = {}
            for n, fn in list(fns.items()):
                fn()
                torch.cuda.synchronize()
                errs[n] = float((outs[n].double() - ref).abs().max() / ref.abs().max())
                if not errs[n] <= BG.TOL:
                    del fns[n]
            us = {n: 1e3 * t for n, t in bench.time(fns, args.runs).items()}
            nbytes = 2 * (M * K + K * N + M * N)
            best = min((n for n in us if n not in ("cublas", "ops_default")), key=us.get)
            line = {"shape": f"{layout} {M}x{N}x{K}", "us": us, "rel_err": errs,
                    "ratio": {n: us["cublas"] / t for n, t in us.items()},
                    "tbs": {n: nbytes / t / 1e6 for n, t in us.items()}, "best": best,
                    "ops_default_config": default}
            print(json.dumps({"shape": line["shape"], "best": best, "best_ratio": round(line["ratio"][best], 3),
                              "ops_default_ratio": round(line["ratio"]["ops_default"], 3),
                              "ratio": {n: round(r, 3) for n, r in line["ratio"].items()}}), flush=True)
            report["rows"].append(line)
            with open(args.out, "w") as f:
                json.dump(report, f, indent=1)
    AB.use(SK.emit_splitk_fixup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
