"""Scalar semantics: arith on index/iN/f32 values, math on float scalars, memref.dim/load/store.

xDSL's arith implementations are correct for `index` and `iN` integer math
(they wrap to the type's width) and for comparisons, so they are reused. What
does not fit a GPU kernel is overridden:

* float results: xDSL computes in Python (f64) precision; here every float
  result is rounded to its type (f32, and via f32 for bf16/f16), as the GPU
  would hold it;
* i1 results are Python bools (xDSL's signed 1-bit view turns `true` into -1);
* ops xDSL lacks (divf, negf, ceildivsi, max/min, casts, ...) are added.

Memrefs are the caller's numpy arrays, so memref.dim/load/store read them directly.
"""

from __future__ import annotations

import math as pymath

import numpy as np
from xdsl.dialects import arith, math, memref
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.interpreters.arith import ArithFunctions
from xdsl.ir import Attribute
from xdsl.utils.comparisons import to_signed, to_unsigned

from tessera.reference.numerics import erf
from tessera.reference.values import is_float_dtype, round_scalar


def _width(interpreter: Interpreter, t: Attribute) -> int:
    return interpreter.index_bitwidth if isinstance(t, IndexType) else t.width.data


def wrap_int(interpreter: Interpreter, value: int, t: Attribute):
    """`value` wrapped to integer type `t` (two's complement); i1 as a Python bool."""
    if isinstance(t, IntegerType) and t.width.data == 1:
        return bool(value & 1)
    return to_signed(value, _width(interpreter, t))


def _ieee_div(x: float, y: float) -> float:
    if y == 0.0:
        if x != x or x == 0.0:
            return pymath.nan
        return pymath.copysign(pymath.inf, x) * pymath.copysign(1.0, y)
    return x / y


def _float_binary(fn):
    def run(self, interpreter: Interpreter, op, args: PythonValues) -> PythonValues:
        return (round_scalar(fn(args[0], args[1]), op.result.type),)
    return run


def _int_binary(fn, unsigned: bool = False):
    def run(self, interpreter: Interpreter, op, args: PythonValues) -> PythonValues:
        t = op.result.type
        w = _width(interpreter, t)
        conv = to_unsigned if unsigned else to_signed
        return (wrap_int(interpreter, fn(conv(int(args[0]), w), conv(int(args[1]), w)), t),)
    return run


