"""Tessera's kernels (cuda lane, via tessera.ops) next to their peers, in one process, with one method.

    python benchmarks/bench_kernels.py [--out FILE] [--rep-ms 100] [--only gemm,attention,linear]

Work (bf16, DESIGN section 7):
  GEMM 2048^3, 4096^3, 8192^3          peers: torch.matmul (cuBLAS), a Triton GEMM written here
                                             (tutorial-style: grouped tiles, autotuned over 4 configs)
  attention fwd d=128, S=4096, non-causal, B=4 H=16      peers: torch SDPA with the cuDNN and the
  attention fwd d=128, S=16384, causal,    B=1 H=16             flash backends (sdpa_kernel)
      (B*S = 16k tokens in both, 16 heads; FLOPs 4*B*H*S^2*d, halved when causal)
  linear attention fwd B=4 T=4096 H=16 d=128, no decay    peer: fla 0.6 chunk_linear_attn with
      scale=1 and normalize=False (the same math; fla's defaults scale q and normalise),
      inputs in its [B, T, H, d] layout (the transposes are outside the timing)
Method: each implementation's result is first checked against a peer (relative
Frobenius error <= 1e-2, the bf16 bound); then timed with
triton.testing.do_bench (CUDA events, an L2 flush before each run,
return_mode='median', `--rep-ms` of repetitions, so slow first-generation
kernels get few iterations). TFLOP/s = FLOPs / median time; `speedup` holds
Tessera's speed relative to each peer (peer ms / Tessera ms). A failing implementation is recorded with its error and skipped, never dropped silently.
Also recorded: Tessera's compile + first call of the 4096^3 GEMM, cold (empty cache) and with a
warm disk cache (a fresh CompileCache over the same directory with the in-process compile memo and
op plans cleared: tracing, lowering, emission and the disk read run again; the driver's module load
stays memoised in-process).
Writes JSON (device, versions, command, figures) to --out, default
benchmarks/results/<date>-h200.json, and prints a table last.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata as md
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch
import triton
import triton.language as tlang

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

import tessera  # noqa: E402
import tessera.ops as ops  # noqa: E402
from tessera.compiler import clear_memo  # noqa: E402
from tessera.ops.configs import gemm_config  # noqa: E402
from tessera.runtime import CompileCache, device_info  # noqa: E402

TOLERANCE = 1e-2  # relative Frobenius error, the bf16 bound of tessera.reference.oracles
GEMM_SIZES = (2048, 4096, 8192)
ATTENTION = ({"B": 4, "H": 16, "S": 4096, "D": 128, "causal": False},
             {"B": 1, "H": 16, "S": 16384, "D": 128, "causal": True})
LINEAR = {"B": 4, "T": 4096, "H": 16, "D": 128}


# --- the Triton peer ---------------------------------------------------------------------------------

@triton.autotune(configs=[
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "GROUP": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 256, "BN": 128, "BK": 64, "GROUP": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "GROUP": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 128, "BK": 32, "GROUP": 8}, num_stages=4, num_warps=4),
], key=["M", "N", "K"])
@triton.jit
def _triton_matmul(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                   BM: tlang.constexpr, BN: tlang.constexpr, BK: tlang.constexpr, GROUP: tlang.constexpr):
    # Programs walk C in groups of GROUP row-blocks so that neighbours share A and B tiles in L2.
    pid = tlang.program_id(0)
    blocks_m, blocks_n = tlang.cdiv(M, BM), tlang.cdiv(N, BN)
    per_group = GROUP * blocks_n
    first_m = (pid // per_group) * GROUP
    rows = min(blocks_m - first_m, GROUP)
    pid_m = first_m + (pid % per_group) % rows
    pid_n = (pid % per_group) // rows
    rm = (pid_m * BM + tlang.arange(0, BM)) % M
    rn = (pid_n * BN + tlang.arange(0, BN)) % N
    rk = tlang.arange(0, BK)
    a_tile = a_ptr + rm[:, None] * s_am + rk[None, :] * s_ak          # BM x BK
    b_tile = b_ptr + rk[:, None] * s_bk + rn[None, :] * s_bn          # BK x BN
    acc = tlang.zeros((BM, BN), dtype=tlang.float32)
    for k0 in range(0, K, BK):
        a = tlang.load(a_tile, mask=rk[None, :] < K - k0, other=0.0)
        b = tlang.load(b_tile, mask=rk[:, None] < K - k0, other=0.0)
        acc = tlang.dot(a, b, acc)
        a_tile += BK * s_ak
        b_tile += BK * s_bk
    cm = pid_m * BM + tlang.arange(0, BM)
    cn = pid_n * BN + tlang.arange(0, BN)
    tlang.store(c_ptr + cm[:, None] * s_cm + cn[None, :] * s_cn, acc.to(tlang.bfloat16),
                mask=(cm[:, None] < M) & (cn[None, :] < N))


def triton_matmul(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    _triton_matmul[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                         c.stride(1))
    return c


# --- measuring -----------------------------------------------------------------------------------------

def rel_err(got, want) -> float:
    got, want = got.float(), want.float()
    return float((got - want).norm() / want.norm().clamp_min(1e-30))


def bench(fn, rep_ms: float) -> float:
    """Median milliseconds per call (CUDA events, L2 flushed between runs)."""
    return float(triton.testing.do_bench(fn, warmup=max(10, rep_ms // 4), rep=rep_ms, return_mode="median"))


def measure(impls: dict, flops: float | None, check, rep_ms: float) -> dict:
    """Check each implementation's output (check(name, out) -> rel error), then time it; errors are kept."""
    out = {}
    for name, fn in impls.items():
        entry = {}
        try:
            result = fn()
            torch.cuda.synchronize()
            entry["rel_err"] = check(name, result)
            entry["correct"] = entry["rel_err"] is None or entry["rel_err"] <= TOLERANCE
            if entry["correct"]:
                ms = bench(fn, rep_ms)
                entry["ms"] = round(ms, 4)
                if flops:
                    entry["tflops"] = round(flops / (ms * 1e-3) / 1e12, 2)
        except Exception as err:  # noqa: BLE001 - one failing implementation must not hide the others
            entry["error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:400]
            entry["trace_tail"] = traceback.format_exc().splitlines()[-3:]
        out[name] = entry
    return out


def ratios(impls: dict) -> dict:
    """Tessera's speed relative to each peer: peer ms / Tessera ms (= Tessera TFLOP/s / peer TFLOP/s)."""
    ours = impls.get("tessera", {}).get("ms")
    return {f"vs_{k}": round(v["ms"] / ours, 3) for k, v in impls.items()
            if k != "tessera" and ours and v.get("ms")}


# --- the work ----------------------------------------------------------------------------------------

def gemm_work(rep_ms: float) -> list:
    rows = []
    for n in GEMM_SIZES:
        g = torch.Generator(device="cuda").manual_seed(n)
        a = torch.randn(n, n, device="cuda", generator=g).bfloat16()
        b = torch.randn(n, n, device="cuda", generator=g).bfloat16()
        ref = torch.matmul(a, b)
        c_ours, c_triton = torch.empty_like(ref), torch.empty_like(ref)
        impls = {"tessera": lambda: ops.gemm(a, b, out=c_ours), "cublas": lambda: torch.matmul(a, b),
                 "triton": lambda: triton_matmul(a, b, c_triton)}
        check = lambda name, out: None if name == "cublas" else rel_err(out, ref)  # noqa: E731
        res = measure(impls, 2.0 * n ** 3, check, rep_ms)
        cfg = gemm_config(n, n, n)
        rows.append({"work": "gemm", "shape": {"M": n, "N": n, "K": n}, "dtype": "bf16", "impls": res,
                     "tessera_config": {"BM": cfg.BM, "BN": cfg.BN, "BK": cfg.BK, "stages": cfg.stages},
                     "speedup": ratios(res)})
    return rows


def attention_work(rep_ms: float) -> list:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    def backend(kind, q, k, v, causal):
        def run():
            with sdpa_kernel(kind):
                return sdpa(q, k, v, is_causal=causal)
        return run

    rows = []
    for case in ATTENTION:
        B, H, S, D, causal = case["B"], case["H"], case["S"], case["D"], case["causal"]
        g = torch.Generator(device="cuda").manual_seed(S)
        q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=g).bfloat16() for _ in range(3))
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            ref = sdpa(q, k, v, is_causal=causal)
        o, lse = torch.empty_like(q), torch.empty(B, H, S, device="cuda")
        impls = {"tessera": lambda: ops.attention(q, k, v, causal=causal, out=o, lse=lse)[0],
                 "sdpa_cudnn": backend(SDPBackend.CUDNN_ATTENTION, q, k, v, causal),
                 "sdpa_flash": backend(SDPBackend.FLASH_ATTENTION, q, k, v, causal)}
        check = lambda name, out: None if name == "sdpa_flash" else rel_err(out, ref)  # noqa: E731
        flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
        res = measure(impls, flops, check, rep_ms)
        rows.append({"work": "attention_fwd", "shape": case, "dtype": "bf16", "impls": res, "speedup": ratios(res)})
    return rows


