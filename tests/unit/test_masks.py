"""Triton's load/store masks (issue 17 item 3: masking was only through the padding value).

`tl.store(..., mask=m)` is tile.masked_store: memory under a false mask element is not written (a separate op,
so a lowering that does not know masks refuses it: the sm_90a wgmma epilogue says so with a coded error).
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
from tessera.compiler.launch_shape import LaunchShape
from tessera.ir import diagnostics as D
from tessera.reference import run as run_reference
from tessera.runtime.host_emulator import run_on_host
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import resource_usage

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
    if where == "reference":
        run_reference(_traced(), grid, [x, y, z])
    else:
        arch = where.split("-")[1]
        module, _ = lower(_traced(), LaunchShape().pipeline(arch), arch)
        assert any(op.name == "nv.store_global" and op.mask is not None for op in module.walk())
        run_on_host(emit_cuda(module), [x, y, z], grid)
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


def test_the_wgmma_epilogue_refuses_a_mask_it_cannot_apply():
    traced = masked_gemm_store.trace(T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"))
    with pytest.raises(D.TesseraError) as err:
        tessera.compile(traced, "sm_90a")
    assert err.value.code is D.NV_WGMMA_UNSUPPORTED and "tile.masked_store" in str(err.value) and err.value.hint
    module, _ = lower(traced, LaunchShape().pipeline("sm_90"), "sm_90")  # mma.sync: unpacked, stored masked
    assert any(op.name == "nv.store_global" and op.mask is not None for op in module.walk())


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