def _ceildiv(x: int, y: int) -> int:
    return -((-x) // y)


def _truncdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


def _num_max(x: float, y: float) -> float:
    return y if x != x else x if y != y else max(x, y)


def _num_min(x: float, y: float) -> float:
    return y if x != x else x if y != y else min(x, y)


def _to_int_sat(value: float, t: Attribute, interpreter: Interpreter, unsigned: bool) -> int:
    """Truncate toward zero and saturate to the type's range (nan -> 0), like tile.convert."""
    if value != value:
        return 0
    w = _width(interpreter, t)
    lo, hi = (0, (1 << w) - 1) if unsigned else (-(1 << (w - 1)), (1 << (w - 1)) - 1)
    if pymath.isinf(value):
        return hi if value > 0 else lo
    return wrap_int(interpreter, min(max(int(value), lo), hi), t)


@register_impls
class ArithRefFunctions(ArithFunctions):
    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        if isinstance(op.value, FloatAttr):
            return (round_scalar(op.value.value.data, op.result.type),)
        if not isinstance(op.value, IntegerAttr):
            raise NotImplementedError(f"arith.constant of {op.value} (only scalar int/float constants)")
        return (wrap_int(interpreter, op.value.value.data, op.result.type),)

    run_addf = impl(arith.AddfOp)(_float_binary(lambda x, y: x + y))
    run_subf = impl(arith.SubfOp)(_float_binary(lambda x, y: x - y))
    run_mulf = impl(arith.MulfOp)(_float_binary(lambda x, y: x * y))
    run_divf = impl(arith.DivfOp)(_float_binary(_ieee_div))
    run_maxnumf = impl(arith.MaxnumfOp)(_float_binary(_num_max))
    run_minnumf = impl(arith.MinnumfOp)(_float_binary(_num_min))

    @impl(arith.NegfOp)
    def run_negf(self, interpreter: Interpreter, op: arith.NegfOp, args: PythonValues):
        return (-args[0],)

    run_andi = impl(arith.AndIOp)(_int_binary(lambda x, y: x & y))
    run_ori = impl(arith.OrIOp)(_int_binary(lambda x, y: x | y))
    run_xori = impl(arith.XOrIOp)(_int_binary(lambda x, y: x ^ y))
    run_divui = impl(arith.DivUIOp)(_int_binary(lambda x, y: x // y, unsigned=True))
    run_remui = impl(arith.RemUIOp)(_int_binary(lambda x, y: x % y, unsigned=True))
    run_ceildivsi = impl(arith.CeilDivSIOp)(_int_binary(_ceildiv))
    run_ceildivui = impl(arith.CeilDivUIOp)(_int_binary(_ceildiv, unsigned=True))
    run_divsi = impl(arith.DivSIOp)(_int_binary(_truncdiv))
    run_maxsi = impl(arith.MaxSIOp)(_int_binary(max))
    run_minsi = impl(arith.MinSIOp)(_int_binary(min))
    run_maxui = impl(arith.MaxUIOp)(_int_binary(max, unsigned=True))
    run_minui = impl(arith.MinUIOp)(_int_binary(min, unsigned=True))
    run_shrui = impl(arith.ShRUIOp)(_int_binary(lambda x, y: x >> y, unsigned=True))

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interpreter: Interpreter, op, args: PythonValues):
        return (round_scalar(float(int(args[0])), op.result.type),)

    @impl(arith.UIToFPOp)
    def run_uitofp(self, interpreter: Interpreter, op, args: PythonValues):
        w = _width(interpreter, op.input.type)
        return (round_scalar(float(to_unsigned(int(args[0]), w)), op.result.type),)

    @impl(arith.FPToSIOp)
    def run_fptosi(self, interpreter: Interpreter, op, args: PythonValues):
        return (_to_int_sat(args[0], op.result.type, interpreter, unsigned=False),)

    @impl(arith.FPToUIOp)
    def run_fptoui(self, interpreter: Interpreter, op, args: PythonValues):
        return (_to_int_sat(args[0], op.result.type, interpreter, unsigned=True),)

    @impl(arith.ExtFOp)
    def run_extf(self, interpreter: Interpreter, op, args: PythonValues):
        return (args[0],)

    @impl(arith.TruncFOp)
    def run_truncf(self, interpreter: Interpreter, op, args: PythonValues):
        return (round_scalar(args[0], op.result.type),)

    @impl(arith.ExtSIOp)
    def run_extsi(self, interpreter: Interpreter, op, args: PythonValues):
        return (wrap_int(interpreter, -1 if args[0] is True else int(args[0]), op.result.type),)

    @impl(arith.ExtUIOp)
    def run_extui(self, interpreter: Interpreter, op, args: PythonValues):
        w = _width(interpreter, op.input.type)
        return (wrap_int(interpreter, to_unsigned(int(args[0]), w), op.result.type),)

    @impl(arith.TruncIOp)
    def run_trunci(self, interpreter: Interpreter, op, args: PythonValues):
        return (wrap_int(interpreter, int(args[0]), op.result.type),)


def _math_unary(fn):
    def run(self, interpreter: Interpreter, op, args: PythonValues) -> PythonValues:
        with np.errstate(all="ignore"):
            return (round_scalar(float(fn(np.float64(args[0]))), op.result.type),)
    return run


@register_impls
class MathRefFunctions(InterpreterFunctions):
    """math.* on float scalars, computed in f64 and rounded to the result type."""

    run_exp = impl(math.ExpOp)(_math_unary(np.exp))
    run_exp2 = impl(math.Exp2Op)(_math_unary(np.exp2))
    run_log = impl(math.LogOp)(_math_unary(np.log))
    run_log2 = impl(math.Log2Op)(_math_unary(np.log2))
    run_sqrt = impl(math.SqrtOp)(_math_unary(np.sqrt))
    run_rsqrt = impl(math.RsqrtOp)(_math_unary(lambda x: 1.0 / np.sqrt(x)))
    run_tanh = impl(math.TanhOp)(_math_unary(np.tanh))
    run_erf = impl(math.ErfOp)(_math_unary(lambda x: erf(np.asarray(x))[()]))
    run_absf = impl(math.AbsFOp)(_math_unary(np.abs))


def _element(array: np.ndarray, indices) -> tuple[int, ...]:
    """The in-bounds element index (memref.load/store past the edge is an error, not numpy wrap-around)."""
    idx = tuple(indices)
    if len(idx) != array.ndim or any(not 0 <= i < n for i, n in zip(idx, array.shape)):
        raise IndexError(f"index {list(idx)} is outside a memref of shape {list(array.shape)}")
    return idx


def _python_scalar(value, dtype: np.dtype):
    if dtype == np.bool_:
        return bool(value)
    return float(value) if is_float_dtype(dtype) else int(value)


@register_impls
class MemRefRefFunctions(InterpreterFunctions):
    """memref.dim/load/store on the caller's numpy arrays."""

    @impl(memref.DimOp)
    def run_dim(self, interpreter: Interpreter, op: memref.DimOp, args: PythonValues):
        array, dim = args
        return (array.shape[dim],)

    @impl(memref.LoadOp)
    def run_load(self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues):
        array, *indices = args
        return (_python_scalar(array[_element(array, indices)], array.dtype),)

    @impl(memref.StoreOp)
    def run_store(self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues):
        value, array, *indices = args
        array[_element(array, indices)] = value
        return ()