def linear_work(rep_ms: float) -> list:
    B, T, H, D = LINEAR["B"], LINEAR["T"], LINEAR["H"], LINEAR["D"]
    g = torch.Generator(device="cuda").manual_seed(T)
    q, k, v = (torch.randn(B, H, T, D, device="cuda", generator=g).mul(D ** -0.5).bfloat16() for _ in range(3))
    o = torch.empty_like(v)
    impls = {"tessera": lambda: ops.linear_attention(q, k, v, out=o)}
    peer_note = None
    try:
        from fla.ops.linear_attn import chunk_linear_attn
        qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))  # fla's [B, T, H, D]

        def fla():
            return chunk_linear_attn(qt, kt, vt, scale=1.0, normalize=False)[0]
        impls["fla_chunk"] = fla
        ref = fla().transpose(1, 2)
        peer_note = f"fla-core {md.version('fla-core')}"
    except Exception as err:  # noqa: BLE001 - the peer is optional; say why it is missing
        ref, peer_note = None, f"fla unavailable: {type(err).__name__}: {err}"[:300]

    def check(name, out):
        if name == "fla_chunk":
            return None
        return None if ref is None else rel_err(out, ref)
    # FLOPs of the chunked form (64-step chunks): intra-chunk QK^T and AV, inter-chunk Q S and the state update.
    C = 64
    flops = 2.0 * B * H * (T * C * D * 2 + T * D * D * 2)
    res = measure(impls, flops, check, rep_ms)
    return [{"work": "linear_attention_fwd", "shape": LINEAR, "dtype": "bf16", "impls": res,
             "speedup": ratios(res), "peer": peer_note}]


