"""The compile report (issue 17, item 4): what ptxas made of a kernel, and the warnings tessera.compile gives.

Positive: the shipped sm_90a GEMM and flash attention report registers, HGMMA and
no warnings, and compile without a TesseraPerformanceWarning. Negative, each on
real machine code where it can be had: an f32 tile dot (FFMA: CUDA cores) warns
at compile time and in the report while the same dot in bf16 (HMMA) does not; the
shipped GEMM squeezed to 32 registers by its launch bounds spills into a stack
frame and warns; and a ptxas log line saying wgmma was serialised (C7513) is
quoted. Local bytes and the 255-register ceiling, which no shipped kernel
reaches, are checked on facts built by hand, and the occupancy arithmetic
against numbers worked out by hand in the comments. Skips where NVRTC or
cuobjdump cannot load.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import replace

import pytest

import tessera
from tessera import tl
from tessera.compiler import report as R
from tessera.compiler import testing
from tessera.compiler.occupancy import Occupancy, occupancy
from tessera.ir import diagnostics as D
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.target.nvidia.toolchain.sass import ResourceUsage

T = tessera.tensor
KIB = 1024
C7513 = ("ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
         "a wgmma pipeline crossing function boundary at a function call in the function 'gemm'")
C7515 = ("ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
         "non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline "
         "stage in the function 'gemm'")


@tessera.kernel
def tiny_dot(A, B, C, *, BM=16, BN=16, BK=16):
    acc = tl.zeros((BM, BN), tl.f32)                                        # frag acc: BM x BN, f32
    acc = tl.dot(tl.load(A, [0, 0], (BM, BK)), tl.load(B, [0, 0], (BK, BN)), acc)
    tl.store(C, [0, 0], acc)


@pytest.fixture(autouse=True)
def _toolchain():
    """Skip, saying why, where NVRTC or cuobjdump cannot be loaded (every other error still fails)."""
    from tessera.target.nvidia.toolchain.sass import find_tool
    try:
        find_tool("cuobjdump")
    except D.TesseraError as err:
        pytest.skip(f"cuobjdump is not available here: {err.message}")


def compiled(traced, arch, **kw):
    """(CompiledKernel, the TesseraPerformanceWarnings its compile raised)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ck = tessera.compile(traced, arch, **kw)
    return ck, [w.message for w in seen if issubclass(w.category, R.TesseraPerformanceWarning)]


def codes(findings) -> list[str]:
    return [f.code.name for f in findings]


def usage(registers=64, shared=0, local=0, stack=0) -> ResourceUsage:
    return ResourceUsage(registers=registers, shared_bytes=shared, local_bytes=local, stack_bytes=stack,
                         constant_bytes=0)


# -- occupancy: the calculator's arithmetic, by hand ----------------------------------------------------------------
@pytest.mark.parametrize("arch, regs, smem, threads, ctas, warps, limiter", [
    # 384 threads = 12 warps; 168 regs * 32 = 5376 per warp (a multiple of 256); a quarter holds 16384 // 5376 = 3
    # warps, the SM 12: 1 CTA. Shared: 200000 + 1024 reserved = 201024 -> 201088 (128 B units); 233472 // it = 1.
    ("sm_90a", 168, 200_000, 384, 1, 12, "registers and shared memory"),
    # 100 regs * 32 = 3200 -> 3328 (256 units); 16384 // 3328 = 4 warps a quarter, 16 an SM: 4 CTAs of 4 warps.
    # (Without the 256 granularity it would be 16384 // 3200 = 5 a quarter: 5 CTAs.)
    ("sm_80", 100, 0, 128, 4, 16, "registers"),
    # 1 warp of 200 regs = 6400 per warp: 2 a quarter, 8 an SM (65536 // 6400 = 10 would ignore the quarters).
    ("sm_90", 200, 0, 32, 8, 8, "registers"),
    # 48 KiB + 1 KiB = 50176 B a CTA: sm_80's 164 KiB = 167936 B hold 3, sm_90's 228 KiB = 233472 B hold 4;
    # registers (32 * 32 = 1024 a warp: 16 a quarter, 64 an SM) would allow 16 CTAs of 4 warps, threads 16.
    ("sm_80", 32, 48 * KIB, 128, 3, 12, "shared memory"),
    ("sm_90", 32, 48 * KIB, 128, 4, 16, "shared memory"),
    # 1 warp of 16 regs, no shared memory: 1024 B a CTA (the reservation) -> 164; threads 64; the cap is 32.
    ("sm_80", 16, 0, 32, 32, 32, "the CTA limit"),
    # 1024 threads of 32 regs: 32 warps; registers allow 64 warps, threads 64: 2 CTAs, every warp slot full.
    ("sm_90", 32, 0, 1024, 2, 64, "threads and registers"),
    # sm_86: 1536 threads (48 warps) and 100 KiB; 256 threads of 64 regs = 2048 a warp: 8 a quarter, 32 an SM:
    # 4 CTAs by registers, 6 by threads, 102400 // 1024 = 100 by shared memory, 16 by the cap.
    ("sm_86", 64, 0, 256, 4, 32, "registers"),
    # 1024 threads of 255 regs: 8192 a warp x 32 warps is 4x the register file: no CTA launches.
    ("sm_90", 255, 0, 1024, 0, 0, "launch"),
    # 227 KiB + the 1 KiB reservation fits 228 KiB once; 227 KiB + 1 B does not fit at all.
    ("sm_90", 32, 227 * KIB, 128, 1, 4, "shared memory"),
    ("sm_90", 32, 227 * KIB + 1, 128, 0, 0, "launch"),
])
def test_occupancy_matches_the_hand_arithmetic(arch, regs, smem, threads, ctas, warps, limiter):
    occ = occupancy(arch, regs, smem, threads)
    assert (occ.ctas_per_sm, occ.warps_per_sm, occ.limiter) == (ctas, warps, limiter)
    assert occ.max_warps_per_sm == (48 if arch == "sm_86" else 64)


