"""Launch validation of the reference interpreter: every bad input is a coded error naming the
argument, raised before any output array is written."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tessera.ir import diagnostics as D
from tessera.ir.parse import parse_module
from tessera.reference import run

KERNEL = """func.func @scale(%X: memref<?x?xbf16>, %Y: memref<?x8xf32>, %s: f32, %n: i32, %i: index) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%i, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<4x8xbf16>
  %f = tile.convert %x : !tile.tile<4x8xbf16> -> !tile.tile<4x8xf32>
  %sp = tile.splat %s : f32 -> !tile.tile<4x8xf32>
  %y = tile.mul %f, %sp : !tile.tile<4x8xf32>
  tile.store %y, %Y[%i, %c0] : !tile.tile<4x8xf32> -> memref<?x8xf32>
  func.return
}"""


def good_args():
    rng = np.random.default_rng()
    x = rng.uniform(1, 2, size=(4, 8)).astype(ml_dtypes.bfloat16)
    return [x, np.zeros((4, 8), np.float32), 1.5, 3, 0]


@pytest.fixture(scope="module")
def module():
    return parse_module(KERNEL, "scale.mlir")


def expect(module, args, code: D.Code, *needles: str, grid=1, func_name=None):
    outputs = [a.copy() for a in args if isinstance(a, np.ndarray)]
    with pytest.raises(D.TesseraError) as err:
        run(module, grid, args, func_name=func_name)
    assert err.value.code is code, str(err.value)
    text = str(err.value)
    for needle in needles:
        assert needle in text, text
    for before, after in zip(outputs, [a for a in args if isinstance(a, np.ndarray)]):
        np.testing.assert_array_equal(before, after)  # nothing was written
    return text


def test_good_args_run(module):
    args = good_args()
    run(module, 1, args)
    np.testing.assert_array_equal(args[1], args[0].astype(np.float32) * np.float32(1.5))


def test_ir_text_runs_and_returns_are_recorded_per_program():
    text = """func.func @ids() -> index {
  %x = tile.program_id 0
  %y = tile.program_id 1
  %c10 = arith.constant 10 : index
  %t = arith.muli %y, %c10 : index
  %v = arith.addi %t, %x : index
  func.return %v : index
}"""
    res = run(text, (2, 3), [])
    assert res.returns == ((0,), (1,), (10,), (11,), (20,), (21,))  # axis 0 fastest
    assert res.kernel == "ids" and res.programs == 6


def test_wrong_count(module):
    expect(module, good_args()[:4], D.REF_ARG_COUNT, "@scale takes 5 arguments", "got 4")


def test_wrong_dtype_names_the_argument(module):
    args = good_args()
    args[0] = args[0].astype(np.float32)
    text = expect(module, args, D.REF_ARG_DTYPE, "argument #0 (%X) of @scale", "has element type f32",
                  "the kernel takes bf16")
    assert "hint: convert with .astype(ml_dtypes.bfloat16)" in text
    assert text.startswith("scale.mlir:1:1: error: REF_ARG_DTYPE")


def test_wrong_rank_names_the_argument(module):
    args = good_args()
    args[1] = np.zeros((4, 8, 1), np.float32)
    expect(module, args, D.REF_ARG_RANK, "argument #1 (%Y)", "rank 2", "rank 3")


def test_static_dim_mismatch(module):
    args = good_args()
    args[1] = np.zeros((4, 9), np.float32)
    expect(module, args, D.REF_ARG_SHAPE, "argument #1 (%Y)", "dim 1 is 9", "the kernel's is 8")


@pytest.mark.parametrize("pos,value,code,needle", [
    (0, [[1.0] * 8] * 4, D.REF_ARG_KIND, "is a list, not a numpy array"),
    (2, np.ones(3, np.float32), D.REF_ARG_KIND, "must be a number (f32), got ndarray"),
    (2, True, D.REF_ARG_KIND, "got bool"),
    (3, 2.5, D.REF_ARG_KIND, "must be an int (i32), got float"),
    (3, 2**31, D.REF_ARG_VALUE, "out of range [-2147483648, 2147483647] of i32"),
    (2, 1e39, D.REF_ARG_VALUE, "overflows f32"),
    (4, "0", D.REF_ARG_KIND, "must be an int (index), got str"),
])
def test_scalar_and_kind_errors(module, pos, value, code, needle):
    args = good_args()
    args[pos] = value
    expect(module, args, code, f"argument #{pos}", needle)


def test_read_only_output(module):
    args = good_args()
    args[1].setflags(write=False)
    expect(module, args, D.REF_ARG_READONLY, "argument #1 (%Y)")
    args = good_args()
    args[0].setflags(write=False)  # inputs may be read-only
    run(module, 1, args)


def test_non_contiguous_array_is_refused_as_the_compiled_lane_refuses_it(module):
    args = good_args()
    args[0] = np.asfortranarray(args[0])
    expect(module, args, D.REF_ARG_LAYOUT, "argument #0 (%X)", "is not C-contiguous", "strides [1, 4]")


def test_output_sharing_memory_with_an_input_is_refused(module):
    args = good_args()
    x = np.ones((8, 8), ml_dtypes.bfloat16)
    args[0], args[1] = x[:4], x.view(np.float32).reshape(4, 8)  # Y's 128 bytes are X's whole buffer
    expect(module, args, D.REF_ARG_ALIAS, "argument #1 (%Y) of @scale: shares memory with argument #0 (%X)")
    args = good_args()
    run(module, 1, [args[0], args[1], 1.5, 3, 0])  # separate arrays run; inputs may alias each other freely


@pytest.mark.parametrize("grid", [0, (), (1, 2, 3, 4), (2, -1), 2.0, True, "4"])
def test_bad_grid(module, grid):
    expect(module, good_args(), D.REF_GRID_INVALID, grid=grid)


def test_function_lookup():
    two = parse_module(KERNEL + "\n" + KERNEL.replace("@scale", "@other"))
    expect(two, good_args(), D.REF_FUNC_NOT_FOUND, "2 functions with bodies (@scale, @other)")
    expect(two, good_args(), D.REF_FUNC_NOT_FOUND, "no function @nope", func_name="nope")
    run(two, 1, good_args(), func_name="other")


def test_unsupported_op_is_refused_before_running():
    text = """func.func @k(%Y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %Y[%c0] : memref<4xf32>
  %two = math.cos %one : f32
  func.return
}"""
    y = np.zeros(4, np.float32)
    with pytest.raises(D.TesseraError) as err:
        run(parse_module(text, "cos.mlir"), 1, [y])
    assert err.value.code is D.REF_OP_UNSUPPORTED
    assert str(err.value).startswith("cos.mlir:5:") and "math.cos" in str(err.value)
    assert not y.any(), "the store before the unsupported op must not have run"


def test_runtime_failure_is_located_at_the_op():
    text = """func.func @k(%Y: memref<4xf32>, %i: index) {
  %one = arith.constant 1.0 : f32
  memref.store %one, %Y[%i] : memref<4xf32>
  func.return
}"""
    with pytest.raises(D.TesseraError) as err:
        run(parse_module(text, "oob.mlir"), 1, [np.zeros(4, np.float32), 9])
    assert err.value.code is D.REF_EXEC_FAILED
    assert str(err.value).startswith("oob.mlir:3:") and "outside a memref of shape [4]" in str(err.value)


def test_invalid_ir_is_rejected_by_the_verifier():
    bad = KERNEL.replace("tile.mul %f, %sp : !tile.tile<4x8xf32>", "tile.mul %f, %x : !tile.tile<4x8xf32>")
    with pytest.raises(D.TesseraError) as err:
        run(parse_module(bad), 1, good_args())
    assert err.value.code.name.startswith(("IR_", "TILE_"))


def test_unverified_wait_on_a_non_token_is_a_coded_runtime_error():
    # Only reachable with verify=False: the verifier rejects a non-token tile.wait operand first.
    text = """func.func @bad(%X: memref<?x?xf32>) {
  tile.wait %X
  func.return
}"""
    bad = parse_module(text, "bad.mlir")
    with pytest.raises(D.TesseraError) as err:
        run(bad, 1, [np.ones((2, 2), np.float32)], verify=False)
    assert err.value.code is D.REF_TOKEN_INVALID, str(err.value)
    assert "bad.mlir:2:" in str(err.value)
    with pytest.raises(D.TesseraError) as err:
        run(bad, 1, [np.ones((2, 2), np.float32)])
    assert err.value.code is not D.REF_TOKEN_INVALID
