"""The emitted CUDA C++ itself, run on the CPU (tessera.runtime.host_emulator: g++, one std::thread per GPU thread).

This checks the text the GPU will get: index arithmetic, guards, fused slot loops,
shared-memory offsets, the ABI. mma.sync is emulated warp-collectively through the
lane-map tables and cp.async synchronously (its asynchrony is the nv emulator's job).
Results must match numpy, or the Tile IR reference interpreter for the shipped kernels.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tessera
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.runtime.host_emulator import run_on_host
from tessera.ir.dialect import make_context
from tessera.ir.parse import parse_module
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.kernels import linear_attention as LA
from tessera.passes import parse_pipeline
from tessera.reference import run

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the host emulator needs g++ (C++20)")

INPUTS = Path(__file__).resolve().parents[1] / "lit" / "nv" / "Inputs"
BF16 = ml_dtypes.bfloat16
T = tessera.tensor


def kernel_of(path: str, pipeline: str):
    module = parse_module((INPUTS / path).read_text(), path)
    parse_pipeline(pipeline).apply(make_context(), module)
    return emit_cuda(module)


@pytest.mark.parametrize("pitch", [None, 72])
def test_pipelined_gemm_accumulates_into_c(pitch):
    """Ragged M, N, K; with rows 72 elements apart the 16-byte cp.async path runs, partial chunks zero-filled."""
    k = kernel_of("gemm_tile.mlir", "tessera-lower-to-nv{arch=sm_80 stages=3}")
    rng = np.random.default_rng(0)
    M, N, K = 150, 136, 70
    A = rng.standard_normal((M, pitch or K)).astype(BF16)[:, :K]  # a view: row stride `pitch`
    B = rng.standard_normal((K, N)).astype(BF16)
    C0 = rng.standard_normal((M, N)).astype(np.float32)
    C = C0.copy()
    run_on_host(k, [A, B, C, K], (2, 2))
    np.testing.assert_allclose(C, C0 + A.astype(np.float64) @ B.astype(np.float64), rtol=1e-5, atol=1e-4)


def test_fragment_ir_epilogue_with_unaligned_rows():
    """K = 50 makes A's rows 100 bytes apart: the element-wise copy path runs instead of cp.async chunks."""
    k = kernel_of("gemm_epilogue.mlir", "lower-tile-to-nv{arch=sm_90}")
    rng = np.random.default_rng(1)
    M, N, K = 140, 200, 50
    A, B = rng.standard_normal((M, K)).astype(BF16), rng.standard_normal((K, N)).astype(BF16)
    C = rng.standard_normal((M, N)).astype(np.float32)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    D_ = np.full((M, N), np.nan, np.float32)
    run_on_host(k, [A, B, C, bias, D_, K, 0.5], (2, 2))
    ref = np.maximum((C + A.astype(np.float64) @ B.astype(np.float64)) * 0.5 + bias, 0)
    np.testing.assert_allclose(D_, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("pitch", [18, 20])
def test_copy_with_padding_value(pitch):
    """Past the edge reads 3.0: whole chunks by cp.async, the partial one (2 of 4 floats) and beyond by stores."""
    k = kernel_of("copy_pad.mlir", "lower-tile-to-nv{arch=sm_80}")
    M, N = 100, 18
    X = np.arange(M * pitch, dtype=np.float32).reshape(M, pitch)[:, :N]
    Y = np.full((128, 32), np.nan, np.float32)
    run_on_host(k, [X, Y], (2,))
    want = np.full((128, 32), 3.0, np.float32)
    want[:M, :N] = X
    np.testing.assert_array_equal(Y, want)


def test_logical_ops():
    k = kernel_of("logical_ops.mlir", "lower-tile-to-nv{arch=sm_80}")
    rng = np.random.default_rng(3)
    M, N, grid = 100, 20, 2
    X = rng.standard_normal((M, N)).astype(BF16)
    out = [np.full((32, 64 * grid), np.nan, np.float32), np.full((M, 1), np.nan, np.float32),
           np.full((grid, 32), np.nan, np.float32), np.full((M, N), -1, np.int32)]
    run_on_host(k, [X, *out, 0.25], (grid,))
    Tt, R, S, I = out
    Xp = np.full((64 * grid, 32), -np.inf, np.float32)
    Xp[:M, :N] = X.astype(np.float32)
    r = Xp.max(1, keepdims=True)
    with np.errstate(invalid="ignore"):
        x = np.exp(Xp - r)
    col, row = np.meshgrid(np.arange(32), np.arange(64 * grid) % 64)
    mm = np.where(col <= row, x, 0) * np.float32(0.25)
    blocks = [mm[64 * g:64 * g + 64] for g in range(grid)]
    np.testing.assert_array_equal(R[:, 0], r[:M, 0])
    np.testing.assert_allclose(Tt, np.concatenate([b.T for b in blocks], 1), rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(S, np.sqrt(np.stack([b.sum(0) for b in blocks]).astype(BF16).astype(np.float32)),
                               rtol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(I, np.maximum((col + row) // 7, row)[:M, :N])


def matches_reference(tk, args, grid, outputs):
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run(tk.module, grid, ref)
    module = tk.module.clone()
    parse_pipeline("tessera-lower-to-nv{arch=sm_80 stages=2}").apply(make_context(), module)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_on_host(emit_cuda(module), got, grid)
    for i in outputs:
        rtol = 2.0 ** -7 if ref[i].dtype == BF16 else 1e-5  # one bf16 ulp: f32 summation order may differ
        np.testing.assert_allclose(got[i].astype(np.float64), ref[i].astype(np.float64), rtol=rtol, atol=1e-5,
                                   equal_nan=True, err_msg=f"output #{i}")


def test_shipped_gemm_full_epilogue():
    rng = np.random.default_rng(4)
    M, N, K = 150, 70, 50
    specs = (T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "bf16"), T((1, "N"), "f32"),
             T(("M", "N"), "bf16"), tessera.scalar("f32"), tessera.scalar("f32"))
    tk = G.gemm.trace(*specs, ACTIVATION="gelu")
    args = [rng.standard_normal(s).astype(t) for s, t in (((M, K), BF16), ((K, N), BF16), ((M, N), BF16),
                                                          ((1, N), np.float32), ((M, N), BF16))] + [0.5, 0.25]
    matches_reference(tk, args, G.grid(M, N), [2])


def test_shipped_causal_flash_attention():
    rng = np.random.default_rng(6)
    B, H, S, D = 1, 2, 70, 64
    q, kv = T(("B", "H", "S", D), "bf16"), T(("B", "H_kv", "S_k", D), "bf16")
    tk = FA.flash_attention.trace(q, kv, kv, q, T(("B", "H", "S"), "f32"), tessera.scalar("f32"),
                                  BLOCK_M=64, BLOCK_N=32, CAUSAL=True)
    args = [rng.standard_normal((B, H, S, D)).astype(BF16) for _ in range(3)]
    args += [np.zeros((B, H, S, D), BF16), np.zeros((B, H, S), np.float32), 0.125]
    matches_reference(tk, args, FA.grid(B, H, S, BLOCK_M=64), [3, 4])


def test_shipped_linear_attention():
    rng = np.random.default_rng(8)
    B, H, L, D = 1, 2, 100, 64
    qk = T(("B", "H", "T", D), "bf16")
    tk = LA.linear_attention.trace(qk, qk, qk, qk, T((1, "H"), "f32"), CHUNK=64)
    args = [(rng.standard_normal((B, H, L, D)) * 0.2).astype(BF16) for _ in range(2)]
    args += [rng.standard_normal((B, H, L, D)).astype(BF16), np.zeros((B, H, L, D), BF16),
             np.full((1, H), -0.05, np.float32)]
    matches_reference(tk, args, LA.grid(B, H, D), [3])
