"""Hopper GEMM side by side on an H200: Tessera (sm_90a: wgmma + TMA) vs cuBLAS (torch.matmul) vs a Triton GEMM.

    python benchmarks/bench_hopper_gemm.py [--quick] [--arch sm_90a] [--budget-s 270] [--out FILE]

Work: C = A @ W^T, A [M, K] and W [N, K] row-major (the nn.Linear layout), in bf16 and f16 over SHAPES;
then GEMM + bias + exact (erf) gelu in bf16 over EPILOGUE_SHAPES, against torch's separate ops
(matmul, + bias, gelu) and F.linear(+bias) + gelu. Inputs are fresh normal values with W scaled by
1/sqrt(K), so C is about N(0, 1): well inside bf16's range, and never zeros (which would hide errors).

Triton: a pointer-based blocked kernel written here (grouped program order, tl.dot, 7 Hopper configs under
triton.autotune). On this layout it is slower than on A @ B: 553 vs 631 TFLOP/s at 8192^3 bf16 with the
same kernel and configs (H200, 2026-11-30; loading W as [BN, BK] and tl.trans gives the same), so the
Tessera/Triton ratios are against Triton on the nn.Linear layout, not against DESIGN's A @ B figures.

Tessera: `tessera_gemm` compiles kernels/gemm.py (TRANS_B) for --arch through `tessera.compile` and
launches it; its config comes from TESSERA_CONFIGS through `tessera.ops.autotune` (disk cache in
$TESSERA_CACHE_DIR, pin one with TESSERA_PIN_GEMM=BM=128,BN=256,BK=64,stages=4,SPLIT_K=1,splitk=1,schedule=cooperative,cluster=2;
splitk=S is split-K in one launch, SPLIT_K=S the two-launch kernels/gemm_splitk.py; multicast=a makes a 2-CTA
cluster pair tile columns and share A instead of rows sharing B; streamk=1 is stream-K). Each candidate is
checked against the reference before it is timed, so a wrong kernel is never chosen. A compile error is
recorded once per (dtype, config, epilogue) and the peers carry on: nothing falls back silently.

Method: one process, one timer for all: each implementation is checked first (Tessera is tuned then),
then those that passed are timed side by side: 3 warm-up calls each, then RUNS = 30 rounds in which
every implementation runs once (rotating who goes first), each call between CUDA events after an L2
L2 eviction (a 256 MB read: tessera.ops._cold_l2; a write before 2026-12-07's tenth session), so clock and power drift reach all alike; a device-side sleep opens each round
so the host queues it ahead and the events time the GPU, not Python launch overhead. Median (never
fewer than 20 calls unless the time box forces it, then down to 5; the count is recorded per entry).
TFLOP/s = 2*M*N*K / median. Ratios are speeds: tessera/cublas = cuBLAS ms / Tessera ms (> 1: faster).
Correctness: every implementation against float64 torch on the GPU; relative error max|x - ref| /
max|ref| must be <= 2e-2 (bf16) or 5e-3 (f16). Above 2^36 multiply-adds (8192^3) only 256 random
rows are checked (one seeded draw, the same rows for every implementation) to keep the float64
operands small. A wrong or failed result is flagged, not timed, and left out of the summary.
Time box: one deadline (--budget-s from start, default 270 s: the whole run stays under 5 minutes);
work that cannot start before it (keeping a reserve for the epilogue section) is listed in "skipped".
The JSON is rewritten after each shape, so a crash keeps what was measured.
Output: JSON (config per shape, versions, timings, errors, summary) to $OUT/hopper_gemm.json (or
--out), then a table on stdout. Importable without torch/triton (tests/unit/test_bench_hopper_gemm.py).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

T0 = time.monotonic()
HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

try:  # the Triton peer is defined only where triton exists; the pure helpers import anywhere
    import triton
    import triton.language as tlang
except ImportError:
    triton = tlang = None

FORMAT = "tessera-bench-hopper-gemm-1"
DTYPES = ("bf16", "f16")
SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (8192, 8192, 1024), (16384, 1024, 4096),
          (4000, 4000, 4000), (1024, 1024, 16384), (128, 8192, 8192))
EPILOGUE_SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096))
QUICK = {"dtypes": ("bf16",), "shapes": ((2048, 2048, 2048), (4000, 4000, 4000)),
         "epilogue": ((2048, 2048, 2048),)}
TESSERA_CONFIGS = [  # tried in this order; the autotuner keeps the fastest correct one per shape bucket
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1, "multicast": "b"},  # 196 KiB smem: 4 x (128 + 256) x 64 x 2 B
    {"BM": 128, "BN": 256, "BK": 64, "stages": 3, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1, "multicast": "b"},
    {"BM": 64, "BN": 256, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1, "multicast": "b"},
    {"BM": 64, "BN": 128, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1, "multicast": "b"},  # small M (128 x 8192 x 8192): more CTAs
    {"BM": 128, "BN": 128, "BK": 64, "stages": 4, "SPLIT_K": 2, "splitk": 1, "schedule": "cooperative", "cluster": 1, "multicast": "b"},  # few tiles, long K: split K (two launches)
    # split-K in one launch (warp-specialize splitk=S): the last split of a tile sums them and runs the epilogue
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 2, "schedule": "cooperative", "cluster": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 2, "schedule": "cooperative", "cluster": 2, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "SPLIT_K": 1, "splitk": 2, "schedule": "cooperative", "cluster": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "SPLIT_K": 1, "splitk": 2, "schedule": "pingpong", "cluster": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 1, "multicast": "b"},  # epilogue overlaps
    {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 2, "schedule": "pingpong", "cluster": 1, "multicast": "b"},
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 1, "multicast": "b"},  # skinny: more CTAs
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "SPLIT_K": 1, "splitk": 2, "schedule": "pingpong", "cluster": 1, "multicast": "b"},
    # 2-CTA clusters: the pair takes tile rows 2p, 2p+1 of one column and shares B through TMA multicast
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 2, "multicast": "b"},
    {"BM": 128, "BN": 256, "BK": 64, "stages": 3, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 2, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 2, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 2, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 2, "multicast": "b"},
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 2, "multicast": "b"},
    # 256 x 128 tiles: two consumer warpgroups of two 64-row blocks each (cuBLAS's 256x128 "coopA" at 4096^3)
    {"BM": 256, "BN": 128, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1,
     "multicast": "b"},
    {"BM": 256, "BN": 128, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 2,
     "multicast": "b"},
    # 2-CTA clusters along N: the pair takes tile columns 2q, 2q+1 of one row and shares A (M small)
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 2,
     "multicast": "a"},
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 2,
     "multicast": "a"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 2,
     "multicast": "a"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 2, "schedule": "cooperative", "cluster": 2,
     "multicast": "a"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 2, "schedule": "pingpong", "cluster": 2, "multicast": "b"},
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 4, "schedule": "cooperative", "cluster": 1, "multicast": "b"},  # 1 wave of 128
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1, "multicast": "b"},  # few tiles
    # 192 x 160 tiles on three consumer warpgroups (cuBLAS's tile for 4000^3: 21 x 25 tiles, 3.98 waves)
    {"BM": 192, "BN": 160, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1,
     "multicast": "b"},
    {"BM": 192, "BN": 160, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 2,
     "multicast": "b"},
    # stream-K (warp-specialize streamk=1): the partial last wave's K steps shared by every SM
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 2,
     "multicast": "b", "streamk": 1},
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1,
     "multicast": "b", "streamk": 1},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 1,
     "multicast": "b", "streamk": 1},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 1,
     "multicast": "b", "streamk": 1},
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "SPLIT_K": 1, "splitk": 1, "schedule": "pingpong", "cluster": 1,
     "multicast": "b", "streamk": 1},
    {"BM": 256, "BN": 128, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1, "schedule": "cooperative", "cluster": 2,
     "multicast": "b", "streamk": 1},
]
BOUNDS = {"bf16": 2e-2, "f16": 5e-3}
IMPLS = ("cublas", "triton", "tessera")
EPILOGUE_IMPLS = ("torch_separate", "torch_linear", "tessera")
RUNS, FLOOR_RUNS, WARMUP, TUNE_RUNS = 30, 5, 3, 10
CHECK_ROWS, FULL_CHECK_MACS = 256, 2 ** 36
FLUSH_BYTES = 256 << 20
SLEEP_CYCLES = 400_000  # per call in a round: ~0.2 ms at 1.98 GHz, more than the host needs to queue one call
EPILOGUE_RESERVE_S, MIN_ITEM_S = 40.0, 8.0


# --- pure helpers (tested on the CPU) -------------------------------------------------------------------

def parse_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    """'1024x1024x16384,128x8192x8192' -> ((1024, 1024, 16384), (128, 8192, 8192)); ValueError names a bad one."""
    out = []
    for part in text.split(","):
        dims = part.strip().lower().split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ValueError(f"--shapes: {part!r} is not MxNxK with positive integers")
        out.append(tuple(int(d) for d in dims))
    return tuple(out)


def tflops(M: int, N: int, K: int, ms: float) -> float:
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12


def speed_ratio(ours_ms, peer_ms) -> float | None:
    """Tessera's speed over a peer's (peer ms / Tessera ms), or None when either is missing."""
    return peer_ms / ours_ms if ours_ms and peer_ms else None


def geomean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def check_rows(M: int, N: int, K: int) -> int | None:
    """Rows checked against float64: None (all) up to 2^36 multiply-adds, else CHECK_ROWS random rows."""
    return None if M * N * K <= FULL_CHECK_MACS or M <= CHECK_ROWS else CHECK_ROWS


def plan_runs(est_ms: float, share_s: float) -> int:
    """Timed calls for one implementation: RUNS, or as many as its share of the time box affords, never
    fewer than FLOOR_RUNS. Shares are ~2 s on a full run, so only a kernel slower than 100 ms per call, or a
    nearly spent time box, gets fewer than 20."""
    afford = int(share_s * 1e3 / max(est_ms, 1e-3))
    return max(FLOOR_RUNS, min(RUNS, afford))


class Deadline:
    """The run's one time box, counted from the script's start (import time)."""

    def __init__(self, budget_s: float, start: float = T0, clock=time.monotonic):
        self.end, self.clock = start + budget_s, clock

    def left(self) -> float:
        return self.end - self.clock()


def shape_name(M: int, N: int, K: int) -> str:
    return f"{M}x{N}x{K}"


def summarize(rows: list) -> dict:
    """Per dtype: geomean and min of Tessera/cuBLAS, geomean of Tessera/Triton, shapes above Triton, failures."""
    out = {}
    for dt in sorted({r["dtype"] for r in rows}):
        mine = [r for r in rows if r["dtype"] == dt]
        vs_cublas = [(r["ratios"].get("tessera/cublas"), shape_name(r["M"], r["N"], r["K"])) for r in mine]
        vs_cublas = [(x, s) for x, s in vs_cublas if x is not None]
        vs_triton = [r["ratios"]["tessera/triton"] for r in mine if r["ratios"].get("tessera/triton") is not None]
        low = min(vs_cublas) if vs_cublas else (None, None)
        out[dt] = {"shapes": len(mine), "compared_with_cublas": len(vs_cublas),
                   "geomean_tessera_over_cublas": _round(geomean([x for x, _ in vs_cublas])),
                   "min_tessera_over_cublas": _round(low[0]), "min_shape": low[1],
                   "geomean_tessera_over_triton": _round(geomean(vs_triton)),
                   "above_triton": sum(x > 1.0 for x in vs_triton), "compared_with_triton": len(vs_triton),
                   "failures": [f"{shape_name(r['M'], r['N'], r['K'])} {name}: {e.get('error') or 'wrong result'}"[:300]
                                for r in mine for name, e in r["impls"].items() if not e.get("ok")]}
    return out


def ratios(impls: dict, peers) -> dict:
    """tessera/<peer> speed ratios over the implementations that passed the check and were timed."""
    ours = impls.get("tessera", {})
    good = lambda e: e.get("ok") and e.get("ms")  # noqa: E731
    return {f"tessera/{p}": _round(speed_ratio(ours["ms"], impls[p]["ms"])) for p in peers
            if p in impls and good(ours) and good(impls[p])}


def _round(x, digits: int = 4):
    return None if x is None else round(x, digits)


def clean_json(obj):
    """JSON-safe copy: non-finite floats become strings ('nan', 'inf'), tuples lists."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    return obj