def test_occupancy_of_an_unknown_arch_is_none_not_a_guess():
    assert occupancy("sm_100a", 64, 0, 128) is None and occupancy("sm_75", 64, 0, 128) is None
    assert Occupancy(2, 16, 64, "registers").fraction == 0.25


# -- shipped kernels: the positive case ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hopper_gemm():
    traced = G.gemm.trace(T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"), None, None,
                          tessera.scalar("f32"), None, BM=128, BN=256, BK=64, TRANS_B=True)
    return compiled(traced, "sm_90a", stages=4)


def test_sm90a_gemm_reports_hgmma_and_no_warnings(hopper_gemm):
    ck, warned = hopper_gemm
    rep = ck.report
    assert not warned and rep.warnings == ()
    assert rep.kernel == "gemm" and rep.arch == "sm_90a" and rep.threads == ck.block[0]
    assert 0 < rep.registers < 255 and rep.local_bytes == rep.stack_bytes == 0
    assert rep.hgmma > 0 and rep.hmma == 0 and rep.has_dot
    assert rep.dynamic_smem_bytes == ck.smem_bytes > 0
    assert rep.occupancy.ctas_per_sm >= 1 and rep.occupancy.warps_per_sm == rep.occupancy.ctas_per_sm * rep.threads // 32
    assert ck.report is rep  # built once: the disassembly is not repeated
    text = rep.text()
    assert text.splitlines()[0].startswith(f"gemm sm_90a: {rep.threads} threads, {rep.registers} registers/thread")
    assert f"{rep.hgmma} HGMMA" in text and "occupancy: " in text and "warnings: none" in text


def test_sm90a_flash_attention_reports_hgmma_and_no_warnings():
    q, kv = T(("B", "H", "S", 64), "bf16"), T(("B", "H_kv", "S_k", 64), "bf16")
    traced = FA.flash_attention.trace(q, kv, kv, q, T(("B", "H", "S"), "f32"), tessera.scalar("f32"), CAUSAL=True)
    ck, warned = compiled(traced, "sm_90a", stages=2)
    assert not warned and ck.report.warnings == ()
    assert ck.report.registers > 0 and ck.report.hgmma > 0 and ck.report.cuda_core_fp > 0  # the softmax


# -- a dot off the tensor cores -------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_an_f32_dot_on_cuda_cores_warns_at_compile_and_in_the_report(arch):
    ck, warned = compiled(tiny_dot.trace(T((16, 16), "f32"), T((16, 16), "f32"), T((16, 16), "f32")), arch)
    assert [w.code for w in warned] == [D.COMPILE_PERF_DOT_ON_CUDA_CORES], warned
    assert "tiny_dot" in str(warned[0]) and "hint: " in str(warned[0])
    rep = ck.report
    assert rep.hmma == rep.hgmma == 0 and rep.ffma > 0
    assert codes(rep.warnings) == ["COMPILE_PERF_DOT_ON_CUDA_CORES"]
    assert "warning COMPILE_PERF_DOT_ON_CUDA_CORES" in rep.text()


def test_the_same_dot_in_bf16_is_on_the_tensor_cores_and_quiet():
    ck, warned = compiled(tiny_dot.trace(T((16, 16), "bf16"), T((16, 16), "bf16"), T((16, 16), "f32")), "sm_80")
    assert not warned and ck.report.warnings == () and ck.report.hmma > 0


def test_without_ptx_the_compile_check_reads_the_sass():
    ck, _ = compiled(tiny_dot.trace(T((16, 16), "f32"), T((16, 16), "f32"), T((16, 16), "f32")), "sm_80")
    bare = ck.with_artifact(replace(ck.artifact, ptx=None))
    assert codes(R.compile_findings(bare)) == ["COMPILE_PERF_DOT_ON_CUDA_CORES"]
    assert "SASS has no HMMA" in R.compile_findings(bare)[0].message


