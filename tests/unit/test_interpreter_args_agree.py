"""The reference lane refuses what the compiled lane refuses, through the one argument checker
(`tessera.ir.argcheck`): symbolic dims, static dims, dtype, rank, layout, 32-bit dims and index
scalars, scalar ranges, read-only and aliased outputs. Every refusal is coded, names the argument and
writes nothing; zero-size dims are accepted by both lanes alike."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tessera
from tessera import ops, tl
from tessera.compiler import compile, testing
from tessera.ir import diagnostics as D
from tessera.kernels import gemm as G
from tessera.reference import run
from tessera.runtime import CompileCache

T = tessera.tensor
META = {"BM": 64, "BN": 64, "BK": 32}


@pytest.fixture(scope="module")
def traced():
    """C = alpha*A@B + beta*C, f16 inputs and f32 C, with symbolic M, N, K shared by A, B and C."""
    return G.gemm.trace(T(("M", "K"), "f16"), T(("K", "N"), "f16"), T(("M", "N"), "f32"), None, None,
                        tessera.scalar("f32"), tessera.scalar("f32"), **META)


@pytest.fixture(scope="module")
def compiled(traced):
    return compile(traced, "sm_90", cache=CompileCache(disk=False))


def gemm_args(M=20, N=24, K=40, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16),
            np.full((M, N), 7.0, np.float32), 1.0, 0.5]


def untouched(args, before) -> None:
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            assert a.tobytes() == b.tobytes(), "a refused call wrote an array"


def refused(kernel, args, code: D.Code, *needles: str, grid=(1, 1)) -> str:
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(D.TesseraError) as err:
        run(kernel, grid, args)
    assert err.value.code is code, str(err.value)
    text = str(err.value)
    for needle in needles:
        assert needle in text, text
    untouched(args, before)
    return text


def compiled_refuses(ck, args, *needles: str) -> str:
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(D.TesseraError) as err:
        ck.values(args)
    assert err.value.code is D.RUNTIME_ARG_INVALID, str(err.value)
    for needle in needles:
        assert needle in err.value.message, err.value.message
    untouched(args, before)
    return err.value.message


def test_dims_traced_with_one_symbol_must_agree_on_the_reference_lane(traced):
    """Regression (issue 13): B with fewer rows than A has columns ran, the missing K rows read as 0 --
    a silently wrong C. CompiledKernel.launch refused the same call."""
    args = gemm_args()
    args[1] = args[1][:32].copy()  # K = 40 in A, 32 in B
    text = refused(traced, args, D.REF_ARG_SHAPE, "argument #1 (%B) of @gemm", "dim 0 ('K') is 32",
                   "argument #0 (%A) dim 1 ('K') is 40")
    assert "one symbol" in text


def test_matching_symbolic_dims_run(traced):
    args = gemm_args()
    c0 = args[2].copy()
    run(traced, (1, 1), args)
    want = args[0].astype(np.float32) @ args[1].astype(np.float32) + 0.5 * c0
    np.testing.assert_allclose(args[2], want, rtol=1e-3, atol=1e-3)


def _alias(args):
    """C written over A's memory (a [20, 40] f16 buffer is a [20, 20] f32 one)."""
    args[2] = args[0].view(np.float32)[:, :20]
    args[1] = args[1][:, :20].copy()
    return args


def _one(i, value):
    def edit(args):
        args[i] = value(args[i]) if callable(value) else value
        return args
    return edit


# case -> (edit of the good arguments, reference code, needles both lanes' messages hold)
CASES = {
    "symbol": (_one(2, lambda c: c[:-1].copy()), D.REF_ARG_SHAPE, ("dim 0 ('M') is 19", "dim 0 ('M') is 20")),
    "dtype": (_one(0, lambda a: a.astype(np.float32)), D.REF_ARG_DTYPE,
              ("has element type f32, the kernel takes f16",)),
    "rank": (_one(1, lambda b: b[None]), D.REF_ARG_RANK, ("has rank 3, the kernel takes rank 2",)),
    "layout": (_one(0, np.asfortranarray), D.REF_ARG_LAYOUT, ("is not C-contiguous",)),
    "limit": (lambda a: [np.zeros((0, 2**31), np.float16), np.zeros((2**31, 0), np.float16),
                         np.zeros((0, 0), np.float32), 1.0, 1.0], D.REF_ARG_SHAPE,
              ("dim 1 is 2147483648; kernel indices are 32-bit",)),
    "readonly": (_one(2, lambda c: np.lib.stride_tricks.as_strided(c, writeable=False)), D.REF_ARG_READONLY,
                 ("is read-only, but the kernel writes it",)),
    "alias": (_alias, D.REF_ARG_ALIAS, ("shares memory with argument", "A")),
    "f32 overflow": (_one(3, 1e39), D.REF_ARG_VALUE, ("value 1e+39 overflows f32",)),
    "scalar kind": (_one(4, "0.5"), D.REF_ARG_KIND, ("must be a number (f32), got str",)),
    "bool scalar": (_one(4, True), D.REF_ARG_KIND, ("must be a number (f32), got bool",)),
    "count": (lambda a: a[:4], D.REF_ARG_COUNT, ("takes 5 arguments (A, B, C, alpha, beta), got 4",)),
}