def validate_report(report: dict) -> list[str]:
    """Problems with the report's shape (empty when it matches FORMAT); the script checks before writing."""
    problems = []
    need = {"format": str, "date": str, "command": str, "arch": str, "budget_s": (int, float), "device": dict,
            "versions": dict, "method": str, "results": list, "epilogue": list, "skipped": list, "summary": dict,
            "total_seconds": (int, float)}
    for k, t in need.items():
        if not isinstance(report.get(k), t):
            problems.append(f"{k}: missing or not {t}")
    for i, row in enumerate(report.get("results", []) + report.get("epilogue", [])):
        where = f"row {i} ({row.get('dtype')} {row.get('M')}x{row.get('N')}x{row.get('K')})"
        if row.get("dtype") not in DTYPES or not all(isinstance(row.get(d), int) for d in "MNK"):
            problems.append(f"{where}: dtype or M/N/K malformed")
        if not isinstance(row.get("impls"), dict) or not isinstance(row.get("ratios"), dict):
            problems.append(f"{where}: impls/ratios missing")
            continue
        for name, e in row["impls"].items():
            if name not in IMPLS + EPILOGUE_IMPLS or not isinstance(e.get("ok"), bool):
                problems.append(f"{where}: impl {name!r} unknown or without ok")
            elif e["ok"] and not (isinstance(e.get("ms"), float) and isinstance(e.get("runs"), int)):
                problems.append(f"{where}: {name} is ok but has no ms/runs")
            elif not e["ok"] and not (e.get("error") or e.get("rel_err") is not None):
                problems.append(f"{where}: {name} failed without an error or rel_err")
        if "tessera" in row["impls"] and "config" not in row["impls"]["tessera"]:
            problems.append(f"{where}: tessera entry has no config")
    for dt, s in report.get("summary", {}).items():
        if not isinstance(s, dict):
            problems.append(f"summary {dt}: not a dict")
    return problems