# -- spills, the stack, the register ceiling -----------------------------------------------------------------------
def test_a_gemm_squeezed_to_32_registers_spills_into_its_stack_and_warns():
    traced = G.gemm.trace(T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "bf16"), None, None,
                          tessera.scalar("f32"), None, BM=64, BN=64)
    # __launch_bounds__(128, 16): 16 CTAs of 128 threads must fit 65536 registers, so 32 a thread.
    squeeze = lambda src: re.sub(r"__launch_bounds__\((\d+), 1\)", r"__launch_bounds__(\1, 16)", src)  # noqa: E731
    with testing.inject_faults(source=squeeze):
        ck, warned = compiled(traced, "sm_80")
    rep = ck.report
    assert rep.registers <= 32 and rep.stack_bytes > 0  # ptxas spills into the stack frame (LOCAL stays 0)
    assert D.COMPILE_PERF_STACK in [w.code for w in warned], warned
    assert "COMPILE_PERF_STACK" in codes(rep.warnings) and f"stack {rep.stack_bytes} B" in rep.text()
    plain, quiet = compiled(traced, "sm_80")
    assert not quiet and plain.report.stack_bytes == 0


def test_local_memory_and_the_register_ceiling_from_the_resource_usage():
    rep = R.build("k", "sm_90", 128, 0, usage(registers=255, local=64), {"HMMA": 8}, "", has_dot=True)
    assert codes(rep.warnings) == ["COMPILE_PERF_SPILL", "COMPILE_PERF_REGISTER_LIMIT"]
    assert "64 B of local memory" in rep.warnings[0].message
    assert R.build("k", "sm_90", 128, 0, usage(registers=254), {"HMMA": 8}, "", has_dot=True).warnings == ()
    no_dot = R.build("k", "sm_90", 128, 0, usage(), {"FFMA": 8}, "", has_dot=False)
    assert no_dot.warnings == () and no_dot.cuda_core_fp == 8


# -- ptxas's wgmma serialisation --------------------------------------------------------------------------------------
def test_c7513_in_the_ptxas_log_is_quoted(hopper_gemm):
    ck, _ = hopper_gemm
    logged = ck.with_artifact(replace(ck.artifact, log=f"{ck.artifact.log}\n{C7513}\n{C7515}\n{C7513}\n"))
    found = [w for w in logged.report.warnings if w.code is D.COMPILE_PERF_WGMMA_SERIALIZED]
    assert [C7513.strip() in w.message for w in found] == [True, False]  # each distinct line once, quoted
    assert C7515.strip() in found[1].message
    assert "COMPILE_PERF_WGMMA_SERIALIZED" in logged.report.text()
    assert R.serialized_wgmma("gemm", "ptxas info : Compile time = 12 ms\nwarning #177-D: unused") == []


# -- the driver keeps compiling when the check cannot run -----------------------------------------------------------
def test_a_damaged_cubin_still_compiles_and_fails_only_at_load():
    traced = tiny_dot.trace(T((16, 16), "f32"), T((16, 16), "f32"), T((16, 16), "f32"))
    with testing.inject_faults(artifact=lambda art: replace(art, cubin=b"not a cubin")):
        ck, warned = compiled(traced, "sm_80")
    assert not warned and ck.cubin == b"not a cubin"


# -- the CLI ----------------------------------------------------------------------------------------------------------
def test_demo_report_prints_the_report_and_rejects_unknown_flags(capsys):
    from tessera import cli, demo
    traced = G.gemm.trace(T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "bf16"), None, None,
                          tessera.scalar("f32"), None, BM=64, BN=64)
    assert demo.compile_report("gemm", traced, report=True)
    out = capsys.readouterr().out
    assert out.count("occupancy: ") == 2 and out.count("  instructions: ") == 2 and "    gemm sm_90: " in out
    assert cli.main(["demo", "--bogus"]) == 1
    assert "OPT_COMMAND_LINE" in capsys.readouterr().err
    cli.main(["--help"])
    assert "tessera demo [--report]" in capsys.readouterr().out


def test_a_performance_warning_is_rebuilt_from_its_message():
    """pytest-xdist (and pickling) rebuild a warning from its args: the message text must do."""
    import pickle

    from tessera.compiler.report import Finding, TesseraPerformanceWarning
    from tessera.ir import diagnostics as D

    w = TesseraPerformanceWarning(Finding(D.COMPILE_PERF_REGISTER_LIMIT, "k uses 255 registers"))
    again = type(w)(*w.args)
    assert str(again) == str(w) and again.code is None and w.code is D.COMPILE_PERF_REGISTER_LIMIT
    assert str(pickle.loads(pickle.dumps(w))) == str(w)