def compile_work() -> dict:
    """Compile + first call of the 4096^3 GEMM: cold (empty cache), then warm (the same directory, memos cleared)."""
    import tessera.runtime.cache as cache_module
    n = 4096
    a = torch.randn(n, n, device="cuda").bfloat16()
    out = torch.empty(n, n, device="cuda").bfloat16()
    saved = cache_module._default
    times = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label in ("cold", "warm_disk"):
                cache_module._default = CompileCache(tmp)
                clear_memo()
                from tessera.ops import _common
                _common._plans.clear()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                ops.gemm(a, a, out=out)
                torch.cuda.synchronize()
                times[label + "_s"] = round(time.perf_counter() - t0, 3)
    finally:
        cache_module._default = saved
    return times


def versions() -> dict:
    out = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__,
           "tessera": tessera.__version__, "cuda_runtime_torch": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version()}
    for dist in ("cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc", "xdsl", "numpy", "ml_dtypes", "fla-core"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "absent"
    from tessera.target.nvidia.toolchain import toolchain_versions
    out["tessera_toolchain"] = dict(toolchain_versions())
    return out


def table(rows: list) -> str:
    lines = [f"{'work':<22}{'shape':<28}{'impl':<12}{'ms':>10}{'TFLOP/s':>10}{'rel err':>10}  note"]
    for row in rows:
        shape = ",".join(f"{k}={v}" for k, v in row["shape"].items() if k != "causal")
        shape += ",causal" if row["shape"].get("causal") else ""
        for name, e in row["impls"].items():
            err = "" if e.get("rel_err") is None else f"{e['rel_err']:.1e}"
            note = e.get("error", "") or ("" if e.get("correct", True) else "WRONG: not timed")
            lines.append(f"{row['work']:<22}{shape:<28}{name:<12}{e.get('ms', float('nan')):>10.3f}"
                         f"{e.get('tflops', float('nan')):>10.1f}{err:>10}  {note[:60]}")
        if row["speedup"]:
            lines.append(f"{'':<22}tessera speed relative to: "
                         + ", ".join(f"{k[3:]} {v:.2f}x" for k, v in row["speedup"].items()))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    date = datetime.date.today().isoformat()
    p.add_argument("--out", default=str(HERE / "results" / f"{date}-h200.json"))
    p.add_argument("--rep-ms", type=float, default=100.0, help="do_bench repetition time per measurement")
    p.add_argument("--only", default="gemm,attention,linear,compile")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_kernels: no CUDA device; nothing to measure", file=sys.stderr)
        return 2
    info = device_info()
    started = time.perf_counter()
    report = {"date": date, "command": " ".join([sys.executable, *sys.argv]),
              "device": {"name": info.name, "arch": info.arch, "sm_count": info.sm_count,
                         "total_memory": info.total_memory, "host": platform.node()},
              "versions": versions(), "method": "triton.testing.do_bench median (CUDA events, L2 flush), "
                                                f"rep={args.rep_ms} ms; correctness checked first, tol {TOLERANCE}",
              "cache_dir": os.environ.get("TESSERA_CACHE_DIR", "default"), "results": []}
    work = {"gemm": gemm_work, "attention": attention_work, "linear": linear_work}
    for name in args.only.split(","):
        t0 = time.perf_counter()
        if name == "compile":
            report["compile_first_call_gemm_4096"] = compile_work()
        elif name in work:
            report["results"] += work[name](args.rep_ms)
        else:
            p.error(f"unknown work {name!r}")
        report.setdefault("stage_seconds", {})[name] = round(time.perf_counter() - t0, 1)
        torch.cuda.empty_cache()
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    print(f"wrote {args.out} ({report['total_seconds']} s; stages {report.get('stage_seconds')})")
    if "compile_first_call_gemm_4096" in report:
        print(f"tessera compile + first call, 4096^3 GEMM: {report['compile_first_call_gemm_4096']}")
    print(table(report["results"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
