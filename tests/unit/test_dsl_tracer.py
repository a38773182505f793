"""The tracer: specs become func.func arguments, tile arithmetic becomes tile ops, meta-parameters unroll.

Kernels are module-level functions because the decorator reads their source.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import FileLineColLoc

import tessera
from tessera import tl
from tessera.ir import tile_ops as TO
from tessera.ir.parse import parse_module
from tessera.ir.verify import verify_module
from tessera.ir.types import tile_type

T = tessera.tensor


def ops_named(tk, name: str) -> list:
    return [op for op in tk.module.walk() if op.name == name]


def round_trips(tk) -> bool:
    text = tk.ir_text()
    return parse_module(text, "roundtrip.mlir").__str__() + "\n" == text


@tessera.kernel
def axpy(X, Y, alpha, *, BM=64, BN=32):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    x = tl.load(X, [m0, n0], (BM, BN))
    y = tl.load(Y, [m0, n0], (BM, BN))
    tl.store(Y, [m0, n0], x * alpha + y)


def test_signature_and_arg_order():
    tk = axpy.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"), tessera.scalar("f32"), BM=16)
    assert tk.name == "axpy" and tk.func.sym_name.data == "axpy"
    assert tk.arg_names == ("X", "Y", "alpha") and tk.params == ("X", "Y", "alpha")
    assert tk.meta == {"BM": 16, "BN": 32}
    text = tk.ir_text()
    assert "func.func @axpy(%X: memref<?x?xf32>, %Y: memref<?x?xf32>, %alpha: f32)" in text
    assert "!tile.tile<16x32xf32>" in text
    verify_module(tk.module)
    assert round_trips(tk)


def test_scalar_arguments_splat_into_tiles():
    tk = axpy.trace(T((64, 64), "f32"), T((64, 64), "f32"), 2.0)
    splats = ops_named(tk, "tile.splat")
    assert len(splats) == 1 and splats[0].result.type == tile_type((64, 32), tessera.f32.ir)
    assert "memref<64x64xf32>" in tk.ir_text()


@tessera.kernel
def bcast(X, Out, *, BM=32, BN=16):
    x = tl.load(X, [0, 0], (BM, BN))
    row_max = tl.max(x, 1)                       # BM x 1
    col = tl.sum(x, 0)                           # 1 x BN
    y = (x - row_max) * 0.5 + col
    tl.store(Out, [0, 0], tl.exp(y) + 1)


def test_broadcasting_inserts_tile_broadcast_and_reductions_keep_dims():
    tk = bcast.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    reduces = ops_named(tk, "tile.reduce")
    assert [r.result.type.get_shape() for r in reduces] == [(32, 1), (1, 16)]
    shapes = sorted(b.source.type.get_shape() for b in ops_named(tk, "tile.broadcast"))
    assert shapes == [(1, 16), (32, 1)]
    consts = {op.value.value.data for op in ops_named(tk, "tile.constant")}
    assert consts == {0.5, 1.0}
    assert all(op.result.type.element_type == tessera.f32.ir for op in ops_named(tk, "tile.constant"))
    assert round_trips(tk)


@tessera.kernel
def unrolled(X, Out, *, N_UNROLL=3, SCALE=True, BM=16):
    acc = tl.zeros((BM, BM), tl.f32)
    for i in range(N_UNROLL):                    # a Python loop over a meta int: unrolled while tracing
        acc = acc + tl.load(X, [i * BM, 0], (BM, BM))
    if SCALE:
        acc = acc * 2.0
    tl.store(Out, [0, 0], acc)


def test_meta_parameters_unroll_python_control_flow():
    three = unrolled.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    five = unrolled.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"), N_UNROLL=5, SCALE=False)
    assert len(ops_named(three, "tile.load")) == 3 and len(ops_named(three, "tile.mul")) == 1
    assert len(ops_named(five, "tile.load")) == 5 and not ops_named(five, "tile.mul")
    assert not ops_named(three, "scf.for")


def test_tracing_is_deterministic():
    specs = (T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    assert unrolled.trace(*specs).ir_text() == unrolled.trace(*specs).ir_text()


@tessera.kernel
def optional_args(X, Bias, Out, scale, *, BM=16):
    x = tl.load(X, [0, 0], (BM, BM))
    if Bias is not None:
        x = x + tl.load(Bias, [0, 0], (1, BM))
    if scale is not None:
        x = x * scale
    tl.store(Out, [0, 0], x)


def test_none_spec_drops_the_parameter():
    full = optional_args.trace(T(("M", "N"), "f32"), T((1, "N"), "f32"), T(("M", "N"), "f32"), 1.0)
    bare = optional_args.trace(T(("M", "N"), "f32"), None, T(("M", "N"), "f32"), None)
    assert full.arg_names == ("X", "Bias", "Out", "scale")
    assert bare.arg_names == ("X", "Out") and bare.params == ("X", "Bias", "Out", "scale")
    assert len(bare.func.args) == 2 and len(ops_named(bare, "tile.load")) == 1
    x, o = np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32)
    assert bare.func_args(x, None, o, None) == [x, o]
    with pytest.raises(tessera.KernelError, match="traced as None"):
        bare.func_args(x, x, o, None)


def test_numpy_and_python_values_as_specs():
    a32 = np.zeros((4, 5), np.float32)
    abf = np.zeros((4, 5), ml_dtypes.bfloat16)
    tk = axpy.trace(a32, a32, 1.5)
    assert tk.specs["X"] == T(("X.0", "X.1"), "f32")
    assert tk.specs["alpha"] == tessera.scalar("f32")
    assert "memref<?x?xf32>" in tk.ir_text()
    assert tessera.dsl.specs.spec_of(abf, "A").dtype == tessera.bf16
    assert tessera.dsl.specs.spec_of(7, "n") == tessera.scalar("index")
    assert tessera.dsl.specs.spec_of(np.int32(7), "n") == tessera.scalar("i32")


@tessera.kernel
def shapes(A, B, Out, *, BM=16):
    M, K = A.shape
    K2, N = B.shape
    rows = tl.minimum(M, BM * tl.num_programs(0))
    cols = tl.cdiv(N, BM) * BM + K2 // 2 + K % 3
    t = tl.full((BM, BM), rows, tl.i32) + cols
    tl.store(Out, [0, 0], t)


def test_symbolic_dims_are_read_once_per_symbol_and_static_dims_are_ints():
    tk = shapes.trace(T(("M", "K"), "i32"), T(("K", 8), "i32"), T(("M", 8), "i32"))
    dims = ops_named(tk, "memref.dim")
    assert len(dims) == 2  # M and K; B's K is the same symbol, B's N is static
    assert {op.source.name_hint for op in dims} == {"A"}
    assert ops_named(tk, "arith.minsi") and ops_named(tk, "arith.divsi") and ops_named(tk, "arith.remsi")
    assert ops_named(tk, "tile.splat")[0].scalar.type == tessera.i32.ir  # index -> i32 for an i32 tile
    assert round_trips(tk)


@tessera.kernel
def scalar_math(X, Out, f, *, BM=16):
    n = tl.dim(X, 0)
    half = n.to(tl.f32) * f / 2.0
    fl = tl.full((BM, BM), half, tl.f32)
    i = tl.arange((BM, 1), 0) + n
    m = tl.arange((1, BM), 1, tl.f32)
    z = tl.where(n > 4, f, -f)
    tl.store(Out, [0, 0], tl.where((i < 3) | ~(i > 5) & (i != 4), fl + m, z))


def test_scalar_arithmetic_uses_arith_and_masks_combine_with_select():
    tk = scalar_math.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"), 1.0)
    names = {op.name for op in tk.module.walk()}
    assert {"arith.index_cast", "arith.sitofp", "arith.mulf", "arith.divf", "arith.cmpi", "arith.select",
            "arith.negf", "tile.iota", "tile.convert", "tile.cmp", "tile.select"} <= names
    iotas = ops_named(tk, "tile.iota")
    assert [op.result.type.get_shape() for op in iotas] == [(16, 1), (1, 16)]
    assert round_trips(tk)


@tessera.kernel
def transposed(A, Out, *, BM=32, BK=16):
    a = tl.load(A, [0, 0], (BK, BM))
    t = a.T
    assert t.shape == (BM, BK) and t.dtype == tl.bf16 and a.to(tl.f32).dtype == tl.f32
    tl.store(Out, [0, 0], tl.dot(t, a))


def test_transpose_dot_and_attributes():
    tk = transposed.trace(T(("K", "M"), "bf16"), T(("M", "M"), "f32"))
    (mma,) = ops_named(tk, "tile.mma")
    assert mma.result.type == tile_type((32, 32), tessera.f32.ir)
    assert ops_named(tk, "tile.constant")[0].value.value.data == 0.0  # the default zero accumulator


@tessera.kernel
def helper_kernel(x, *, FACTOR=2.0):
    return x * FACTOR


@tessera.kernel
def calls_helper(X, Out, *, BM=16):
    x = tl.load(X, [0, 0], (BM, BM))
    tl.store(Out, [0, 0], helper_kernel(x, FACTOR=3.0))


def test_kernel_called_from_a_kernel_is_inlined():
    tk = calls_helper.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    assert ops_named(tk, "tile.constant")[0].value.value.data == 3.0
    assert len(list(tk.module.body.block.ops)) == 1  # one func.func, no call


def test_every_op_is_located_in_this_file():
    tk = bcast.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    for op in tk.module.walk():
        assert isinstance(op.location, FileLineColLoc), op.name
        assert op.location.filename.data == __file__, op.name
    first = bcast.fn.__code__.co_firstlineno
    lines: dict[str, int] = {}
    for op in tk.module.walk():
        lines.setdefault(op.name, op.location.line.data)
    assert lines["builtin.module"] == lines["func.func"] == first + 1  # the def line, after the decorator
    assert lines["tile.reduce"] == first + 3  # the row max, the first reduction
    assert lines["tile.store"] == lines["tile.exp"] == first + 6


def test_ir_text_with_locations():
    text = axpy.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"), 1.0).ir_text(locations=True)
    assert f'loc("{__file__}":' in text


def test_constant_like_ops_are_hoisted_and_unused_ones_dropped():
    tk = shapes.trace(T(("M", "K"), "i32"), T(("K", 8), "i32"), T(("M", 8), "i32"))
    block_ops = list(tk.func.body.block.ops)
    kinds = [op.name for op in block_ops]
    first_other = next(i for i, k in enumerate(kinds) if k not in ("arith.constant", "memref.dim",
                                                                    "tile.program_id", "tile.num_programs"))
    assert all(k not in ("arith.constant", "memref.dim") for k in kinds[first_other:])
    for op in tk.module.walk():
        if isinstance(op, (arith.ConstantOp, memref.DimOp)):
            assert op.results[0].uses, f"unused {op.name} left in the module"
    assert not any(isinstance(op, scf.ForOp) for op in tk.module.walk())


@tessera.kernel(name="axpy_named")
def named(X, Y, *, BM=16):
    tl.store(Y, [0, 0], tl.load(X, [0, 0], (BM, BM)) * 2)


def test_kernel_name_option_and_introspection():
    tk = named.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    assert tk.name == "axpy_named" and "func.func @axpy_named(" in tk.ir_text()
    assert named.params == ("X", "Y") and named.meta_names == ("BM",) and named.meta_defaults == {"BM": 16}
    assert named.__name__ == "named" and "axpy_named" in repr(named)
