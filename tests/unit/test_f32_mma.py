"""f32-input GEMM on CUDA cores: an all-f32 tile.mma becomes fp32 fma loops (nv.blocked_mma), never tf32.

tile-to-fragments leaves an all-f32 tile.mma tile-level (bf16/f16 still become
mma.sync fragments); lower-tile-to-nv stages A and B through the scratch region
and runs nv.blocked_mma on the loop-carried accumulator. The shipped GEMM, traced
with f32 tensors, must match the float64 oracle to f32 accuracy (1e-5 relative to
the output's scale, where tf32 would be ~1e-3) on the nv emulator and on the
emitted CUDA C++ run by g++ (tessera.runtime.host_emulator). Controls: tf32-rounded
inputs and a lowering that drops the incoming accumulator must both fail the check.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_tile_to_fragments import gemm_ir
from xdsl.rewriter import InsertPoint, Rewriter

import tessera
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.runtime.host_emulator import run_on_host
from tessera.target.nvidia.ir import ops as nv
from tessera.ir.dialect import make_context
from tessera.target.nvidia.emulate.nv_ir import run_kernel
from tessera.ir.parse import parse_module
from tessera.kernels import gemm as G
from tessera.passes import parse_pipeline

T = tessera.tensor
TOL = 1e-5
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the host emulator needs g++ (C++20)")


def traced_gemm(dtype: str, epilogue: bool = True, **meta):
    """The shipped GEMM traced for `dtype` inputs; with `epilogue`, C is read (beta), bias, gelu and residual."""
    io = dtype if dtype == "f32" else "f32"
    specs = (T(("M", "K"), dtype), T(("K", "N"), dtype), T(("M", "N"), io),
             T((1, "N"), "f32") if epilogue else None, T(("M", "N"), io) if epilogue else None,
             tessera.scalar("f32"), tessera.scalar("f32") if epilogue else None)
    return G.gemm.trace(*specs, ACTIVATION="gelu" if epilogue else "none", **meta)


def lower(module, arch: str, stages: int = 1):
    module = module.clone()
    parse_pipeline(f"tessera-lower-to-nv{{arch={arch} stages={stages}}}").apply(make_context(), module)
    return module


def gemm_case(M, N, K, seed):
    rng = np.random.default_rng(seed)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return f(M, K), f(K, N), f(M, N), f(1, N), f(M, N)


def within_f32(got, want) -> bool:
    """Max error relative to the output's scale: f32 accumulation gives ~1e-7, tf32 inputs ~1e-3."""
    return bool(np.isfinite(got).all() and np.abs(got - want).max() <= TOL * np.abs(want).max())


def run_gemm(runner, kernel, inputs, grid, alpha=0.5, beta=0.25):
    A, B, C, bias, R = inputs
    out = C.copy()
    runner(kernel, [A, B, out, bias, R, alpha, beta], grid)
    return out


def oracle(inputs, alpha=0.5, beta=0.25):
    A, B, C, bias, R = inputs
    return G.reference_gemm(A, B, C, bias, R, alpha, beta, activation="gelu")


def host(module):
    kernel = emit_cuda(module)
    return lambda _k, args, grid: run_on_host(kernel, args, grid)


# --- which mma takes which road ---------------------------------------------------------

@pytest.mark.parametrize("dtype, cuda_cores", [("f32", True), ("bf16", False), ("f16", False)])
def test_only_all_f32_mma_runs_on_cuda_cores(dtype, cuda_cores):
    tk = traced_gemm(dtype, epilogue=False, BM=64, BN=64, BK=32)
    fragments = tk.module.clone()
    parse_pipeline("tile-to-fragments{arch=sm_80}").apply(make_context(), fragments)
    names = {op.name for op in fragments.walk()}
    assert ("tile.mma" in names) is cuda_cores and ("tile.fragment_mma" in names) is not cuda_cores
    for arch in ("sm_80", "sm_90") + (("sm_90a",) if cuda_cores else ()):  # f32 needs no wgmma lowering
        names = {op.name for op in lower(tk.module, arch).walk()}
        assert ("nv.blocked_mma" in names) is cuda_cores and ("nv.mma_sync" in names) is not cuda_cores
        assert not [n for n in names if n.startswith("tile.")]


