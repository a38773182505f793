"""`tessera demo`: the main job. Every shipped kernel, end to end, checked.

For GEMM (bf16, fused bias + gelu + beta), flash attention (bf16, causal,
grouped-query) and linear attention (bf16, with decay):

1. trace the tile program and compile it through `tessera-lower-to-nv` with
   NVRTC for sm_80 and sm_90, reading the SASS (HMMA count, registers,
   local memory; no kernel may spill); the nn.Linear-layout GEMM also for
   sm_90a (warp-specialised wgmma + TMA, 2-CTA clusters, TMA store epilogue:
   HGMMA, UTMALDG and UTMASTG in its SASS), run on an H100/H200 when there is
   one and otherwise on the g++ host emulator of its emitted CUDA;
2. run it through `tessera.ops` on the GPU when there is one, else on the CPU
   reference interpreter (an explicit lane, never a silent fallback), with
   fresh random inputs;
3. compare with the float64 oracle and print the lane and artifact that ran.

Exit status 0 only if every check passed. `tessera demo --report` also prints
each compiled kernel's compile report (`CompiledKernel.report`: registers,
shared memory, occupancy, tensor-core instruction mix, performance warnings).
"""

from __future__ import annotations

import sys
import textwrap
import time

import ml_dtypes
import numpy as np

import tessera
from tessera.target.nvidia.toolchain.sass import count_instructions, disassemble, resource_usage
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.kernels import linear_attention as LA
from tessera.reference.oracles import attention_ref, error_bound, gemm_ref, linear_attention_ref, rel_error

ARCHES = ("sm_80", "sm_90")
BF16 = ml_dtypes.bfloat16
T = tessera.tensor


def _traced():
    """The three kernels as the demo specialises them (bf16 in, shapes symbolic)."""
    gemm = G.gemm.trace(T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "bf16"),
                        T((1, "N"), "f32"), None, tessera.scalar("f32"), tessera.scalar("f32"),
                        BM=64, BN=64, ACTIVATION="gelu")
    q, kv = T(("B", "H", "S", 64), "bf16"), T(("B", "H_kv", "S_k", 64), "bf16")
    attn = FA.flash_attention.trace(q, kv, kv, q, T(("B", "H", "S"), "f32"), tessera.scalar("f32"), CAUSAL=True)
    x = T(("B", "H", "T", 64), "bf16")
    lin = LA.linear_attention.trace(x, x, x, x, T((1, "H"), "f32"), CHUNK=32)
    return {"gemm": gemm, "flash_attention": attn, "linear_attention": lin}


def _print_report(ck, report: bool) -> None:
    if report:
        print(textwrap.indent(ck.report.text(), "    "))


def compile_report(name: str, traced, report: bool = False) -> bool:
    ok = True
    for arch in ARCHES:
        t0 = time.perf_counter()
        ck = tessera.compile(traced, arch=arch)
        sass = disassemble(ck.cubin)
        usage = next(iter(resource_usage(ck.cubin).values()))
        hmma, local = count_instructions(sass, "HMMA"), usage.local_bytes + usage.stack_bytes
        good = hmma > 0 and local == 0
        ok &= good
        print(f"  compile {name:17s} {arch}: {len(ck.source.splitlines()):5d} lines CUDA C++, "
              f"{len(ck.cubin):7d} B cubin, {hmma:4d} HMMA, {usage.registers:3d} regs, local {local} B, "
              f"{time.perf_counter() - t0:5.2f} s  [{'ok' if good else 'FAIL'}]  {ck.artifact_hash[:12]}")
        _print_report(ck, report)
    return ok


def hopper_report(rng: np.random.Generator, report: bool = False) -> bool:
    """The sm_90a GEMM (C = gelu(A @ W^T + bias), W as [N, K]): its machine code, then its numerics."""
    from tessera.runtime.host_emulator import run_on_host
    from tessera.compiler.driver import device_arch
    from tessera.ir.diagnostics import TesseraError
    from tessera.runtime import has_gpu

    traced = G.gemm.trace(T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"), T((1, "N"), "f32"),
                          None, tessera.scalar("f32"), None, BM=128, BN=256, BK=64, TRANS_B=True, ACTIVATION="gelu")
    t0 = time.perf_counter()
    ck = tessera.compile(traced, arch="sm_90a", stages=4, cluster=2)
    sass = disassemble(ck.cubin)
    usage = next(iter(resource_usage(ck.cubin).values()))
    n = {op: count_instructions(sass, op) for op in ("HGMMA", "UTMALDG", "UTMASTG")}
    local = usage.local_bytes + usage.stack_bytes
    good = all(n.values()) and local == 0
    print(f"  compile {'gemm (nn.Linear)':17s} sm_90a: {len(ck.source.splitlines()):5d} lines CUDA C++, "
          f"{len(ck.cubin):7d} B cubin, {n['HGMMA']:2d} HGMMA {n['UTMALDG']} UTMALDG {n['UTMASTG']} UTMASTG, "
          f"local {local} B, {time.perf_counter() - t0:5.2f} s  [{'ok' if good else 'FAIL'}]  {ck.artifact_hash[:12]}")
    _print_report(ck, report)
    M, N, K = 300, 520, 200  # ragged in every dimension, 9 tiles over 2-CTA clusters
    a, w = rng.standard_normal((M, K)).astype(BF16), rng.standard_normal((N, K)).astype(BF16)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    want = gemm_ref(a, w.T, None, bias=bias, activation="gelu")
    sm90 = has_gpu() and device_arch() == "sm_90"
    if sm90:
        import torch

        out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
        rec = ck.launch(G.grid(M, N, BM=128, BN=256), [_to_lane(a, "cuda"), _to_lane(w, "cuda"), out,
                                                       _to_lane(bias, "cuda"), 1.0], sync=True)
        got, where = _host(out), f"lane={rec.lane}"
    else:
        out = np.full((M, N), np.nan, BF16)
        try:
            run_on_host(ck.emitted, [a, w, out, bias, 1.0], G.grid(M, N, BM=128, BN=256))
        except TesseraError as err:  # no g++: say so, do not pretend
            print(f"  run     {'gemm sm_90a':17s} host emulator unavailable: {err.message.splitlines()[0]}  [skipped]")
            return good
        got, where = out, "host emulator (g++, the emitted CUDA)"
    err, bound = rel_error(np.asarray(got, np.float64), want), error_bound("bf16")
    ran = bool(np.isfinite(np.asarray(got, np.float64)).all()) and err <= bound
    print(f"  run     {'gemm sm_90a 300x520':17s} {where} rel err {err:.2e} (bound {bound:.0e})  "
          f"[{'ok' if ran else 'FAIL'}]  artifact {ck.artifact_hash[:12]}")
    return good and ran


