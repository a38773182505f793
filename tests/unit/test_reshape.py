"""A rank-1 tile as a row or a column: `w[None, :]`, `x[:, None]`, tl.expand_dims and tl.reshape (issue 17 item 3:
a weight had to be declared [1, N] because a [N] tile could not be broadcast against [BM, N]).

All of them are one op, tile.reshape (same elements, same row-major order, same count), which the blocked register
layout lowers to nothing: slot i of thread t is element t + i * threads for every shape. Numerics on the reference
interpreter and on the host emulator (the emitted CUDA), NVRTC for sm_80 and sm_90 with no local memory, and the
coded errors of every index that is not a new axis.
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


@tessera.kernel
def scale_shift(X, W, B, C, Y, *, BM=4, BN=64):
    """y = x * w[None, :] + b[None, :] + c[:, None]: a row weight, a row bias and a per-row offset, all rank 1."""
    m0 = tl.program_id(0) * BM
    x = tl.load(X, [m0, 0], (BM, BN)).to(tl.f32)
    w = tl.load(W, [0], (BN,)).to(tl.f32)
    b = tl.load(B, [0], (BN,)).to(tl.f32)
    c = tl.load(C, [m0], (BM,))
    tl.store(Y, [m0, 0], (x * w[None, :] + tl.expand_dims(b, 0) + c[:, None]).to(Y.dtype))


@tessera.kernel
def row_sums(X, S, *, BM=4, BN=64):
    """The [BM, 1] row sums of a tile stored as a rank-1 [BM] vector (tl.reshape back to rank 1)."""
    m0 = tl.program_id(0) * BM
    x = tl.load(X, [m0, 0], (BM, BN)).to(tl.f32)
    tl.store(S, [m0], tl.reshape(tl.sum(x, 1), (BM,)))


def _scale_shift(dtype="f16"):
    return scale_shift.trace(T(("M", 64), dtype), T((64,), dtype), T((64,), dtype), T(("M",), "f32"),
                             T(("M", 64), dtype))


def _inputs(M, dtype=np.float16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, 64)).astype(dtype)
    w, b = (rng.standard_normal(64).astype(dtype) for _ in range(2))
    c = rng.standard_normal(M).astype(np.float32)
    want = x.astype(np.float64) * w.astype(np.float64)[None, :] + b.astype(np.float64)[None, :] + c[:, None]
    return x, w, b, c, want


def test_the_new_axes_are_one_reshape_op_each():
    text = str(_scale_shift().module)
    assert text.count("tile.reshape") == 3
    assert "tile.reshape %" in text and "64xf32> -> !tile.tile<1x64xf32>" in text
    assert "4xf32> -> !tile.tile<4x1xf32>" in text


def test_reference_numerics():
    M = 10  # not a multiple of BM: the last program's rows past M are dropped
    x, w, b, c, want = _inputs(M)
    y = np.full((M, 64), np.nan, np.float16)
    run_reference(_scale_shift(), (-(-M // 4),), [x, w, b, c, y])
    assert np.abs(y.astype(np.float64) - want).max() <= 2e-2 * np.abs(want).max()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_without_local_memory(arch):
    ck = tessera.compile(_scale_shift(), arch)
    usage = next(iter(resource_usage(ck.cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0


def test_host_emulator_numerics():
    M = 13
    x, w, b, c, want = _inputs(M, seed=1)
    y = np.full((M, 64), np.nan, np.float16)
    module, _ = lower(_scale_shift(), LaunchShape().pipeline("sm_90"), "sm_90")
    run_on_host(emit_cuda(module), [x, w, b, c, y], (-(-M // 4),))
    assert np.abs(y.astype(np.float64) - want).max() <= 2e-2 * np.abs(want).max()


def test_back_to_rank_one_on_the_reference_and_the_emulator():
    M = 9
    x = np.random.default_rng(2).standard_normal((M, 64)).astype(np.float32)
    traced = row_sums.trace(T(("M", 64), "f32"), T(("M",), "f32"))
    for run in ("reference", "emulator"):
        s = np.full(M, np.nan, np.float32)
        if run == "reference":
            run_reference(traced, (-(-M // 4),), [x, s])
        else:
            module, _ = lower(traced, LaunchShape().pipeline("sm_80"), "sm_80")
            run_on_host(emit_cuda(module), [x, s], (-(-M // 4),))
        assert np.abs(s - x.astype(np.float64).sum(1)).max() <= 1e-4 * np.abs(x).sum(1).max(), run


def _trace_body(body):
    @tessera.kernel
    def k(X, Y, *, BN=64):
        x = tl.load(X, [0], (BN,))
        tl.store(Y, [0, 0], body(x))

    return k.trace(T((64,), "f32"), T((1, 64), "f32"))


@pytest.mark.parametrize("body, words", [
    (lambda x: x[0], "cannot be indexed or sliced with 0"),
    (lambda x: x[1:3], "cannot be indexed or sliced with slice(1, 3, None)"),
    (lambda x: x[None, :, :], "cannot be indexed or sliced"),
    (lambda x: x[None, ..., :], "cannot be indexed or sliced"),
])
def test_an_index_that_is_not_a_new_axis_is_a_coded_error(body, words):
    with pytest.raises(D.TesseraError) as err:
        _trace_body(body)
    assert err.value.code is D.DSL_UNSUPPORTED and words in str(err.value) and err.value.hint


@pytest.mark.parametrize("body, words", [
    (lambda x: tl.reshape(x, (2, 64)), "64 elements into 128"),
    (lambda x: tl.expand_dims(x, 3), "axis 3 is out of range"),
    (lambda x: tl.expand_dims(x, True), "axis True is out of range"),
])
def test_a_reshape_that_changes_the_count_or_a_bad_axis_is_a_coded_error(body, words):
    with pytest.raises(D.TesseraError) as err:
        _trace_body(body)
    assert err.value.code is D.DSL_SHAPE_MISMATCH and words in str(err.value) and err.value.hint


def test_expand_dims_takes_negative_axes_and_new_axes_compose():
    traced = _trace_body(lambda x: tl.expand_dims(x, -2))  # [64] -> [1, 64]
    assert "-> !tile.tile<1x64xf32>" in str(traced.module)
    traced = _trace_body(lambda x: tl.reshape(x[:, None][None, :, :].reshape(64), (1, 64)))
    assert str(traced.module).count("tile.reshape") == 4  # [64, 1], [1, 64, 1], [64], [1, 64]


@tessera.kernel
def mm_bias(A, B, Bias, C, *, BM=128, BN=128, BK=64):
    """C = A @ B^T + bias[None, :] with a rank-1 bias: on sm_90a the wgmma epilogue loads it as a broadcast row."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.f32)
    for k in tl.range(0, tl.dim(A, 1), BK):
        acc = tl.dot(tl.load(A, [m0, k], (BM, BK)), tl.load(B, [n0, k], (BN, BK)).T, acc)
    bias = tl.load(Bias, [n0], (BN,)).to(tl.f32)
    tl.store(C, [m0, n0], (acc + bias[None, :]).to(C.dtype))


