"""Where a decode GEMM's fixed cost goes: timestamps inside the swapped sm_90a kernel, per CTA.

    python benchmarks/decode_stamps.py [--out FILE] [--runs 30] [--shape MxNxK ...] [--config JSON]

--shape and --config time other shapes, and an unswapped config instead of ops' swapped default (a split-K one:
its loop_end -> end then holds the fixup, and the latest CTA's is the last arrival's sum).

decode_floor.py found the swapped decode kernel's time against K to be ~6.9 us + bytes / copy rate, with an
empty kernel at 3.8 us: about 3 us of fixed cost that neither launch nor streaming explains. This probe splits
it. The kernel ops.gemm runs (swap_config(M), swapped) is compiled from its emitted CUDA with stamps added (a
source edit, in a cache of its own): each CTA writes %globaltimer (ns, one clock for the whole GPU) and clock64
(its SM's cycles) at

    entry      thread 0, the first statement
    setup      thread 0, after the mbarrier set-up (before the roles split)
    first_tma  the producer's first expect_tx (its first load is issued next)
    first_data the first consumer warpgroup's first completed wait (the first stage landed)
    loop_end   the first consumer warpgroup after its last wgmma retired (before the epilogue)
    end        the first consumer warpgroup after its stores

and a one-thread kernel stamps %globaltimer just before and just after it (`pre`, `post`; after L2 is evicted
by a read of 256 MB). Reported per shape: the median over runs of each phase's start relative to `pre`, as the
earliest, median and latest CTA (us); clock64 phases as cycles of the CTA; and the same bracket around cuBLAS and around
nothing (two stamp kernels back to back) for scale. Also per shape: CUDA-event medians of cuBLAS and ours after
the table's write flush and after a read of the same 256 MB (does a dirty L2 tax the timed call?). Needs torch
and cupy (the stamp kernels).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

PHASES = ("entry", "setup", "first_tma", "first_data", "loop_end", "end")
SLOTS = 16  # per CTA: PHASES' globaltimer at 0..5, their clock64 at 8..13
SHAPES = ((16, 4096, 4096), (1, 14336, 4096), (64, 4096, 4096), (16, 4096, 256))


def add_stamps(src: str, address: int) -> str:
    """The kernel with the PHASES stamped into the u64 array at `address` (slot CTA * SLOTS + phase; clock64 at
    + 8). Raises ValueError where the emitted code has no place for a phase (the probe then says so)."""
    helper = (f"#define TSR_STAMP_(i) do {{ unsigned long long g_, c_; "
              f'asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g_)); c_ = clock64(); '
              f"unsigned long long* s_ = (unsigned long long*){address:#x}ull + blockIdx.x * {SLOTS}; "
              f"s_[(i)] = g_; s_[(i) + 8] = c_; }} while (0)\n")
    at = src.index('extern "C" __global__')
    src = src[:at] + helper + src[at:]
    edits = [
        ("entry", r"(const unsigned tsr_sbase = [^\n]*\n)", r"\1  bool tsr_first_data_ = true, tsr_first_tma_ = true;"
                                                            r"\n  if (tid == 0) TSR_STAMP_(0);\n"),
        ("setup", r"(\n(\s*)const int v = tid;  // nv.thread_id)", r"\n\2if (tid == 0) TSR_STAMP_(1);\1"),
        ("first_tma", r"(\n(\s*)tsr_mbar_expect_tx\()",
         r"\n\2if (tsr_first_tma_) { TSR_STAMP_(2); tsr_first_tma_ = false; }\1"),
    ]
    for name, pat, rep in edits:
        src, n = re.subn(pat, rep, src, count=1)
        if n != 1:
            raise ValueError(f"no place for the {name} stamp")
    waits = [m.end() for m in re.finditer(r"\n\s*tsr_mbar_wait\([^\n]*\n", src)]
    if len(waits) < 2:
        raise ValueError("no consumer wait for the first_data stamp")
    at = waits[1]  # the producer's empty-slot wait comes first in the source, the consumers' full wait next
    src = src[:at] + "if (tsr_first_data_ && (tid & 127) == 0 && tid >= 128 && tid < 256) { TSR_STAMP_(3); " \
                     "tsr_first_data_ = false; }\n" + src[at:]
    m = re.search(r"wgmma\.wait_group\.sync\.aligned 0;[^\n]*\n", src)
    if not m:
        raise ValueError("no final wgmma wait for the loop_end stamp")
    src = src[:m.end()] + "if (tid == 128) TSR_STAMP_(4);\n" + src[m.end():]
    end = src.rstrip().rindex("}")
    return src[:end] + "  if (tid == 128) TSR_STAMP_(5);\n" + src[end:]


STAMP_KERNEL = r"""
extern "C" __global__ void stamp(unsigned long long* out) {
  unsigned long long g; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g)); *out = g;
}
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "decode_stamps.json"))
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--shape", action="append", default=[], help="MxNxK instead of SHAPES (repeatable)")
    p.add_argument("--config", default=None, help="a config dict (JSON) run unswapped instead of ops' swapped "
                                                  "default, e.g. a split-K one: loop_end -> end then holds its fixup")
    args = p.parse_args(argv)
    import cupy
    import torch

    from bench_gemm_layouts import Bench, make_call, make_swap_call
    from decode_floor import use_cache
    from tessera.compiler import testing
    from tessera.runtime.cache import CompileCache

    stamp = cupy.RawKernel(STAMP_KERNEL, "stamp")
    stream = torch.cuda.current_stream()
    cstream = cupy.cuda.ExternalStream(stream.cuda_stream)
    benches = {kind: Bench(torch, flush=kind) for kind in ("write", "read")}  # L2 left dirty, or clean
    marks = torch.zeros(2, dtype=torch.int64, device="cuda")

    def bracket(fn):
        """pre and post %globaltimer (ns) around fn, after L2 is evicted by a read (the stamps of sessions before
        the tenth's last call followed a write)."""
        benches["read"].evict()
        with cstream:
            stamp((1,), (1,), (marks.data_ptr(),))
        fn()
        with cstream:
            stamp((1,), (1,), (marks.data_ptr() + 8,))
        torch.cuda.synchronize()
        pre, post = marks.tolist()
        return pre, post

    report = {"device": torch.cuda.get_device_name(), "runs": args.runs, "shapes": []}
    for_nothing = [bracket(lambda: None) for _ in range(args.runs)]
    report["nothing_us"] = statistics.median((b - a) / 1e3 for a, b in for_nothing)
    config = json.loads(args.config) if args.config else None
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shape] or SHAPES
    report["config"] = config or "swap_config(M), swapped"
    for M, N, K in shapes:
        a = torch.randn((M, K), device="cuda").bfloat16()
        b = torch.randn((K, N), device="cuda").bfloat16()
        out = torch.empty((M, N), device="cuda", dtype=torch.bfloat16)
        ctas = -(-N // 64) if config is None else 132 * 8  # every slot a persistent grid may use
        stamps = torch.zeros(ctas * SLOTS + SLOTS, dtype=torch.int64, device="cuda")
        use_cache(CompileCache(tempfile.mkdtemp(prefix="stamps-")))  # this shape's address is in the source
        try:
            with testing.inject_faults(source=lambda s: add_stamps(s, stamps.data_ptr())):
                fn = (make_swap_call(torch, M, N, a, b, out, False, False, None) if config is None
                      else make_call(torch, config, a, b, out, False, False, M, N))
        except Exception as err:  # noqa: BLE001 - no place for a stamp, or the edit does not compile: said
            report["shapes"].append({"shape": f"{M}x{N}x{K}", "error": f"{type(err).__name__}: {err}"[:500]})
            print(report["shapes"][-1], flush=True)
            continue
        fn()
        torch.cuda.synchronize()
        err = float((out.double() - a.double() @ b.double()).abs().max() / (a.double() @ b.double()).abs().max())
        cublas = [bracket(lambda: torch.matmul(a, b, out=out)) for _ in range(args.runs)]
        per_run = []
        for _ in range(args.runs):
            stamps.zero_()
            pre, post = bracket(fn)
            s = stamps.view(-1, SLOTS)[:ctas].cpu()
            s = s[s[:, 0] != 0]  # the CTAs that ran (a persistent grid may be smaller than the tiles)
            per_run.append((pre, post, s))
        row = {"shape": f"{M}x{N}x{K}", "tiles": ctas, "ctas": len(per_run[0][2]), "rel_err": err,
               "cublas_bracket_us": statistics.median((b - a) / 1e3 for a, b in cublas),
               "ours_bracket_us": statistics.median((b - a) / 1e3 for a, b, _ in per_run)}
        for i, name in enumerate(PHASES):
            rel = [(s[:, i].double() - pre) / 1e3 for pre, _, s in per_run]
            row[name] = {q: round(statistics.median(float(getattr(r, q)()) for r in rel), 3)
                         for q in ("min", "median", "max")}
        for i, name in enumerate(PHASES[1:], start=1):
            cyc = [(s[:, 8 + i] - s[:, 8 + i - 1]).double() for _, _, s in per_run]
            row[f"cycles_{PHASES[i - 1]}_to_{name}"] = round(statistics.median(float(c.median()) for c in cyc))
        row["post"] = round(statistics.median((b - a) / 1e3 for a, b, _ in per_run), 3)
        for kind, bench in benches.items():  # interleaved CUDA-event medians (bench_gemm_layouts.Bench)
            ms = bench.time({"cublas": lambda: torch.matmul(a, b, out=out), "ours": fn}, args.runs)
            row.update({f"{name}_after_{kind}_flush_us": round(t * 1e3, 3) for name, t in ms.items()})
        report["shapes"].append(row)
        print(json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(json.dumps({"nothing_us": report["nothing_us"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