def test_tile_to_fragments_leaves_f32_ir_byte_identical():
    text = gemm_ir(elem="f32", init="c")
    module = parse_module(text, "gemm.mlir")
    before = str(module)
    parse_pipeline("tile-to-fragments{arch=sm_90a}").apply(make_context(), module)
    assert str(module) == before


# --- numerics: the shipped GEMM against the float64 oracle ------------------------------

CASES = [((100, 37, 53), dict(BM=32, BN=32, BK=16)), ((257, 129, 65), dict(BM=64, BN=64, BK=16))]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("shape, tiles", CASES, ids=["100x37x53", "257x129x65"])
def test_shipped_gemm_on_the_nv_emulator(arch, shape, tiles):
    M, N, K = shape
    inputs = gemm_case(M, N, K, seed=M)
    module = lower(traced_gemm("f32", **tiles).module, arch, stages=2)
    got = run_gemm(run_kernel, module, inputs, G.grid(M, N, **tiles))
    want = oracle(inputs)
    assert within_f32(got, want), np.abs(got - want).max() / np.abs(want).max()


@needs_gxx
@pytest.mark.parametrize("arch, shape, tiles", [("sm_80", *CASES[0]), ("sm_90", *CASES[1])],
                         ids=["sm_80-100x37x53", "sm_90-257x129x65"])
def test_shipped_gemm_emitted_cuda_on_the_host(arch, shape, tiles):
    M, N, K = shape
    inputs = gemm_case(M, N, K, seed=M + 1)
    module = lower(traced_gemm("f32", **tiles).module, arch)
    got = run_gemm(host(module), None, inputs, G.grid(M, N, **tiles))
    want = oracle(inputs)
    assert within_f32(got, want), np.abs(got - want).max() / np.abs(want).max()


def test_transposed_operands_go_through_two_relayouts():
    """TRANS_A / TRANS_B: each operand is transposed through the scratch region, then staged again for the mma."""
    M, N, K = 70, 45, 40
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((K, M)).astype(np.float32), rng.standard_normal((N, K)).astype(np.float32)
    tk = G.gemm.trace(T(("K", "M"), "f32"), T(("N", "K"), "f32"), T(("M", "N"), "f32"), None, None,
                      tessera.scalar("f32"), None, TRANS_A=True, TRANS_B=True, BM=32, BN=32, BK=16)
    C = np.full((M, N), np.nan, np.float32)  # beta=None: C is never read
    run_kernel(lower(tk.module, "sm_90"), [A, B, C, 2.0], G.grid(M, N, BM=32, BN=32))
    assert within_f32(C, 2.0 * (A.T.astype(np.float64) @ B.T.astype(np.float64)))


def test_tf32_inputs_would_fail_the_check():
    """The bound can tell f32 from tf32: the exact product of tf32-rounded inputs is far outside it."""
    A, B, C, bias, R = inputs = gemm_case(100, 37, 53, seed=3)
    tf32 = lambda x: (x.view(np.uint32) + 0x1000 & 0xFFFFE000).view(np.float32)  # noqa: E731 - round to 10 bits
    assert not within_f32(oracle((tf32(A), tf32(B), C, bias, R)), oracle(inputs))


# --- the accumulator is threaded: C += A @ B from a non-zero C ----------------------------

def drop_incoming_accumulator(module):
    """The bug of DESIGN lesson 1: every nv.blocked_mma starts from zero instead of its acc operand."""
    for op in [op for op in module.walk() if isinstance(op, nv.BlockedMmaOp)]:
        zero = nv.FillOp(0.0, op.acc.type)
        Rewriter.insert_op(zero, InsertPoint.before(op))
        op.operands[2] = zero.result
    return module


