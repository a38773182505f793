"""A tl.range loop whose step is a run-time scalar: a zero or negative step is REF_LOOP_STEP on the reference
interpreter (it spins forever on the GPU), a positive one runs (issue 13: no hang, no silent wrong answer).

Before, a zero step was a bare ValueError from Python's range and a negative one silently ran no iterations."""

from __future__ import annotations

import numpy as np
import pytest

import tessera
from tessera import tl
from tessera.ir import diagnostics as D
from tessera.reference import run

T = tessera.tensor


@tessera.kernel
def strided_sum(X, Out, step, *, B=16):
    acc = tl.zeros((B, B), tl.f32)
    for k in tl.range(0, X.shape[1], step):
        acc = acc + tl.load(X, [0, k], (B, B))
    tl.store(Out, [0, 0], acc)


def _traced():
    return strided_sum.trace(T((16, "K"), "f32"), T((16, 16), "f32"), tessera.scalar("i32"))


def test_a_positive_run_time_step_runs():
    x = np.random.default_rng(0).standard_normal((16, 64)).astype(np.float32)
    out = np.full((16, 16), np.nan, np.float32)
    run(_traced(), 1, [x, out, 16])
    want = sum(x[:, k:k + 16].astype(np.float64) for k in range(0, 64, 16))
    assert np.abs(out - want).max() <= 1e-5 * np.abs(want).max()


@pytest.mark.parametrize("step", [0, -16])
def test_a_step_that_is_not_positive_is_a_coded_error_and_writes_nothing(step):
    x = np.random.default_rng(1).standard_normal((16, 64)).astype(np.float32)
    out = np.full((16, 16), np.nan, np.float32)
    with pytest.raises(D.TesseraError) as err:
        run(_traced(), 1, [x, out, step])
    assert err.value.code is D.REF_LOOP_STEP and f"step is {step}" in str(err.value)
    assert np.isnan(out).all()
