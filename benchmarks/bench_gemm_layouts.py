"""GEMM in every operand layout on an H200: Tessera's sm_90a kernel (default config and tuned) vs cuBLAS.

    python benchmarks/bench_gemm_layouts.py [--quick] [--no-tune] [--budget-s 420] [--only "NN 1024x1024x16384"] [--out FILE]

Issue 16's table: NN and NT over SHAPES, TN and TT at 4096^3, bf16. NN is a plain a@b (B stored [K, N]),
NT the nn.Linear layout (B stored [N, K]), TN/TT have A stored [K, M]. cuBLAS is torch.matmul on the same
storage (transposes as views, so cuBLAS picks its own kernel for the layout).

Tessera: the kernel `tessera.ops.gemm` runs for the call, compiled once per config through compile_cached:
"default" is what ops.gemm takes with no tuning run (`default_config`, or for M <= 64 `swap_config` run
swapped; checked against ops.gemm's own choice on an empty autotune cache), "tuned" the winner of `ops.tune_gemm(..., layout=...)`.

Method: one process; per row, the implementations are checked against float64 (all rows up to 2^33
multiply-adds, else 256 seeded random rows), then timed interleaved: RUNS rounds, each implementation once
per round in rotating order, each call between CUDA events after a GPU sleep and a read of 256 MB (L2 cold and
clean, as tessera's tuners time: tessera.ops._cold_l2); median (a set whose median is over 1.5x its fastest
sample is timed again: `retimed`, `spread`). Then the same set again after a 256 MB *write* (how the tables
before 2026-12-07's tenth session were timed: the dirty L2's write-backs land inside the timed call, and taxed
cuBLAS more than us at decode): `ms_write_flush`, `ratio_write_flush`. TFLOP/s =
2MNK / median; ratio = cuBLAS time / Tessera time (> 1: faster). For M <= 64 rows the achieved HBM
bandwidth (A, B and C bytes / median) is reported beside a device copy measured in the same run.
Time box: --budget-s from start; rows that cannot start are listed as skipped. JSON rewritten per row.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

T0 = time.monotonic()
SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (4000, 4000, 4000), (8192, 8192, 1024),
          (16384, 1024, 4096), (1024, 1024, 16384), (128, 8192, 8192),
          (1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (1, 14336, 4096), (16, 14336, 4096),
          (64, 14336, 4096)]
ROWS = [(lay, s) for lay in ("NN", "NT") for s in SHAPES] + [(lay, (4096, 4096, 4096)) for lay in ("TN", "TT")]
QUICK = [("NN", (4096, 4096, 4096)), ("NT", (4096, 4096, 4096)), ("TN", (4096, 4096, 4096)),
         ("TT", (4096, 4096, 4096)), ("NN", (16, 4096, 4096))]
RUNS = 25
TOL = 2e-2  # bf16: max|x - ref| / max|ref|


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


class Bench:
    """Interleaved CUDA-event timing, L2 made cold before each call: `flush="read"` reads a 256 MB buffer (L2 left
    clean: tessera.ops._cold_l2, as the tuners time), "write" rewrites it (the usual zero_(): ~50 MB of dirty
    lines whose write-backs land inside the timed call). A ~20 us GPU sleep ahead of each flush keeps the host's
    launches ahead of the GPU, so a host stall cannot land between the events; a set whose median is over
    SPREAD x its fastest sample for any implementation is timed once more, and `last` keeps what the final set
    saw."""

    SPREAD = 1.5

    def __init__(self, torch, flush: str = "read"):
        from tessera.ops._cold_l2 import L2_FLUSH_BYTES, ColdL2
        from tessera.testing import HEAD_START_CYCLES

        self.torch = torch
        if flush == "read":
            self.evict = ColdL2(torch).evict
        else:
            buf = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
            self.evict = lambda: buf.fill_(1)
        self.sleep = getattr(torch.cuda, "_sleep", None)
        self.head_start = HEAD_START_CYCLES  # do_bench's: the host queues the call while the GPU sleeps
        self.last: dict = {}

    def _rounds(self, fns: dict, runs: int) -> dict:
        torch, names = self.torch, list(fns)
        events = {n: [] for n in names}
        for r in range(runs):
            for i in range(len(names)):
                n = names[(i + r) % len(names)]
                if self.sleep is not None:
                    self.sleep(self.head_start)
                self.evict()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fns[n]()
                e.record()
                events[n].append((s, e))
        torch.cuda.synchronize()
        return {n: [s.elapsed_time(e) for s, e in ev] for n, ev in events.items()}

    def time(self, fns: dict, runs: int) -> dict:
        for fn in fns.values():
            for _ in range(3):
                fn()
        samples = self._rounds(fns, runs)
        spread = max(statistics.median(v) / min(v) for v in samples.values())
        retimed = spread > self.SPREAD
        if retimed:
            samples = self._rounds(fns, runs)
        self.last = {"min": {n: min(v) for n, v in samples.items()}, "retimed": retimed,
                     "spread": max(statistics.median(v) / min(v) for v in samples.values())}
        return {n: statistics.median(v) for n, v in samples.items()}

    def copy_tbs(self) -> float:
        torch = self.torch
        x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        y = torch.empty_like(x)
        ms = self.time({"copy": lambda: y.copy_(x)}, 20)["copy"]
        return 2 * x.numel() / (ms * 1e-3) / 1e12


def make_call(torch, config: dict, A, B, out, ta: bool, tb: bool, M: int, N: int):
    """A launch of the sm_90a kernel `config` on these tensors: the kernel tune_gemm measures (compile_plain)."""
    from tessera.kernels import gemm as G
    from tessera.ops._hopper import compile_plain, layout_of

    ck, cfg = compile_plain(config, "bf16", layout_of(ta, tb))
    grid = G.grid(M, N, BM=cfg.BM, BN=cfg.BN)
    stream = torch.cuda.current_stream()
    return lambda: ck.launch(grid, [A, B, out, 1.0], stream=stream)


def make_swap_call(torch, M: int, N: int, A, B, out, ta: bool, tb: bool, config: dict | None = None):
    """ops.gemm's decode launch (M <= 64): the kernel of `config` (default: `swap_config(M)`, nothing tuned) on
    C^T = op(B)^T op(A)^T, written through `out`'s transposed view, as tessera.ops._gemm builds it."""
    from tessera.ops._hopper import compile_plain, layout_of, swap_config

    ck, cfg = compile_plain(config or swap_config(M).as_dict(), "bf16", layout_of(not tb, not ta))
    values, _ = ck.values([B, A, torch.empty(N, M, device="cuda", dtype=out.dtype), 1.0])
    at = ck._at
    values[at[(2, "ptr", None)]] = out.data_ptr()
    values[at[(2, "stride", 0)]], values[at[(2, "stride", 1)]] = 1, N
    grid = (-(-N // cfg.BM), -(-M // cfg.BN))
    stream = torch.cuda.current_stream()
    return lambda: ck.launch_values(grid, values, stream)


def row(bench: Bench, layout: str, M: int, N: int, K: int, tune: bool, bench_write: Bench | None = None) -> dict:
    import tessera.ops as ops
    from tessera.ops import _hopper as H

    torch = bench.torch
    ta, tb = layout[0] == "T", layout[1] == "T"
    g = torch.Generator(device="cuda").manual_seed(M * 7 + N * 3 + K)
    a = (torch.randn((M, K), device="cuda", generator=g) / K ** 0.5).bfloat16()
    b = torch.randn((K, N), device="cuda", generator=g).bfloat16()
    A = a.t().contiguous() if ta else a
    B = b.t().contiguous() if tb else b
    x, y = (A.t() if ta else A), (B.t() if tb else B)  # the M x K and K x N views cuBLAS multiplies
    outs = {n: torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            for n in ("cublas", "default", "tuned")}
    entry = {"config": f"{layout} {M}x{N}x{K}", "layout": layout, "M": M, "N": N, "K": K}
    ops.gemm(A, B, trans_a=ta, trans_b=tb, out=outs["default"])
    rec = ops.last_run()
    swap = bool(rec.config.get("swap_ab"))
    default = (H.swap_config(M) if swap else H.default_config(M, N, K, layout=layout)).as_dict()
    entry["ops_arch"], entry["ops_config_source"] = rec.arch, rec.config.get("config_source")
    entry["ops_took_default"] = all(rec.config.get(k) == v for k, v in default.items())
    entry["default_config"], entry["swap_ab"] = default, swap
    fns = {"cublas": lambda: torch.matmul(x, y, out=outs["cublas"]),
           "default": (make_swap_call(torch, M, N, A, B, outs["default"], ta, tb) if swap
                       else make_call(torch, default, A, B, outs["default"], ta, tb, M, N))}
    if tune:
        res = ops.tune_gemm(M, N, K, "bf16", layout=layout, progress=False, runs=5)
        entry["tuned_config"] = res.config
        fns["tuned"] = (make_swap_call(torch, M, N, A, B, outs["tuned"], ta, tb, res.config) if res.config.get("swap_ab")
                        else make_call(torch, res.config, A, B, outs["tuned"], ta, tb, M, N))
    rows = None if M * N * K <= 1 << 33 else torch.randperm(M, generator=g, device="cuda")[:256]
    ref = (x.double() if rows is None else x[rows].double()) @ y.double()
    errs = {}
    for n, fn in fns.items():
        fn()
        torch.cuda.synchronize()
        got = outs[n].double() if rows is None else outs[n][rows].double()
        errs[n] = float((got - ref).abs().max() / ref.abs().max())
    entry["rel_err"] = errs
    bad = [n for n, e in errs.items() if not e <= TOL]
    if bad:
        entry["wrong"] = bad
        fns = {n: f for n, f in fns.items() if n not in bad}
    ms = bench.time(fns, RUNS)
    entry["ms"], entry["ms_min"] = ms, bench.last["min"]
    entry["spread"], entry["retimed"] = bench.last["spread"], bench.last["retimed"]
    flops = 2 * M * N * K
    tf = {n: flops / (t * 1e-3) / 1e12 for n, t in ms.items()}
    entry["cublas_tflops"] = tf.get("cublas")
    entry["ours_default_tflops"] = tf.get("default")
    entry["ours_tflops"] = tf.get("tuned", tf.get("default"))
    if "cublas" in ms:
        entry["ratio_default"] = ms["cublas"] / ms["default"] if "default" in ms else None
        entry["ratio"] = ms["cublas"] / ms["tuned"] if "tuned" in ms else entry["ratio_default"]
    if M <= 64:
        nbytes = 2 * (M * K + K * N + M * N)
        entry["tbs"] = {n: nbytes / (t * 1e-3) / 1e12 for n, t in ms.items()}
    if bench_write is not None and "cublas" in ms:  # beside it, as the tables before 2026-12-07 (tenth) timed
        mw = bench_write.time(fns, RUNS)
        entry["ms_write_flush"] = mw
        entry["ratio_write_flush"] = mw["cublas"] / mw["tuned" if "tuned" in mw else "default"]
        entry["ratio_default_write_flush"] = mw["cublas"] / mw["default"] if "default" in mw else None
    return entry


def summarize(entries: list) -> dict:
    ok = [e for e in entries if e.get("ratio")]
    out = {"rows": len(entries), "geomean_ratio": geomean([e["ratio"] for e in ok]),
           "geomean_ratio_default": geomean([e.get("ratio_default") for e in ok]),
           "min_ratio": min((e["ratio"] for e in ok), default=None),
           "min_ratio_default": min((e["ratio_default"] for e in ok if e.get("ratio_default")), default=None)}
    for name in ("NN", "NT"):
        sel = [e for e in ok if e["layout"] == name]
        out[f"geomean_ratio_{name}"] = geomean([e["ratio"] for e in sel])
    out["decode_ratios"] = {e["config"]: e["ratio"] for e in ok if e["M"] <= 64}
    if any("ratio_write_flush" in e for e in ok):
        out["geomean_ratio_write_flush"] = geomean([e.get("ratio_write_flush") for e in ok])
        out["geomean_ratio_default_write_flush"] = geomean([e.get("ratio_default_write_flush") for e in ok])
        out["decode_ratios_write_flush"] = {e["config"]: e.get("ratio_write_flush") for e in ok if e["M"] <= 64}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-tune", action="store_true")
    p.add_argument("--no-write-flush", action="store_true", help="skip the second timing after a write flush")
    p.add_argument("--budget-s", type=float, default=420)
    p.add_argument("--only", action="append", default=[], help='rows named so only, e.g. "NN 1024x1024x16384"')
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "hopper-gemm-layouts.json"))
    args = p.parse_args(argv)
    import torch

    bench = Bench(torch)
    bench_write = None if args.no_write_flush else Bench(torch, flush="write")
    report = {"command": "python benchmarks/bench_gemm_layouts.py " + " ".join(argv or sys.argv[1:]),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(), "torch": torch.__version__, "dtype": "bf16", "runs": RUNS,
              "copy_tbs": bench.copy_tbs(), "rows": [], "skipped": [], "errors": []}
    rows = QUICK if args.quick else ROWS
    if args.only:
        rows = [(lay, s) for lay, s in rows if f"{lay} {'x'.join(map(str, s))}" in args.only]
    for layout, (M, N, K) in rows:
        if time.monotonic() - T0 > args.budget_s:
            report["skipped"].append(f"{layout} {M}x{N}x{K}")
            continue
        try:
            e = row(bench, layout, M, N, K, not args.no_tune, bench_write)
            report["rows"].append(e)
            print(f"{e['config']:>24}  cuBLAS {e['cublas_tflops']:7.1f}  default {e['ours_default_tflops'] or 0:7.1f} "
                  f"({e.get('ratio_default') or 0:.3f}x)  tuned {e['ours_tflops'] or 0:7.1f} ({e.get('ratio') or 0:.3f}x)"
                  + (f"  TB/s {e['tbs']}" if "tbs" in e else "") + (f"  WRONG {e['wrong']}" if "wrong" in e else ""),
                  flush=True)
        except Exception as err:  # noqa: BLE001 - recorded, the table goes on
            report["errors"].append({"config": f"{layout} {M}x{N}x{K}", "error": f"{type(err).__name__}: {err}"[:2000]})
            print(f"{layout} {M}x{N}x{K}: {type(err).__name__}: {str(err)[:300]}", flush=True)
        report["summary"] = summarize(report["rows"])
        Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report["summary"], indent=1), f"\ncopy {report['copy_tbs']:.2f} TB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