@pytest.mark.parametrize("broken", [False, True], ids=["threaded", "control-zero-acc"])
def test_accumulator_starts_from_c_and_crosses_iterations(broken):
    """C += A @ B with the accumulator loaded from C and K = 3.5 tiles; dropping the incoming acc must fail."""
    module = lower(parse_module(gemm_ir(bm=64, bn=32, bk=16, elem="f32", init="c"), "gemm.mlir"), "sm_80")
    if broken:
        drop_incoming_accumulator(module)
    M, N, K = 70, 40, 56
    rng = np.random.default_rng(11)
    A, B = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    C0 = rng.standard_normal((M, N)).astype(np.float32) * 4
    want = C0 + A.astype(np.float64) @ B.astype(np.float64)
    grid = (-(-M // 64), -(-N // 32))
    results = []
    emulated = C0.copy()
    run_kernel(module, [A, B, emulated, K], grid)
    results.append(emulated)
    if shutil.which("g++"):
        on_host = C0.copy()
        run_on_host(emit_cuda(module), [A, B, on_host, K], grid)
        results.append(on_host)
    for got in results:
        assert within_f32(got, want) is not broken


# --- the op on its own: f64, a ragged tile, odd K ---------------------------------------------

F64_KERNEL = """
func.func @mma64(%A: memref<?x?xf64>, %B: memref<?x?xf64>, %C: memref<?x?xf64>) attributes {nv.num_threads = 64 : i64, nv.smem_bytes = 768 : i64, nv.arch = "sm_80"} {
  %c0 = arith.constant 0 : index
  %a = nv.load_global %A[%c0, %c0] {shape = array<i64: 10, 3>, threads = 64 : i64, pad = 0.0 : f64} : memref<?x?xf64> -> vector<1xf64>
  %b = nv.load_global %B[%c0, %c0] {shape = array<i64: 3, 12>, threads = 64 : i64, pad = 0.0 : f64} : memref<?x?xf64> -> vector<1xf64>
  %c = nv.load_global %C[%c0, %c0] {shape = array<i64: 10, 12>, threads = 64 : i64, pad = 0.0 : f64} : memref<?x?xf64> -> vector<2xf64>
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<10x3xf64, 4>
  %sb = nv.alloc_shared {offset = 384 : i64} : !nv.smem<3x12xf64, 14>
  nv.store_shared %a, %sa {shape = array<i64: 10, 3>, threads = 64 : i64} : vector<1xf64>, !nv.smem<10x3xf64, 4>
  nv.store_shared %b, %sb {shape = array<i64: 3, 12>, threads = 64 : i64} : vector<1xf64>, !nv.smem<3x12xf64, 14>
  nv.barrier
  %d = nv.blocked_mma %sa, %sb, %c {shape = array<i64: 10, 12>, threads = 64 : i64} : !nv.smem<10x3xf64, 4>, !nv.smem<3x12xf64, 14>, vector<2xf64> -> vector<2xf64>
  nv.store_global %d, %C[%c0, %c0] {shape = array<i64: 10, 12>, threads = 64 : i64} : vector<2xf64>, memref<?x?xf64>
  func.return
}
"""


def test_f64_ragged_blocked_mma_on_both_emulators():
    """120 results over 64 threads (the last 8 slots unused), K = 3; the barrier is what makes it race-free."""
    module = parse_module(F64_KERNEL, "mma64.mlir")
    rng = np.random.default_rng(5)
    A, B, C0 = rng.standard_normal((10, 3)), rng.standard_normal((3, 12)), rng.standard_normal((10, 12))
    want = C0 + A @ B
    got = C0.copy()
    run_kernel(module, [A, B, got], (1,))
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
    if shutil.which("g++"):
        got = C0.copy()
        run_on_host(emit_cuda(module), [A, B, got], (1,))
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
    no_barrier = parse_module(F64_KERNEL.replace("  nv.barrier\n", ""), "mma64.mlir")
    from tessera.target.nvidia.emulate.nv_ir import NvRuntimeError

    with pytest.raises(NvRuntimeError, match="race"):
        run_kernel(no_barrier, [A, B, C0.copy()], (1,))
