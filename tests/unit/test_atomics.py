"""tl.atomic_add (issue 17 item 3: no atomics): tile.atomic_add adds a tile into memory atomically, so programs
may accumulate into the same elements (a histogram, a split reduction) in any order.

Checked where every program adds into one shared row (the strongest contention): the reference interpreter (its
programs run one at a time, so the add is plain), the host emulator (the emitted CUDA's atomicAdd on std::atomic_ref,
with the CTAs' threads racing), a mask, NVRTC for sm_80/sm_90 (RED/ATOM in the SASS, no local memory) and the
coded errors of element types atomicAdd does not take.
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
from tessera.target.nvidia.toolchain.sass import count_instructions, disassemble, resource_usage

from _kernel_check import run_on  # noqa: E402

T = tessera.tensor


@tessera.kernel
def column_sums(X, S, P, *, BM=4, BN=64):
    """S[0, :] += the column sums of this program's rows (every program adds into the same row of S);
    P[0, :] += the counts of the positive elements, an i32 add under a mask."""
    m0 = tl.program_id(0) * BM
    x = tl.load(X, [m0, 0], (BM, BN))
    tl.atomic_add(S, [0, 0], tl.sum(x, 0))
    ones = tl.full((BM, BN), 1, tl.i32)
    tl.atomic_add(P, [m0 - m0, 0], tl.sum(tl.where(x > 0.0, ones, 0), 0), mask=tl.full((1, BN), True, tl.i1))


def _traced():
    return column_sums.trace(T(("M", 64), "f32"), T((1, 64), "f32"), T((1, 64), "i32"))


@pytest.mark.parametrize("where", ["reference", "emulator-sm_80", "emulator-sm_90"])
def test_every_program_adds_into_one_row(where):
    M = 45  # 12 programs, the last one ragged (its rows past M add nothing)
    x = np.random.default_rng(4).standard_normal((M, 64)).astype(np.float32)
    s = np.full((1, 64), 0.5, np.float32)  # adds on top of what is there
    p = np.full((1, 64), 3, np.int32)
    grid = (-(-M // 4),)
    run_on(where, _traced(), grid, [x, s, p])
    np.testing.assert_allclose(s[0], 0.5 + x.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(p[0], 3 + (x > 0).sum(0))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_to_atomics_without_local_memory(arch):
    ck = tessera.compile(_traced(), arch)
    usage = next(iter(resource_usage(ck.cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0
    sass = disassemble(ck.cubin)
    assert sum(count_instructions(sass, op) for op in ("RED", "REDG", "ATOM", "ATOMG")) >= 2  # f32 and i32 adds


def _trace_add(dtype, value_of):
    @tessera.kernel
    def k(X, Y, *, BN=64):
        tl.atomic_add(Y, [0], value_of(tl.load(X, [0], (BN,))))

    return k.trace(T((64,), dtype), T((64,), dtype))


@pytest.mark.parametrize("dtype, value_of, code, words", [
    ("bf16", lambda x: x, D.DSL_DTYPE_MISMATCH, "adds f32, f64, i32 tensors"),
    ("f32", lambda x: x.to(tl.f64), D.DSL_DTYPE_MISMATCH, "the tile is f64"),
    ("f32", lambda x: 1.0, D.DSL_OPERAND_INVALID, "takes a tile"),
])
def test_what_atomic_add_does_not_take_is_a_coded_error(dtype, value_of, code, words):
    with pytest.raises(D.TesseraError) as err:
        _trace_add(dtype, value_of)
    assert err.value.code is code and words in str(err.value), str(err.value)


@tessera.kernel
def split_k_gemm(A, B, C, *, BM=128, BN=128, BK=64, SPLITS=2):
    """C += A @ B^T with K cut into SPLITS slices, one per program along axis 2, each adding its partial product
    with tl.atomic_add (a Triton user's split-K): on sm_90a the adds come straight from the wgmma accumulator."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    K = tl.dim(A, 1)
    part = tl.cdiv(K, SPLITS * BK) * BK
    k0 = tl.program_id(2) * part
    acc = tl.zeros((BM, BN), tl.f32)
    for k in tl.range(k0, tl.minimum(k0 + part, K), BK):
        acc = tl.dot(tl.load(A, [m0, k], (BM, BK)), tl.load(B, [n0, k], (BN, BK)).T, acc)
    tl.atomic_add(C, [m0, n0], acc)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_90"])
def test_split_k_by_atomic_adds_from_a_tensor_core_epilogue(arch):
    from tessera.compiler.driver import default_pipeline

    M, N, K = 200, 136, 256
    rng = np.random.default_rng(12)
    a, w = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((N, K)).astype(np.float16)
    c = np.full((M, N), 0.25, np.float32)
    traced = split_k_gemm.trace(T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("M", "N"), "f32"))
    module, _ = lower(traced, default_pipeline(arch, stages=2), arch)
    if arch == "sm_90a":
        assert any(op.name == "nv.wgacc_atomic_add" for op in module.walk())
    run_on_host(emit_cuda(module), [a, w, c], (-(-M // 128), -(-N // 128), 2))
    want = 0.25 + a.astype(np.float64) @ w.astype(np.float64).T
    assert np.abs(c - want).max() <= 1e-2 * np.abs(want).max()
    usage = next(iter(resource_usage(tessera.compile(traced, arch, stages=2).cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0


@tessera.kernel
def add_product_from_c(A, B, C0, Out, *, BM=128, BN=128, BK=64):
    """Out += C0 + A @ B^T: an accumulator that starts from a loaded tile takes warp-specialize's general loop
    body on sm_90a, whose consumer adds the result atomically."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.load(C0, [m0, n0], (BM, BN))
    for k in tl.range(0, tl.dim(A, 1), BK):
        acc = tl.dot(tl.load(A, [m0, k], (BM, BK)), tl.load(B, [n0, k], (BN, BK)).T, acc)
    tl.atomic_add(Out, [m0, n0], acc)


def test_atomic_adds_from_the_general_warp_specialised_body():
    from tessera.compiler.driver import default_pipeline

    M, N, K = 150, 130, 128
    rng = np.random.default_rng(13)
    a, w = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((N, K)).astype(np.float16)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    out = np.full((M, N), -1.0, np.float32)
    traced = add_product_from_c.trace(T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("M", "N"), "f32"),
                                      T(("M", "N"), "f32"))
    module, _ = lower(traced, default_pipeline("sm_90a", stages=2), "sm_90a")
    assert any(op.name == "nv.wgacc_atomic_add" for op in module.walk())
    run_on_host(emit_cuda(module), [a, w, c0, out], (2, 2))
    want = -1.0 + c0 + a.astype(np.float64) @ w.astype(np.float64).T
    assert np.abs(out - want).max() <= 1e-2 * np.abs(want).max()
