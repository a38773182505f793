"""Triton's load/store masks (issue 17 item 3: masking was only through the padding value).

`tl.store(..., mask=m)` is tile.masked_store: memory under a false mask element is not written (a separate op,
so a lowering that does not know masks refuses it with a coded error instead of storing every element; the
sm_90a wgmma epilogue applies it element by element, with its iotas in the accumulator layout).
`tl.load(..., mask=m, other=x)` is a load and a select (every load is bounds-checked, so the mask decides values,
not safety). Checked on the reference interpreter and on the host emulator (the emitted CUDA) with sentinels in
the memory a mask keeps, NVRTC for sm_80/sm_90 without local memory, and the coded errors of bad masks.
"""

from __future__ import annotations

import numpy as np
import pytest

import tessera
from tessera import tl
from tessera.compiler.driver import lower
from tessera.ir import diagnostics as D
from tessera.runtime.host_emulator import run_on_host
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import resource_usage

from _kernel_check import run_on  # noqa: E402

T = tessera.tensor
SENTINEL = -7.0


@tessera.kernel
def keep_positive(X, Y, Z, *, BM=4, BN=64):
    """Y = 2x where x > 0 (Y keeps its memory elsewhere); Z = x at even columns, -1 at odd ones (a masked load)."""
    m0 = tl.program_id(0) * BM
    x = tl.load(X, [m0, 0], (BM, BN))
    tl.store(Y, [m0, 0], x * 2.0, mask=x > 0.0)
    col = tl.arange((1, BN), 1)
    even = col - (col // 2) * 2 == 0  # a [1, BN] mask broadcast over the rows
    tl.store(Z, [m0, 0], tl.load(X, [m0, 0], (BM, BN), mask=even, other=-1.0))


def _traced():
    return keep_positive.trace(T(("M", 64), "f32"), T(("M", 64), "f32"), T(("M", 64), "f32"))


def _check(x, y, z):
    want_y = np.where(x > 0, 2 * x, SENTINEL)
    want_z = np.where(np.arange(64)[None, :] % 2 == 0, x, -1.0)
    np.testing.assert_array_equal(y, want_y.astype(np.float32))
    np.testing.assert_array_equal(z, want_z.astype(np.float32))


@pytest.mark.parametrize("where", ["reference", "emulator-sm_80", "emulator-sm_90"])
def test_a_masked_store_leaves_memory_under_false_elements_alone(where):
    M = 11  # ragged: the last program's rows past M are dropped as well
    x = np.random.default_rng(3).standard_normal((M, 64)).astype(np.float32)
    y = np.full((M, 64), SENTINEL, np.float32)
    z = np.full((M, 64), np.nan, np.float32)
    grid = (-(-M // 4),)
    module = run_on(where, _traced(), grid, [x, y, z])
    if module is not None:
        assert any(op.name == "nv.store_global" and op.mask is not None for op in module.walk())
    _check(x, y, z)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_without_local_memory(arch):
    usage = next(iter(resource_usage(tessera.compile(_traced(), arch).cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0


@tessera.kernel
def masked_gemm_store(A, B, C, *, BM=128, BN=128, BK=64):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.f32)
    for k in tl.range(0, tl.dim(A, 1), BK):
        acc = tl.dot(tl.load(A, [m0, k], (BM, BK)), tl.load(B, [n0, k], (BN, BK)).T, acc)
    tl.store(C, [m0, n0], acc.to(C.dtype), mask=m0 < tl.dim(C, 0) - 64)  # a scalar condition, splat


def test_the_wgmma_epilogue_applies_a_program_level_mask():
    """A mask from a scalar condition (splat over the tile): the sm_90a tiles whose rows start past M - 64 store
    nothing; the others store everything."""
    from tessera.compiler.driver import default_pipeline

    M, N, K = 300, 128, 64
    rng = np.random.default_rng(11)
    a, w = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((N, K)).astype(np.float16)
    c = np.full((M, N), 7.0, np.float16)
    traced = masked_gemm_store.trace(T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("M", "N"), "f16"))
    module, _ = lower(traced, default_pipeline("sm_90a", stages=2), "sm_90a")
    run_on_host(emit_cuda(module), [a, w, c], (3, 1))
    z = a.astype(np.float64) @ w.astype(np.float64).T
    assert np.abs(c[:256] - z[:256]).max() <= 2e-2 * np.abs(z).max()  # tiles at rows 0 and 128 (< 300 - 64)
    assert (c[256:] == 7.0).all()  # the tile at row 256 keeps its memory


def _trace_store(mask_of, load=False):
    @tessera.kernel
    def k(X, Y, *, BN=64):
        x = tl.load(X, [0], (BN,))
        if load:
            tl.store(Y, [0], tl.load(X, [0], (BN,), **mask_of(x)))
        else:
            tl.store(Y, [0], x, mask=mask_of(x))

    return k.trace(T((64,), "f32"), T((64,), "f32"))


@pytest.mark.parametrize("mask_of, load, code, words", [
    (lambda x: x, False, D.DSL_OPERAND_INVALID, "mask must be an i1 tile"),
    (lambda x: 1.0, False, D.DSL_OPERAND_INVALID, "mask must be an i1 tile"),
    (lambda x: tl.arange((2, 64), 1) > 3, False, D.DSL_SHAPE_MISMATCH, "does not broadcast"),
    (lambda x: {"other": 0.0}, True, D.DSL_OPERAND_INVALID, "other= without mask="),
    (lambda x: {"mask": x}, True, D.DSL_OPERAND_INVALID, "mask must be an i1 tile"),
])
def test_a_bad_mask_is_a_coded_error(mask_of, load, code, words):
    with pytest.raises(D.TesseraError) as err:
        _trace_store(mask_of, load)
    assert err.value.code is code and words in str(err.value) and err.value.hint


@tessera.kernel
def triton_style_epilogue(A, B, C, *, BM=128, BN=128, BK=64):
    """What a Triton user writes: rows/cols from aranges, a bounds mask (redundant in Tessera, harmless) and a
    value mask, on a tensor-core GEMM's accumulator."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.f32)
    for k in tl.range(0, tl.dim(A, 1), BK):
        acc = tl.dot(tl.load(A, [m0, k], (BM, BK)), tl.load(B, [n0, k], (BN, BK)).T, acc)
    rows = tl.arange((BM, BN), 0) + m0
    cols = tl.arange((1, BN), 1) + n0
    keep = (rows < tl.dim(C, 0)) & (cols < tl.dim(C, 1)) & (acc > 0.0)
    tl.store(C, [m0, n0], acc.to(C.dtype), mask=keep)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_90"])
def test_a_triton_style_masked_epilogue_on_tensor_cores(arch):
    """sm_90a: the wgmma epilogue builds the iotas in its accumulator layout and stores under the mask element by
    element (no 16-byte or TMA store, which would write masked elements); sm_90: the blocked masked store."""
    from tessera.compiler.driver import default_pipeline

    M, N, K = 200, 300, 128
    rng = np.random.default_rng(10)
    a, w = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((N, K)).astype(np.float16)
    c = np.full((M, N), SENTINEL, np.float32)
    traced = triton_style_epilogue.trace(T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("M", "N"), "f32"))
    module, _ = lower(traced, default_pipeline(arch, stages=3), arch)
    if arch == "sm_90a":
        stores = [op for op in module.walk() if op.name == "nv.wgacc_store"]
        assert stores and all(op.mask is not None for op in stores)
    run_on_host(emit_cuda(module), [a, w, c], (-(-M // 128), -(-N // 128)))
    z = a.astype(np.float64) @ w.astype(np.float64).T
    want = np.where(z > 0, z, SENTINEL)
    assert np.abs(c - want).max() <= 2e-2 * np.abs(z).max()
    usage = next(iter(resource_usage(tessera.compile(traced, arch, stages=3).cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0