def table(report: dict) -> str:
    lines = [f"{'dtype':<6}{'shape':<26}{'impl':<15}{'ms':>9}{'TFLOP/s':>9}{'rel err':>9}{'runs':>5}  note"]
    for row in report["results"] + report["epilogue"]:
        label = shape_name(row["M"], row["N"], row["K"]) + (" +bias+gelu" if row.get("work") == "epilogue" else "")
        for name, e in row["impls"].items():
            note = _config_text(e.get("config")) if e.get("ok") else "FAILED: " + failure_text(e)
            lines.append(f"{row['dtype']:<6}{label:<26}{name:<15}{_num(e.get('ms'), 9, 3)}{_num(e.get('tflops'), 9, 1)}"
                         f"{_num(e.get('rel_err'), 9, 1, 'e')}{e.get('runs', ''):>5}  {note[:90]}")
        if row["ratios"]:
            lines.append(f"{'':<32}speed " + ", ".join(f"{k} {v:.2f}x" for k, v in row["ratios"].items()))
    for dt, s in report["summary"].items():
        lines.append(f"summary {dt}: " + ", ".join(f"{k}={v}" for k, v in s.items() if k != "failures")
                     + (f"; {len(s['failures'])} failure(s)" if s.get("failures") else ""))
    lines += [f"skipped: {s['what']}: {s['reason']}" for s in report["skipped"]]
    return "\n".join(lines)


