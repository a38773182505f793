"""tl.cumsum (issue 17 item 3: no scan): tile.scan sum, the inclusive prefix along an axis.

The blocked lowering scans in the scratch buffer in place (Hillis-Steele: log2(length) read / barrier / write
steps), so its additions happen in another order than numpy's sequential cumsum: f32 results are compared with
a float64 reference within f32 rounding, i32 ones exactly. Reference interpreter, host emulator, NVRTC for
sm_80/sm_90 without local memory, and the coded errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import tessera
from tessera import tl
from tessera.ir import diagnostics as D
from tessera.target.nvidia.toolchain.sass import resource_usage

from _kernel_check import run_on  # noqa: E402

T = tessera.tensor


@tessera.kernel
def prefix(X, Y, C, *, BM=4, BN=256):
    """Y = the running sum of each row of X (bf16 in, summed in f32); C = per column, the count of positive
    elements in the rows so far of this program's block (an i1 mask scanned as i32 along axis 0)."""
    m0 = tl.program_id(0) * BM
    x = tl.load(X, [m0, 0], (BM, BN))
    tl.store(Y, [m0, 0], tl.cumsum(x.to(tl.f32), 1))
    tl.store(C, [m0, 0], tl.cumsum(x > 0.0, axis=0))


def _traced(BN=256):
    return prefix.trace(T(("M", BN), "bf16"), T(("M", BN), "f32"), T(("M", BN), "i32"), BN=BN)


def _check(x, y, c):
    xf = x.astype(np.float64)
    want = np.cumsum(xf, axis=1)
    bound = 4 * np.finfo(np.float32).eps * np.cumsum(np.abs(xf), axis=1).max()
    assert np.abs(y - want).max() <= bound
    pos = (xf > 0).astype(np.int32)
    for b in range(0, len(x), 4):  # the axis-0 scan restarts at each program's block of 4 rows
        np.testing.assert_array_equal(c[b:b + 4], np.cumsum(pos[b:b + 4], axis=0))


@pytest.mark.parametrize("where", ["reference", "emulator-sm_80", "emulator-sm_90"])
def test_running_sums(where):
    import ml_dtypes

    M = 10  # ragged: the last program has 2 rows
    x = np.random.default_rng(5).standard_normal((M, 256)).astype(ml_dtypes.bfloat16)
    y = np.full((M, 256), np.nan, np.float32)
    c = np.full((M, 256), -1, np.int32)
    grid = (-(-M // 4),)
    module = run_on(where, _traced(), grid, [x, y, c])
    if module is not None:
        assert sum(op.name == "nv.scan_shared" for op in module.walk()) == 2
    _check(x, y, c)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_without_local_memory(arch):
    usage = next(iter(resource_usage(tessera.compile(_traced(), arch).cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0


def _trace_scan(body):
    @tessera.kernel
    def k(X, Y, *, BN=64):
        tl.store(Y, [0], body(tl.load(X, [0], (BN,))))

    return k.trace(T((64,), "f32"), T((64,), "f32"))


@pytest.mark.parametrize("body, code, words", [
    (lambda x: tl.cumsum(x, 1), D.DSL_AXIS_INVALID, "axis 1 is out of range"),
    (lambda x: tl.cumsum(x, tl.program_id(0)), D.DSL_AXIS_INVALID, "must be an int"),
    (lambda x: tl.cumsum(1.0), D.DSL_OPERAND_INVALID, "takes a tile"),
])
def test_a_bad_axis_or_operand_is_a_coded_error(body, code, words):
    with pytest.raises(D.TesseraError) as err:
        _trace_scan(body)
    assert err.value.code is code and words in str(err.value), str(err.value)


def test_a_16_bit_tile_is_summed_in_f32():
    text = str(_trace_scan(lambda x: tl.cumsum(x.to(tl.bf16)).to(tl.f32)).module)
    assert "tile.scan sum 0" in text and "64xf32> -> !tile.tile<64xf32>" in text.split("tile.scan")[1].split("\n")[0]
