"""Timing and comparison for kernel authors, the Triton way: `do_bench`, `Benchmark`, `perf_report`.

    ms = tessera.testing.do_bench(lambda: ops.gemm(a, b, out=c))            # median of CUDA-event timings

    @tessera.testing.perf_report(tessera.testing.Benchmark(
        x_names=["N"], x_vals=[2**i for i in range(12, 20)], line_arg="provider",
        line_vals=["tessera", "torch"], line_names=["Tessera", "torch"], ylabel="GB/s", plot_name="vector-add"))
    def bench(N, provider): ...                                              # returns a number (or median, lo, hi)
    bench.run(print_data=True, save_path="plots")                            # a table, a CSV and a PNG

On a GPU (`device="cuda"`, the default when torch sees one) each repetition
is timed by a pair of CUDA events around the call alone, after a 256 MB write
that evicts the 50 MB L2 of an H100/H200 (`flush_l2`), so a kernel is timed
reading its inputs from HBM as it would in a model; on the CPU (`device="cpu"`,
e.g. the reference interpreter) by time.perf_counter. Warm-up and repetition
counts come from a first estimate so that each phase lasts about `warmup` and
`rep` milliseconds. torch (GPU timing) and matplotlib (plots) are optional:
asking for either without it installed raises BENCH_UNAVAILABLE.
"""

from __future__ import annotations

import csv
import math
import os
import statistics
import time
from dataclasses import dataclass, field

from tessera.ir import diagnostics as D

RETURN_MODES = ("median", "mean", "min", "max", "all")
FLUSH_BYTES = 256 << 20  # > 5x the largest L2 in service (H100/H200: 50 MB)


def _bad(message: str, hint: str | None = None) -> D.TesseraError:
    return D.TesseraError(D.BENCH_ARG_INVALID, f"tessera.testing: {message}", hint=hint)


def _torch():
    try:
        import torch
    except ImportError:
        raise D.TesseraError(D.BENCH_UNAVAILABLE, "tessera.testing.do_bench(device='cuda') times with torch CUDA "
                                                  "events and torch is not installed",
                             hint="pip install torch, or time CPU work with device='cpu'") from None
    return torch