def _body(text: str) -> str:
    """A message without the lane's name for the failing argument (and without the hint); other arguments
    are named as the compiled lane names them."""
    text = text.split("\n")[0]
    text = re.sub(r"^.*?error: REF_ARG_\w+: (argument #\d+ \(%\w+\) of @gemm: |@gemm )", "", text)
    text = re.sub(r"^(argument '\w+' |gemm )", "", text)
    return re.sub(r"#\d+ \(%(\w+)\)", r"'\1'", text)


@pytest.mark.parametrize("case", list(CASES))
def test_both_lanes_refuse_the_same_calls_with_one_message(traced, compiled, case):
    edit, code, needles = CASES[case]
    ref_text = refused(traced, edit(gemm_args()), code, *needles)
    cuda_text = compiled_refuses(compiled, edit(gemm_args()), *needles)
    assert _body(ref_text) == _body(cuda_text), (ref_text, cuda_text)


def test_inputs_may_share_memory_and_zero_size_dims_run_alike(traced, compiled):
    a = np.random.default_rng(1).standard_normal((24, 24)).astype(np.float16)
    args = [a, a, np.zeros((24, 24), np.float32), 1.0, 0.0]  # only arrays the kernel writes must not overlap
    run(traced, (1, 1), args)
    compiled.values(args)
    np.testing.assert_allclose(args[2], a.astype(np.float32) @ a.astype(np.float32), rtol=1e-3, atol=1e-3)
    for M, N, K in ((20, 24, 0), (0, 24, 40), (20, 0, 40)):
        args = gemm_args(M, N, K)
        run(traced, (1, 1), args)
        compiled.values(args)
        np.testing.assert_array_equal(args[2], np.full((M, N), 3.5, np.float32))  # K = 0: C = 0.5 * C


@pytest.mark.skipif(shutil.which("g++") is None, reason="the host emulator needs g++ (C++20)")
def test_zero_size_k_gives_the_same_c_on_both_lanes(traced, compiled):
    ref, emu = gemm_args(20, 24, 0), gemm_args(20, 24, 0)
    run(traced, (1, 1), ref)
    with testing.emulate_on_host():
        compiled.launch((1, 1), emu)
    np.testing.assert_array_equal(ref[2], emu[2])


@tessera.kernel
def take_rows(X, Y, row, *, BM=16, BN=16):
    tl.store(Y, [0, 0], tl.load(X, [row, 0], (BM, BN)))


def test_index_scalars_are_32_bit_on_both_lanes():
    tk = take_rows.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"), tessera.scalar("index"))
    ck = compile(tk, "sm_90", cache=CompileCache(disk=False))
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    needle = "value 2147483648 is out of range [-2147483648, 2147483647] of index; kernel indices are 32-bit"
    refused(tk, [x, np.zeros_like(x), 2**31], D.REF_ARG_VALUE, "argument #2 (%row)", needle)
    compiled_refuses(ck, [x, np.zeros_like(x), 2**31], "argument 'row'", needle)
    y = np.zeros_like(x)
    run(tk, 1, [x, y, 16])
    np.testing.assert_array_equal(y[:16], x[16:])


def test_the_warm_path_refuses_what_the_full_path_refuses(compiled):
    """Device arrays of one key take the warm path; an aliased output or an out-of-range scalar on it still
    goes to the full checks, which name it."""
    from _device_arrays import FakeDeviceArray

    a, b, c = gemm_args(24, 24, 24)[:3]
    args = [FakeDeviceArray(a), FakeDeviceArray(b), FakeDeviceArray(c), 1.0, 0.5]
    compiled.values(args)
    assert compiled._warm_values(args) is not None  # remembered: this key is warm now
    over_a = FakeDeviceArray(c)
    over_a.__cuda_array_interface__["data"] = (a.ctypes.data, False)  # C's key, A's bytes
    aliased = [args[0], args[1], over_a, 1.0, 0.5]
    assert compiled._warm_values(aliased) is None
    compiled_refuses(compiled, aliased, "argument 'C' shares memory with argument 'A'")
    for bad in (1e39, True):
        assert compiled._warm_values(args[:3] + [bad, 0.5]) is None
        compiled_refuses(compiled, args[:3] + [bad, 0.5], "argument 'alpha'")
    assert c.tobytes() == np.full((24, 24), 7.0, np.float32).tobytes()


def test_the_ops_reference_lane_goes_through_the_same_check(monkeypatch):
    """tessera.ops hands the interpreter its TracedKernel, so the kernel-level symbolic check runs there too
    (behind the op's own checks)."""
    from tessera.ops import _common

    plans = []
    real = _common.Plan.run
    monkeypatch.setattr(_common.Plan, "run", lambda self, *a: plans.append(self) or real(self, *a))
    a, b = gemm_args(20, 24, 40)[:2]
    ops.gemm(a, b, lane="reference")
    plan = plans[-1]
    assert plan.lane == "reference" and plan.traced is not None
    out = np.full((20, 24), 7.0, np.float16)
    with pytest.raises(D.TesseraError) as err:
        plan.run((1, 1), None, [a, b[:32].copy(), out, 1.0], None, 0)
    assert err.value.code is D.REF_ARG_SHAPE and "('K')" in str(err.value), str(err.value)
    assert (out == 7).all()