@pytest.mark.parametrize("store", ["tma", "registers"])  # the GEMM builder's epilogue and the general body's
def test_a_rank_one_bias_in_the_sm90a_wgmma_epilogue(store):
    from tessera.compiler.driver import default_pipeline

    M, N, K = 200, 300, 128  # ragged in M and N: the bias row's edge reads past N are dropped with the stores
    rng = np.random.default_rng(6)
    a, w = (rng.standard_normal(s).astype(np.float16) for s in ((M, K), (N, K)))
    bias = rng.standard_normal(N).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    traced = mm_bias.trace(T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("N",), "f16"), T(("M", "N"), "f16"))
    module, _ = lower(traced, default_pipeline("sm_90a", stages=3, store=store), "sm_90a")
    loads = [op for op in module.walk() if op.name == "nv.wgacc_load"]
    assert loads and all(op.broadcast_rows.value.data for op in loads)
    run_on_host(emit_cuda(module), [a, w, bias, c], (-(-M // 128), -(-N // 128)))
    want = a.astype(np.float64) @ w.astype(np.float64).T + bias.astype(np.float64)[None, :]
    assert np.abs(c.astype(np.float64) - want).max() <= 2e-2 * np.abs(want).max()
    usage = next(iter(resource_usage(tessera.compile(traced, "sm_90a", store=store).cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0