def do_bench(fn, *, warmup: float = 25.0, rep: float = 100.0, quantiles=None, return_mode: str = "median",
             flush_l2: bool | str = True, device: str | None = None):
    """Time `fn()` in milliseconds: the median (or `return_mode`) over about `rep` ms of repetitions.

    quantiles: e.g. (0.5, 0.2, 0.8) to get those quantiles as a list instead. device: 'cuda' or 'cpu'
    (default: 'cuda' when torch has a CUDA device, else 'cpu'). flush_l2: evict L2 before each repetition
    (GPU only): True reads 256 MB, leaving L2 cold and clean, as a call in a model finds it; "write" rewrites
    it as Triton's do_bench does (its ~50 MB of dirty lines are written back inside the timed call: +2.5-4.4 us
    on a 16 x 4096 x 4096 GEMM on an H100); False keeps L2 warm. return_mode 'all' gives every repetition's
    time.
    """
    if not callable(fn):
        raise _bad(f"fn is a {type(fn).__name__}, not a callable", hint="pass a function of no arguments")
    for name, value in (("warmup", warmup), ("rep", rep)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
            raise _bad(f"{name}={value!r} must be a positive number of milliseconds")
    if flush_l2 not in (True, False, "write"):
        raise _bad(f"flush_l2={flush_l2!r} is not True, False or 'write'")
    if return_mode not in RETURN_MODES:
        raise _bad(f"return_mode={return_mode!r} is not one of {', '.join(RETURN_MODES)}")
    if quantiles is not None:
        quantiles = list(quantiles)
        if not quantiles or not all(isinstance(q, (int, float)) and 0 <= q <= 1 for q in quantiles):
            raise _bad(f"quantiles={quantiles!r} must be numbers in [0, 1]")
    if device is None:
        try:
            import torch
            device = "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            device = "cpu"
    if device == "cuda":
        times = _cuda_times(fn, warmup, rep, flush_l2)
    elif device == "cpu":
        times = _cpu_times(fn, warmup, rep)
    else:
        raise _bad(f"device={device!r} is neither 'cuda' nor 'cpu'")
    if quantiles is not None:
        return [_quantile(times, q) for q in quantiles]
    if return_mode == "all":
        return times
    return {"median": statistics.median, "mean": statistics.fmean, "min": min, "max": max}[return_mode](times)


def _quantile(xs: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _counts(estimate_ms: float, warmup: float, rep: float) -> tuple[int, int]:
    est = max(estimate_ms, 1e-4)
    return max(1, round(warmup / est)), max(1, min(100_000, round(rep / est)))


def _cpu_times(fn, warmup: float, rep: float) -> list[float]:
    t0 = time.perf_counter()
    fn()
    n_warm, n_rep = _counts((time.perf_counter() - t0) * 1e3, warmup, rep)
    for _ in range(n_warm):
        fn()
    times = []
    for _ in range(n_rep):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


HEAD_START_CYCLES = 40_000  # a ~20 us GPU sleep before each timed repetition (torch.cuda._sleep counts cycles)


def _cuda_times(fn, warmup: float, rep: float, flush_l2: bool | str) -> list[float]:
    torch = _torch()
    if not torch.cuda.is_available():
        raise D.TesseraError(D.BENCH_UNAVAILABLE, "do_bench(device='cuda'): torch sees no CUDA device",
                             hint="run on a GPU machine, or time CPU work with device='cpu'")
    evict = None
    if flush_l2 == "write":
        buf = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        evict = lambda: buf.zero_()  # noqa: E731
    elif flush_l2:
        from tessera.ops._cold_l2 import ColdL2

        evict = ColdL2(torch, FLUSH_BYTES).evict
    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    stop.record()
    torch.cuda.synchronize()
    n_warm, n_rep = _counts(start.elapsed_time(stop) / 5, warmup, rep)
    for _ in range(n_warm):
        fn()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n_rep)]
    sleep = getattr(torch.cuda, "_sleep", None)
    for s, e in pairs:
        if sleep is not None:  # the host queues the eviction and fn() while the GPU waits, so a small fn's time
            sleep(HEAD_START_CYCLES)  # is the GPU's, not its launch overhead (hot, 8 MB: 18 us unslept, 12 after)
        if evict is not None:
            evict()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in pairs]


# --- perf_report: sweep a parameter, compare providers, tabulate and plot --------------------------------------
@dataclass
class Benchmark:
    """One comparison: for each x in `x_vals` (bound to every name in `x_names`) and each provider in
    `line_vals` (bound to `line_arg`), the decorated function returns a number, or (value, low, high)."""

    x_names: list[str]
    x_vals: list
    line_arg: str
    line_vals: list
    line_names: list[str] | None = None
    plot_name: str = "benchmark"
    args: dict = field(default_factory=dict)
    xlabel: str | None = None
    ylabel: str = "ms"
    x_log: bool = False
    y_log: bool = False

    def check(self) -> None:
        if not self.x_names or not self.x_vals or not self.line_vals:
            raise _bad(f"Benchmark {self.plot_name!r} needs x_names, x_vals and line_vals, each non-empty")
        if self.line_names is not None and len(self.line_names) != len(self.line_vals):
            raise _bad(f"Benchmark {self.plot_name!r}: {len(self.line_names)} line_names for "
                       f"{len(self.line_vals)} line_vals")
        clash = {self.line_arg, *self.x_names} & set(self.args)
        if clash or self.line_arg in self.x_names:
            raise _bad(f"Benchmark {self.plot_name!r}: {sorted(clash) or [self.line_arg]} is both swept and fixed")

    @property
    def names(self) -> list[str]:
        return list(self.line_names) if self.line_names is not None else [str(v) for v in self.line_vals]