def _check(label: str, got, want, dtype: str) -> bool:
    err, bound = rel_error(np.asarray(got, np.float64), want), error_bound(dtype)
    rec = tessera.ops.last_run()
    good = bool(np.isfinite(np.asarray(got, np.float64)).all()) and err <= bound
    print(f"  run     {label:17s} lane={rec.lane:9s} rel err {err:.2e} (bound {bound:.0e})  "
          f"[{'ok' if good else 'FAIL'}]  artifact {rec.artifact_hash[:12]}")
    return good


def _to_lane(x: np.ndarray, lane: str):
    if lane != "cuda":
        return x
    import torch  # the GPU demo uses torch tensors in place (zero copy)

    t = torch.from_numpy(x.astype(np.float32)).cuda()
    return t.to(torch.bfloat16) if x.dtype == BF16 else t


def _host(x) -> np.ndarray:
    return x.float().cpu().numpy() if hasattr(x, "cpu") else np.asarray(x, np.float64)


def run_checks(lane: str, rng: np.random.Generator) -> bool:
    ok = True
    M, N, K = 257, 129, 65
    a, b, c = (rng.standard_normal(s).astype(BF16) for s in ((M, K), (K, N), (M, N)))
    bias = rng.standard_normal((1, N)).astype(np.float32)
    out = tessera.ops.gemm(_to_lane(a, lane), _to_lane(b, lane), _to_lane(c, lane), alpha=0.5, beta=0.25,
                           bias=_to_lane(bias, lane), activation="gelu", lane=lane)
    ok &= _check("gemm 257x129x65", _host(out),
                 gemm_ref(a, b, c, alpha=0.5, beta=0.25, bias=bias, activation="gelu"), "bf16")

    q = rng.standard_normal((1, 8, 200, 64)).astype(BF16)
    k, v = (rng.standard_normal((1, 2, 200, 64)).astype(BF16) for _ in range(2))
    o, lse = tessera.ops.attention(_to_lane(q, lane), _to_lane(k, lane), _to_lane(v, lane), causal=True, lane=lane)
    want_o, _ = attention_ref(q, k, v, causal=True)
    ok &= _check("attention S=200", _host(o), want_o, "bf16")

    q, k, v = (rng.standard_normal((1, 2, 100, 64)).astype(BF16) for _ in range(3))
    g = -rng.uniform(0.05, 0.5, size=2).astype(np.float32)
    o = tessera.ops.linear_attention(_to_lane(q, lane), _to_lane(k, lane), _to_lane(v, lane), _to_lane(g, lane),
                                     lane=lane)
    ok &= _check("linear attn T=100", _host(o), linear_attention_ref(q, k, v, g), "bf16")
    return ok


USAGE = "usage: tessera demo [--report]"


def main(argv: list[str] | None = None) -> int:
    """`tessera demo [--report]`: exit status 0 only if every check passed (1 for a bad argument too)."""
    from tessera.ir import diagnostics as D
    from tessera.runtime import has_gpu

    args = list(argv or [])
    unknown = [a for a in args if a != "--report"]
    if unknown:
        err = D.TesseraError(D.OPT_COMMAND_LINE, f"tessera demo takes no argument {unknown[0]!r}",
                             hint=USAGE).with_location("<command-line>:1:1")
        print(D.format_diagnostic(err), file=sys.stderr)
        return 1
    report = "--report" in args

    lane = "cuda" if has_gpu() else "reference"
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"tessera demo: lane={lane} ({'GPU found' if lane == 'cuda' else 'no GPU: the CPU reference interpreter'}),"
          f" seed {seed}")
    ok = True
    rng = np.random.default_rng(seed)
    for name, traced in _traced().items():
        ok &= compile_report(name, traced, report)
    ok &= hopper_report(rng, report)
    ok &= run_checks(lane, rng)
    print("tessera demo:", "all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1