def failure_text(entry: dict) -> str:
    """One line for a failed entry: the first candidate's error when every tuning candidate failed,
    else the error without its file:line:col prefix."""
    trials = [c["error"] for c in entry.get("candidates") or [] if c.get("error")]
    text = (f"all {len(entry['candidates'])} configs failed; first: {trials[0]}" if trials
            else entry.get("error") or "no error text")
    line = (text.strip().splitlines() or ["?"])[0]
    return line.split(": error: ", 1)[-1]


def _num(x, width: int, digits: int, kind: str = "f") -> str:
    return f"{x:>{width}.{digits}{kind}}" if isinstance(x, (int, float)) else f"{'-':>{width}}"


def _config_text(config) -> str:
    if isinstance(config, dict):
        return " ".join(f"{k}={v}" for k, v in config.items())
    return str(config or "")


def source_sha() -> str:
    """sha256 over src/tessera's Python files: a tuning measured on other lowering code is not reused."""
    h = hashlib.sha256()
    for path in sorted((SRC / "tessera").rglob("*.py")):
        h.update(str(path.relative_to(SRC)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


# --- the Triton peer: C = A @ W^T -------------------------------------------------------------------------

if triton is not None:
    @triton.autotune(configs=[
        triton.Config({"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8}, num_stages=4, num_warps=8),
        triton.Config({"BM": 256, "BN": 128, "BK": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8}, num_stages=4, num_warps=8),
        triton.Config({"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 64, "BN": 256, "BK": 64, "GROUP_M": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 64, "BN": 128, "BK": 64, "GROUP_M": 8}, num_stages=5, num_warps=4),
    ], key=["M", "N", "K"])
    @triton.heuristics({"EVEN_K": lambda a: a["K"] % a["BK"] == 0})
    @triton.jit
    def _gemm_a_wt(a_ptr, w_ptr, c_ptr, M, N, K, s_am, s_ak, s_wn, s_wk, s_cm, s_cn, BM: tlang.constexpr,
                   BN: tlang.constexpr, BK: tlang.constexpr, GROUP_M: tlang.constexpr, EVEN_K: tlang.constexpr):
        # Program ids walk C down GROUP_M row-blocks of one column strip before moving right, so the
        # CTAs resident together reuse the same W (and A) tiles out of L2.
        pid = tlang.program_id(0)
        blocks_m, blocks_n = tlang.cdiv(M, BM), tlang.cdiv(N, BN)
        in_group = GROUP_M * blocks_n
        m_first = (pid // in_group) * GROUP_M
        m_rows = tlang.minimum(blocks_m - m_first, GROUP_M)
        pid_m = m_first + (pid % in_group) % m_rows
        pid_n = (pid % in_group) // m_rows
        rows = pid_m * BM + tlang.arange(0, BM)
        cols = pid_n * BN + tlang.arange(0, BN)
        ks = tlang.arange(0, BK)
        # rows/cols past the edge read a valid row instead (their results are never stored): no M/N masks
        g_a = a_ptr + (rows % M)[:, None] * s_am + ks[None, :] * s_ak              # gA: BM x BK
        g_wt = w_ptr + (cols % N)[None, :] * s_wn + ks[:, None] * s_wk             # gW^T: BK x BN (W is N x K)
        acc = tlang.zeros((BM, BN), dtype=tlang.float32)                           # acc: BM x BN, f32
        for k0 in range(0, K, BK):
            if EVEN_K:
                a = tlang.load(g_a)
                wt = tlang.load(g_wt)
            else:
                a = tlang.load(g_a, mask=ks[None, :] < K - k0, other=0.0)
                wt = tlang.load(g_wt, mask=ks[:, None] < K - k0, other=0.0)
            acc = tlang.dot(a, wt, acc)
            g_a += BK * s_ak
            g_wt += BK * s_wk
        g_c = c_ptr + rows[:, None] * s_cm + cols[None, :] * s_cn                 # gC: BM x BN
        tlang.store(g_c, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def triton_gemm(A, W, out) -> dict:
    """out = A @ W^T with the Triton kernel above; returns the config its autotuner picked."""
    M, K = A.shape
    N = W.shape[0]
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    _gemm_a_wt[grid](A, W, out, M, N, K, A.stride(0), A.stride(1), W.stride(0), W.stride(1), out.stride(0),
                     out.stride(1))
    best = getattr(_gemm_a_wt, "best_config", None)
    if best is None:
        return {"config": None}
    return {"config": {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}}


# --- Tessera ----------------------------------------------------------------------------------------------

_compiled: dict = {}  # (dtype, config, bias, activation, arch) -> CompiledKernel, or the exception it raised


def tessera_gemm(A, W, out, config: dict, *, bias=None, activation: str = "none", arch: str = "sm_90a") -> dict:
    """out = act(A @ W^T + bias) with Tessera's GEMM kernel (TRANS_B); returns what ran (provenance).

    A [M, K], W [N, K], out [M, N] torch CUDA tensors of one dtype; bias [1, N] or None. The kernel is
    compiled once per (dtype, config, epilogue, arch); a compile error is kept and raised again.
    """
    import torch
    from tessera.kernels.gemm import grid

    dt = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}[A.dtype]
    if config.get("SPLIT_K", 1) > 1:
        return _tessera_splitk(A, W, out, config, bias=bias, activation=activation, arch=arch, dt=dt)
    BM, BN, BK = config["BM"], config["BN"], config["BK"]

    def build():  # only on the first call for this key
        from tessera import tl
        from tessera.compiler import compile as tessera_compile
        from tessera.dsl.specs import ScalarSpec, tensor
        from tessera.kernels.gemm import gemm

        specs = (tensor(("M", "K"), dt), tensor(("N", "K"), dt), tensor(("M", "N"), dt),
                 tensor((1, "N"), dt) if bias is not None else None, None, ScalarSpec(tl.f32), None)
        return tessera_compile(gemm.trace(*specs, BM=BM, BN=BN, BK=BK, TRANS_B=True, ACTIVATION=activation),
                               arch=arch, shape=_shape(config))

    ck = _compile_once(("gemm", dt, BM, BN, BK, _shape(config), bias is not None, activation, arch),
                       build, config, dt, bias, activation, arch)
    M, N = A.shape[0], W.shape[0]
    g = grid(M, N, BM=BM, BN=BN)
    args = ck.traced.func_args(A, W, out, bias, None, 1.0, None)  # None-specialised arguments drop out
    res = ck.launch(g, args, stream=torch.cuda.current_stream())
    return {"lane": res.lane, "kernel": res.kernel, "arch": res.arch, "artifact_hash": res.artifact_hash,
            "config": dict(config), "grid": list(g), "block": list(ck.block), "smem_bytes": ck.smem_bytes,
            "pipeline": ck.pipeline}


COMPILES: list = []
_workspaces: dict = {}


def _shape(config: dict):
    """The config's launch shape: stages, warp-specialize schedule, cluster, in-kernel split-K, multicast and
    stream-K (ignored off sm_90a). The table writes streamk=1 as warp-specialize spells it; LaunchShape takes a bool.
    """
    from tessera.compiler.launch_shape import LaunchShape

    return LaunchShape.from_config({**config, "streamk": bool(config.get("streamk", False))})


def _compile_once(key, build, config, dt, bias, activation, arch):
    """build() once per key (key[0] names the kernel); a compile error is kept, recorded and raised again."""
    ck = _compiled.get(key)
    if ck is None:
        t0 = time.perf_counter()
        try:
            ck = build()
        except Exception as err:  # noqa: BLE001 - kept, so the next shape does not recompile to fail again
            ck = err
        _compiled[key] = ck
        COMPILES.append({"dtype": dt, "config": dict(config), "bias": bias is not None, "activation": activation,
                         "arch": arch, "seconds": round(time.perf_counter() - t0, 2), "kernel": key[0],
                         "error": None if not isinstance(ck, Exception) else _error_text(ck)})
    if isinstance(ck, Exception):
        raise ck
    return ck


def _tessera_splitk(A, W, out, config: dict, *, bias, activation: str, arch: str, dt: str) -> dict:
    """Split-K: kernels/gemm_splitk.py's partial products into an f32 workspace, then its reduce + epilogue."""
    import torch
    from tessera import tl
    from tessera.compiler import compile as tessera_compile
    from tessera.dsl.specs import ScalarSpec, tensor
    from tessera.kernels import gemm_splitk as SK

    BM, BN, BK, S = config["BM"], config["BN"], config["BK"], config["SPLIT_K"]
    M, N = A.shape[0], W.shape[0]
    part = _compile_once(("gemm_splitk", dt, BM, BN, BK, S, _shape(config), arch),
                         lambda: tessera_compile(
        SK.gemm_splitk.trace(tensor(("M", "K"), dt), tensor(("N", "K"), dt), tensor(("R", "N"), "f32"),
                             BM=BM, BN=BN, BK=BK, SPLIT_K=S, TRANS_B=True), arch=arch, shape=_shape(config)),
        config, dt, bias, activation, arch)
    red = _compile_once(("splitk_reduce", dt, S, bias is not None, activation, arch), lambda: tessera_compile(
        SK.splitk_reduce.trace(tensor(("R", "N"), "f32"), tensor(("M", "N"), dt),
                               tensor((1, "N"), dt) if bias is not None else None, None, ScalarSpec(tl.f32), None,
                               SPLIT_K=S, ACTIVATION=activation), arch=arch), config, dt, bias, activation, arch)
    rows = SK.workspace_rows(M, BM, S)
    ws = _workspaces.get((rows, N))
    if ws is None:
        ws = _workspaces[(rows, N)] = torch.empty((rows, N), dtype=torch.float32, device=A.device)
    stream = torch.cuda.current_stream()
    g1 = SK.grid(M, N, BM=BM, BN=BN, SPLIT_K=S)
    r1 = part.launch(g1, part.traced.func_args(A, W, ws), stream=stream)
    g2 = SK.reduce_grid(M, N)
    r2 = red.launch(g2, red.traced.func_args(ws, out, bias, None, 1.0, None), stream=stream)
    return {"lane": r2.lane, "kernel": f"{r1.kernel}+{r2.kernel}", "arch": r1.arch,
            "artifact_hash": f"{r1.artifact_hash}+{r2.artifact_hash}", "config": dict(config),
            "grid": [list(g1), list(g2)], "block": [list(part.block), list(red.block)],
            "smem_bytes": [part.smem_bytes, red.smem_bytes], "pipeline": part.pipeline}


def _error_text(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"[:3000]


# --- measuring on the GPU ---------------------------------------------------------------------------------

class ContextLost(RuntimeError):
    """The CUDA context no longer works (an execution fault poisons it): nothing after this can be measured."""


class Runner:
    """One timer, one checker and the Tessera tuning for every implementation of every shape."""

    def __init__(self, torch, deadline: Deadline, arch: str, toolchain: str):
        self.torch, self.deadline, self.arch, self.toolchain = torch, deadline, arch, toolchain
        from tessera.ops._cold_l2 import ColdL2

        self.flush = ColdL2(torch, FLUSH_BYTES)  # .evict(): L2 evicted by a read before every call
        self.share_s = 2.0

    def time(self, fns: dict, runs: int | None = None) -> dict:
        """{name: (median ms, calls timed)} for callables timed side by side.

        WARMUP calls of each, then rounds: in each round every callable runs once, between CUDA events
        and after an L2 flush, starting one place further along each round. Clock and power drift
        over the seconds of a measurement so reaches every implementation alike, not the last one. Each
        round starts with a device-side sleep (torch.cuda._sleep) long enough for the host to queue the
        round behind it, so the events time the GPU, not how fast Python launches (a 30 us kernel would
        otherwise absorb a slow launcher's overhead; host cost is measured in tests/gpu instead).
        """
        cuda, names = self.torch.cuda, list(fns)
        est = {}
        for name in names:
            t0, t1 = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
            t0.record()
            for _ in range(WARMUP):
                fns[name]()
            t1.record()
            cuda.synchronize()
            est[name] = t0.elapsed_time(t1) / WARMUP
        runs = runs or plan_runs(max(est.values()), self.share_s * len(names))
        events = {n: [(cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)) for _ in range(runs)]
                  for n in names}
        sleep = getattr(cuda, "_sleep", None)
        for r in range(runs):
            if sleep is not None:  # the device waits while the host queues the whole round
                sleep(SLEEP_CYCLES * len(names))
            for i in range(len(names)):
                name = names[(r + i) % len(names)]
                start, end = events[name][r]
                self.flush.evict()
                start.record()
                fns[name]()
                end.record()
        cuda.synchronize()
        return {n: (statistics.median(s.elapsed_time(e) for s, e in events[n]), runs) for n in names}

    def rel_err(self, got, ref, rows) -> float:
        x = (got if rows is None else got[rows]).double()
        return float((x - ref).abs().max() / ref.abs().max())

    def alive(self) -> None:
        try:
            self.torch.cuda.synchronize()
            self.torch.zeros(1, device="cuda").add_(1).item()
        except Exception as err:  # noqa: BLE001 - any failure here means the context is gone
            raise ContextLost(f"the CUDA context stopped working: {_error_text(err)}") from err

    def check(self, call, ref, rows, dt: str) -> dict:
        """The entry of call() -> (output, info) checked against ref; failures are kept, not raised."""
        try:
            got, info = call()
            err = self.rel_err(got, ref, rows)
        except Exception as err:  # noqa: BLE001 - one failing implementation must not hide the others
            self.alive()
            return {"ok": False, "error": _error_text(err)}
        e = {"ok": err <= BOUNDS[dt], "rel_err": err, **info}
        if not e["ok"]:
            e["error"] = f"wrong result: rel err {err:.3g} > {BOUNDS[dt]} ({dt})"
        return e

    def measure(self, checked: dict, M: int, N: int, K: int) -> dict:
        """{name: entry}: the (entry, fn) pairs whose check passed are timed side by side; the rest keep their error."""
        timed = {n: fn for n, (e, fn) in checked.items() if e.get("ok")}
        try:
            found = self.time(timed) if timed else {}
        except Exception as err:  # noqa: BLE001 - recorded on each entry that was being timed
            self.alive()
            found, failure = {}, _error_text(err)
            for n in timed:
                checked[n][0].update(ok=False, error=f"failed while timed: {failure}")
        for n, (ms, runs) in found.items():
            checked[n][0].update(ms=round(ms, 5), tflops=round(tflops(M, N, K, ms), 2), runs=runs)
        return {n: e for n, (e, _) in checked.items()}

    def tessera(self, A, W, out, ref, rows, dt: str, M: int, N: int, K: int, bias=None, activation="none"):
        """(entry, fn): tune over TESSERA_CONFIGS (each candidate checked, then timed), then check the winner."""
        from tessera.ops.autotune import alignment, shape_bucket, tune
        nan = float("nan")
        kw = {"bias": bias, "activation": activation, "arch": self.arch}
        key = {"M": shape_bucket(M), "N": shape_bucket(N), "K": shape_bucket(K), "M_align": alignment(M),
               "N_align": alignment(N), "dtype": dt, "arch": self.arch,
               "epilogue": "bias_gelu" if bias is not None else "none", "toolchain": self.toolchain}

        def measure(config):
            if self.deadline.left() < MIN_ITEM_S / 2:
                raise TimeoutError("the time box ran out before this candidate was measured")
            out.fill_(nan)
            tessera_gemm(A, W, out, config, **kw)
            err = self.rel_err(out, ref, rows)
            if not err <= BOUNDS[dt]:
                raise ValueError(f"wrong result: rel err {err:.3g} > {BOUNDS[dt]} ({dt})")
            return self.time({"c": lambda: tessera_gemm(A, W, out, config, **kw)}, TUNE_RUNS)["c"][0] * 1e-3

        first_trace = []

        def checked(config):  # keeps the first failure's traceback: the tuner keeps only the error text
            try:
                return measure(config)
            except Exception:
                first_trace[:] = first_trace or traceback.format_exc().splitlines()[-12:]
                raise

        try:
            tuned = tune("gemm", key, TESSERA_CONFIGS, checked)
        except Exception as err:  # noqa: BLE001 - OPS_AUTOTUNE_FAILED: its .trials hold every candidate's error
            self.alive()
            trials = getattr(err, "trials", ())
            return {"ok": False, "error": _error_text(err), "config": None, "first_traceback": first_trace,
                    "candidates": [{"config": t.config, "error": t.error} for t in trials]}, None
        cfg = tuned.config

        def call():
            out.fill_(nan)
            return out, {"provenance": tessera_gemm(A, W, out, cfg, **kw)}
        e = self.check(call, ref, rows, dt)
        e.update(config=cfg, tune={"source": tuned.source, "pinned_by": tuned.pinned_by, "key": key,
                                   "measured_at": tuned.measured_at,
                                   "timings": [{"config": t.config, "ms": None if t.seconds is None else
                                                round(t.seconds * 1e3, 5), "error": t.error} for t in tuned.timings]})
        return e, (lambda: tessera_gemm(A, W, out, cfg, **kw))

    def inputs(self, dt: str, M: int, N: int, K: int, seed: int):
        """A [M, K], W [N, K] (scaled by 1/sqrt(K)), the checked rows and the float64 reference A @ W^T."""
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dt]
        A = torch.randn(M, K, device="cuda", generator=g).to(dtype)
        W = (torch.randn(N, K, device="cuda", generator=g) * K ** -0.5).to(dtype)
        n = check_rows(M, N, K)
        rows = None if n is None else torch.randperm(M, device="cuda", generator=g)[:n].sort().values
        ref = (A if rows is None else A[rows]).double() @ W.double().T
        return A, W, rows, ref, dtype

    def gemm_row(self, dt: str, M: int, N: int, K: int) -> dict:
        torch = self.torch
        A, W, rows, ref, dtype = self.inputs(dt, M, N, K, seed=M * 31 + N * 7 + K + len(dt))
        out_triton, out_tessera = (torch.empty(M, N, device="cuda", dtype=dtype) for _ in range(2))
        cublas = lambda: torch.matmul(A, W.T)  # noqa: E731
        checked = {"cublas": (self.check(lambda: (cublas(), {}), ref, rows, dt), cublas)}
        if triton is None:
            checked["triton"] = ({"ok": False, "error": "triton is not installed"}, None)
        else:
            out_triton.fill_(float("nan"))
            checked["triton"] = (self.check(lambda: (out_triton, triton_gemm(A, W, out_triton)), ref, rows, dt),
                                 lambda: triton_gemm(A, W, out_triton))
        checked["tessera"] = self.tessera(A, W, out_tessera, ref, rows, dt, M, N, K)
        impls = self.measure(checked, M, N, K)
        return {"work": "gemm", "dtype": dt, "M": M, "N": N, "K": K, "checked_rows": "all" if rows is None else
                len(rows), "impls": impls, "ratios": ratios(impls, ("cublas", "triton"))}

    def epilogue_row(self, M: int, N: int, K: int) -> dict:
        """GEMM + bias + exact gelu: Tessera fused vs torch's matmul, + bias, gelu and F.linear + gelu."""
        torch = self.torch
        F = torch.nn.functional
        A, W, rows, ref, dtype = self.inputs("bf16", M, N, K, seed=M + N + K + 1)
        bias = (torch.randn(N, device="cuda") * 0.5).to(dtype)
        ref = F.gelu(ref + bias.double())  # exact erf form, as ACTIVATION="gelu"
        out = torch.empty(M, N, device="cuda", dtype=dtype)
        separate = lambda: F.gelu(torch.matmul(A, W.T) + bias)  # noqa: E731 - three kernels
        linear = lambda: F.gelu(F.linear(A, W, bias))  # noqa: E731 - bias in the cuBLASLt epilogue, then gelu
        checked = {"torch_separate": (self.check(lambda: (separate(), {}), ref, rows, "bf16"), separate),
                   "torch_linear": (self.check(lambda: (linear(), {}), ref, rows, "bf16"), linear),
                   "tessera": self.tessera(A, W, out, ref, rows, "bf16", M, N, K, bias=bias.view(1, N),
                                           activation="gelu")}
        impls = self.measure(checked, M, N, K)
        return {"work": "epilogue", "dtype": "bf16", "M": M, "N": N, "K": K, "checked_rows": "all" if rows is None
                else len(rows), "impls": impls, "ratios": ratios(impls, ("torch_separate", "torch_linear"))}


# --- the run ------------------------------------------------------------------------------------------------

def versions(torch) -> dict:
    import importlib.metadata as md
    import tessera
    out = {"python": platform.python_version(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
           "triton": getattr(triton, "__version__", "absent"), "tessera": tessera.__version__,
           "tessera_src_sha256": source_sha()}
    for dist in ("cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc", "xdsl", "numpy", "ml_dtypes"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "absent"
    try:
        from tessera.target.nvidia.toolchain import toolchain_versions
        out["tessera_toolchain"] = dict(toolchain_versions())
    except Exception as err:  # noqa: BLE001 - recorded; Tessera's own entries will say what is missing
        out["tessera_toolchain"] = _error_text(err)
    return out


def summarize_epilogue(rows: list) -> dict:
    out = {f"geomean_tessera_over_{p}": _round(geomean([r["ratios"].get(f"tessera/{p}") for r in rows]))
           for p in ("torch_separate", "torch_linear")}
    out["failures"] = [f"{shape_name(r['M'], r['N'], r['K'])} {n}: {e.get('error') or 'wrong result'}"[:300]
                       for r in rows for n, e in r["impls"].items() if not e.get("ok")]
    return out


def finish(report: dict, path: Path) -> list[str]:
    """Summary, totals and schema check; the JSON is written to a temp file and renamed into place."""
    report["summary"] = summarize(report["results"])
    if report["epilogue"]:
        report["summary"]["epilogue_bf16"] = summarize_epilogue(report["epilogue"])
    report["tessera_compiles"] = COMPILES
    report["total_seconds"] = round(time.monotonic() - T0, 1)
    problems = validate_report(report)
    report["schema_problems"] = problems
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(clean_json(report), indent=1))
    os.replace(tmp, path)
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smoke run: bf16, 2 shapes, one epilogue shape")
    p.add_argument("--arch", default="sm_90a", help="Tessera's target (sm_90 builds the mma.sync kernels)")
    p.add_argument("--budget-s", type=float, default=None, help="time box from start (default 270, quick 150)")
    p.add_argument("--shapes", default=None, help="only these shapes, e.g. 1024x1024x16384,128x8192x8192 (both "
                                                  "dtypes, no epilogue shapes): a targeted run, not the issue's table")
    p.add_argument("--out", default=str(Path(os.environ.get("OUT") or "/tmp/tessera-out") / "hopper_gemm.json"))
    args = p.parse_args(argv)
    budget = args.budget_s or (150.0 if args.quick else 270.0)
    try:
        import torch
    except ImportError:
        print("bench_hopper_gemm: needs torch (and triton) on a CUDA machine; nothing to measure", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench_hopper_gemm: no CUDA device; nothing to measure", file=sys.stderr)
        return 2
    from tessera import __version__
    deadline = Deadline(budget)
    vers = versions(torch)
    toolchain = f"tessera {__version__} src {vers['tessera_src_sha256'][:16]} " + json.dumps(
        vers["tessera_toolchain"], sort_keys=True)
    props = torch.cuda.get_device_properties(0)
    report = {"format": FORMAT, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([sys.executable, *sys.argv]), "arch": args.arch, "budget_s": budget,
              "quick": args.quick, "device": {"name": props.name, "capability": f"{props.major}.{props.minor}",
                                              "sm_count": props.multi_processor_count,
                                              "total_memory": props.total_memory, "host": platform.node()},
              "versions": vers, "method": __doc__.split("Method: ", 1)[1].split("\nTime box")[0].strip(),
              "tessera_configs": TESSERA_CONFIGS, "results": [], "epilogue": [], "skipped": [], "summary": {},
              "total_seconds": 0.0}
    dtypes, shapes, epi = (QUICK["dtypes"], QUICK["shapes"], QUICK["epilogue"]) if args.quick else \
        (DTYPES, SHAPES, EPILOGUE_SHAPES)
    if args.shapes:
        shapes, epi = parse_shapes(args.shapes), ()
    work = [("gemm", dt, s) for dt in dtypes for s in shapes] + [("epilogue", "bf16", s) for s in epi]
    runner, lost, out = Runner(torch, deadline, args.arch, toolchain), None, Path(args.out)
    for i, (kind, dt, (M, N, K)) in enumerate(work):
        what = f"{kind} {dt} {shape_name(M, N, K)}"
        reserve = EPILOGUE_RESERVE_S if kind == "gemm" and epi else 0.0
        left = deadline.left()
        if lost or left < reserve + MIN_ITEM_S:
            report["skipped"].append({"what": what, "reason": lost or f"time box: {left:.0f} s left, "
                                                                       f"{reserve:.0f} s kept for the epilogue"})
            continue
        runner.share_s = max(0.2, (left - reserve) / sum(1 for w in work[i:] if w[0] == kind) / 6)
        t0 = time.monotonic()
        try:
            row = runner.gemm_row(dt, M, N, K) if kind == "gemm" else runner.epilogue_row(M, N, K)
        except ContextLost as err:
            lost = str(err)
            report["skipped"].append({"what": what, "reason": lost})
            continue
        row["seconds"] = round(time.monotonic() - t0, 1)
        report["results" if kind == "gemm" else "epilogue"].append(row)
        print(f"bench [{i + 1}/{len(work)}] {what} ({row['seconds']} s): " + ", ".join(
            f"{n} {e['tflops']:.0f} TF/s" if e.get("ok") else f"{n} FAILED" for n, e in row["impls"].items()),
            file=sys.stderr, flush=True)
        finish(report, out)
        torch.cuda.empty_cache()
    problems = finish(report, out)
    print(f"wrote {out} ({report['total_seconds']} s, {len(report['skipped'])} skipped)")
    print(table(report))
    for problem in problems:
        print(f"schema problem: {problem}", file=sys.stderr)
    return 1 if lost or problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