@dataclass
class BenchmarkTable:
    """The measured table of one Benchmark: one row per x, one column per provider (and _low/_high)."""

    benchmark: Benchmark
    rows: list[dict]

    def text(self) -> str:
        cols = [self.benchmark.x_names[0], *self.benchmark.names]
        lines = [f"{self.benchmark.plot_name} ({self.benchmark.ylabel}):", "  ".join(f"{c:>14}" for c in cols)]
        for r in self.rows:
            lines.append("  ".join(f"{_fmt(r[c]):>14}" for c in cols))
        return "\n".join(lines)


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


class PerfReport:
    """A benchmark function with its Benchmarks: `.run(...)` measures, prints, saves and plots them."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = [benchmarks] if isinstance(benchmarks, Benchmark) else list(benchmarks)
        for b in self.benchmarks:
            if not isinstance(b, Benchmark):
                raise _bad(f"perf_report takes Benchmark objects, got {type(b).__name__}")
            b.check()

    def run(self, *, print_data: bool = False, save_path: str | None = None, show_plots: bool = False
            ) -> list[BenchmarkTable]:
        """Measure every Benchmark; print its table, write CSV + PNG under save_path, show the plot."""
        tables = []
        for b in self.benchmarks:
            if save_path is not None or show_plots:
                _pyplot()  # fail before measuring anything when a plot cannot be drawn
            rows = []
            for x in b.x_vals:
                row = {name: x for name in b.x_names}
                for value, name in zip(b.line_vals, b.names):
                    got = self.fn(**{n: x for n in b.x_names}, **{b.line_arg: value}, **b.args)
                    mid, lo, hi = got if isinstance(got, tuple) else (got, got, got)
                    row[name], row[f"{name}_low"], row[f"{name}_high"] = float(mid), float(lo), float(hi)
                rows.append(row)
            table = BenchmarkTable(b, rows)
            if print_data:
                print(table.text())
            if save_path is not None:
                os.makedirs(save_path, exist_ok=True)
                write_csv(table, os.path.join(save_path, f"{b.plot_name}.csv"))
                plot_lines(rows, b.x_names[0], b.names, os.path.join(save_path, f"{b.plot_name}.png"),
                           title=b.plot_name, xlabel=b.xlabel or b.x_names[0], ylabel=b.ylabel, x_log=b.x_log,
                           y_log=b.y_log)
            if show_plots:
                _pyplot().show()
            tables.append(table)
        return tables


def perf_report(benchmarks):
    """Decorator: `@perf_report(Benchmark(...))` (or a list of them) turns a function into a PerfReport."""
    return lambda fn: PerfReport(fn, benchmarks)


def write_csv(table: BenchmarkTable, path: str) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table.rows[0]))
        w.writeheader()
        w.writerows(table.rows)


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise D.TesseraError(D.BENCH_UNAVAILABLE, "a plot was asked for and matplotlib is not installed",
                             hint="pip install 'tessera[plot]' (matplotlib), or run with save_path=None and "
                                  "show_plots=False for the table alone") from None
    return plt


def plot_lines(rows: list[dict], x: str, lines: list[str], path: str, *, title: str, xlabel: str, ylabel: str,
               x_log: bool = False, y_log: bool = False, reference: float | None = None) -> None:
    """Draw `lines` (columns of `rows`) against column `x`, shading <line>_low.._high where present, to PNG.

    reference: a horizontal line (e.g. 1.0 for a ratio against a peer)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    xs = [r[x] for r in rows]
    categorical = not all(isinstance(v, (int, float)) for v in xs)
    pos = list(range(len(xs))) if categorical else xs
    for name in lines:
        ys = [r[name] for r in rows]
        ax.plot(pos, ys, marker="o", label=name)
        if all(f"{name}_low" in r for r in rows):
            ax.fill_between(pos, [r[f"{name}_low"] for r in rows], [r[f"{name}_high"] for r in rows], alpha=0.2)
    if reference is not None:
        ax.axhline(reference, color="grey", linestyle="--", linewidth=1)
    if categorical:
        ax.set_xticks(pos, [str(v) for v in xs], rotation=45, ha="right", fontsize=8)
    elif x_log:
        ax.set_xscale("log", base=2)
    if y_log:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


__all__ = ["do_bench", "Benchmark", "BenchmarkTable", "PerfReport", "perf_report", "plot_lines", "write_csv"]
