"""Surface gaps a Triton user meets at once (issue 17, item 3): tl.sigmoid, numpy functions on tiles.

tl.sigmoid is composed of tile ops (no new op), checked against float64 on the
interpreter and as compiled CUDA on the host emulator, extremes included (no
NaN at +-100). numpy functions on a tile raise DSL_UNSUPPORTED with the tl
spelling as the hint (np.exp used to get a hint about reductions).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tessera
from tessera import tl
from tessera.compiler import testing
from tessera.ir import diagnostics as D


@tessera.kernel
def sigmoid_kernel(X, Y, *, BLOCK=128):
    i = tl.program_id(0) * BLOCK
    tl.store(Y, [i], tl.sigmoid(tl.load(X, [i], (BLOCK,))))


def inputs(n=300):
    x = np.random.default_rng().standard_normal(n).astype(np.float32) * 6
    x[:4] = [-100.0, 100.0, 0.0, -88.0]
    return x


@pytest.mark.parametrize("lane", ["reference", "host-emulator"])
def test_sigmoid_matches_float64_on_both_lanes(lane):
    x = inputs()
    y = np.full_like(x, np.nan)
    grid = (tessera.cdiv(x.size, 128),)
    if lane == "reference":
        sigmoid_kernel[grid](x, y, lane="reference")
    else:
        with testing.emulate_on_host("sm_90"):
            sigmoid_kernel[grid](x, y)
    want = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    assert not np.isnan(y).any() and y[0] == 0.0 and y[1] == 1.0 and y[2] == 0.5
    assert np.max(np.abs(y - want)) <= 2e-6  # f32 exp and divide (the device's fast exp: a few ulp)


def test_sigmoid_of_python_numbers():
    assert tl.sigmoid(0.0) == 0.5 and tl.sigmoid(-1000.0) == 0.0 and tl.sigmoid(1000.0) == 1.0
    assert math.isclose(tl.sigmoid(1.5), 1 / (1 + math.exp(-1.5)))


@tessera.kernel
def numpy_inside(X, Y, *, FN="exp"):
    t = tl.load(X, [0], (16,))
    tl.store(Y, [0], {"exp": np.exp, "sum": lambda v: np.sum(v), "max": np.maximum.reduce,
                      "tanh": np.tanh, "where": lambda v: np.where(v > 0, v, 0.0)}[FN](t))


@pytest.mark.parametrize("fn, hint", [("exp", "use tl.exp inside a kernel"), ("sum", "tl.sum(x, axis)"),
                                      ("tanh", "tl.tanh"), ("where", "tl.where"), ("max", "tl.maximum")])
def test_numpy_on_a_tile_points_at_tl(fn, hint):
    spec = tessera.tensor((16,), "f32")
    with pytest.raises(D.TesseraError) as err:
        numpy_inside.trace(spec, spec, FN=fn)
    assert err.value.code is D.DSL_UNSUPPORTED and "numpy's" in err.value.message
    assert hint in err.value.hint and "reduce with" not in err.value.hint
