"""The reference lane checks a traced kernel's arguments as the compiled lane does, through the one
argument checker (`tessera.ir.argcheck`): here, dims traced with one symbol must agree. Every refusal is
coded, names the argument and writes nothing."""

from __future__ import annotations

import numpy as np
import pytest

import tessera
from tessera import ops
from tessera.ir import diagnostics as D
from tessera.kernels import gemm as G
from tessera.reference import run

T = tessera.tensor
META = {"BM": 64, "BN": 64, "BK": 32}


@pytest.fixture(scope="module")
def traced():
    """C = alpha*A@B + beta*C, f16 inputs and f32 C, with symbolic M, N, K shared by A, B and C."""
    return G.gemm.trace(T(("M", "K"), "f16"), T(("K", "N"), "f16"), T(("M", "N"), "f32"), None, None,
                        tessera.scalar("f32"), tessera.scalar("f32"), **META)


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
