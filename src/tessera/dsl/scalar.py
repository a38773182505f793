"""Traced scalars (index, i32, f32, i1) and their arithmetic through the arith dialect.

Integer division and remainder follow C (arith.divsi / arith.remsi, as in
Triton): the same as Python's `//` and `%` for the non-negative values that
index math uses. index and i32 mix freely (the i32 side is cast to index);
integers and floats do not mix implicitly: `.to(tl.f32)` converts.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr

from tessera.dsl import builder as B
from tessera.dsl import dtypes as T
from tessera.dsl.errors import KernelError
from tessera.dsl.values import Traced, binary_operators, reject_poison
from tessera.ir import diagnostics as D

NUMBER = (int, float, np.integer, np.floating, bool, np.bool_)

_INT_OPS = {"+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp, "//": arith.DivSIOp, "%": arith.RemSIOp,
            "min": arith.MinSIOp, "max": arith.MaxSIOp}
_FLOAT_OPS = {"+": arith.AddfOp, "-": arith.SubfOp, "*": arith.MulfOp, "/": arith.DivfOp,
              "min": arith.MinimumfOp, "max": arith.MaximumfOp}
_INT_CMP = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}
_FLOAT_CMP = {"<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "==": "oeq", "!=": "une"}


def const_index(state: B.TraceState, v: int):
    return constant(state, v, T.index)._value


def constant(state: B.TraceState, v, dtype: T.DType) -> "Scalar":
    """A hoisted, cached arith.constant of `dtype`."""
    if dtype.is_int:
        if isinstance(v, (float, np.floating)) and not (math.isfinite(v) and v == int(v)):
            raise KernelError(D.DSL_DTYPE_MISMATCH, f"{v!r} is not an integer, so it cannot be a {dtype} value",
                              hint="convert the other operand to a float type with .to(tl.f32)")
        lo, hi = dtype.int_range
        if not lo <= int(v) <= hi:  # xDSL's IntegerAttr would raise a bare VerifyException; index would wrap
            raise KernelError(D.DSL_DTYPE_MISMATCH, f"{v!r} is out of range for {dtype} ({lo} to {hi})",
                              hint="use a wider type, or keep the value in range")
        attr = IntegerAttr(int(v), dtype.ir)
        key = ("const", dtype.name, int(v))
    else:
        try:
            fv = float(np.asarray(v, dtype=dtype.numpy)) if dtype.numpy is not None else float(v)
        except OverflowError:  # an int beyond the float range
            raise KernelError(D.DSL_DTYPE_MISMATCH, f"{v} is too large for a {dtype} value") from None
        attr = FloatAttr(fv, dtype.ir)
        key = ("const", dtype.name, repr(fv))
    op = state.hoisted(key, lambda: arith.ConstantOp(attr))
    return Scalar(op.results[0], state.root)


def _dtype_constant(dtype: T.DType, value) -> "Scalar":
    """`tl.index(0)`, `tl.f32(2.5)`: a dtype called in a kernel body is a constant of that type."""
    return constant(B.current(f"tl.{dtype.name}(...)"), value, dtype)


T.make_constants_with(_dtype_constant)


@binary_operators("+", "-", "*", "/", "//", "%", "<", "<=", ">", ">=", "==", "!=")
class Scalar(Traced):
    """A traced index/i32/f32/i1 scalar: program ids, symbolic sizes, loop counters, scalar arguments."""

    __slots__ = ()

    @property
    def dtype(self) -> T.DType:
        return T.from_ir(self._value.type)

    def __repr__(self) -> str:
        return f"<scalar {self.dtype}>"

    def to(self, dtype) -> "Scalar":
        """Convert: index<->i32 (index_cast), int->float (sitofp), float->int (fptosi), float widths (extf/truncf)."""
        return convert(self, T.as_dtype(dtype))

    # --- operators: a Tile on the other side handles mixed tile/scalar arithmetic ----

    def _bin(self, other, sym: str, reflected: bool = False):
        reject_poison(other)
        if isinstance(other, Traced) and not isinstance(other, Scalar):  # a Tile: its operator splats this scalar
            return NotImplemented
        a, b = unify(self, other, sym)
        if reflected:
            a, b = b, a
        return binary(a, b, sym)


    def __neg__(self):
        state = B.current("scalar negation")
        if self.dtype.is_float:
            return Scalar(state.emit(arith.NegfOp(self.ssa(state))).results[0], state.scope)
        return binary(constant(state, 0, self.dtype), self, "-")

    def __pos__(self):
        return self


def convert(s: Scalar, dt: T.DType) -> Scalar:
    src = s.dtype
    if dt == src:
        return s
    state = B.current("Scalar.to")
    if src == T.i1 or dt == T.i1:
        raise KernelError(D.DSL_UNSUPPORTED, f"converting a {src} scalar to {dt} is not supported",
                          hint="compare (x != 0) to get an i1 value; select between numbers with tl.where")
    v = s.ssa(state)

    def emit(op):
        return state.emit(op).results[0]

    if src.is_int and dt.is_int:
        v = emit(arith.IndexCastOp(v, dt.ir))
    elif src.is_int:
        if src == T.index:
            v = emit(arith.IndexCastOp(v, T.i32.ir))
        v = emit(arith.SIToFPOp(v, dt.ir))
    elif dt.is_int:
        v = emit(arith.FPToSIOp(v, T.i32.ir))
        if dt == T.index:
            v = emit(arith.IndexCastOp(v, T.index.ir))
    elif _width(dt) == _width(src):  # bf16 <-> f16 goes through f32
        v = emit(arith.TruncFOp(emit(arith.ExtFOp(v, T.f32.ir)), dt.ir))
    else:
        v = emit(arith.TruncFOp(v, dt.ir) if _width(dt) < _width(src) else arith.ExtFOp(v, dt.ir))
    return Scalar(v, state.scope)


def _width(d: T.DType) -> int:
    return {"bf16": 16, "f16": 16, "f32": 32, "f64": 64}[d.name]


def unify(a: Scalar, b, sym: str) -> tuple[Scalar, Scalar]:
    """Bring a scalar operand pair to one dtype: numbers become constants, i32 meets index as index."""
    state = B.current(f"scalar '{sym}'")
    if isinstance(b, NUMBER):
        return a, constant(state, b, a.dtype)
    if not isinstance(b, Scalar):
        raise KernelError(D.DSL_OPERAND_INVALID, f"cannot apply '{sym}' to a {a.dtype} scalar and "
                                                 f"{type(b).__name__} {b!r}")
    da, db = a.dtype, b.dtype
    if da == db:
        return a, b
    if {da, db} == {T.index, T.i32}:
        return convert(a, T.index), convert(b, T.index)
    raise KernelError(D.DSL_DTYPE_MISMATCH, f"'{sym}' mixes a {da} scalar and a {db} scalar",
                      hint=f"convert one explicitly, e.g. x.to(tl.{db.name}) or y.to(tl.{da.name})")


def binary(a: Scalar, b: Scalar, sym: str) -> Scalar:
    state = B.current(f"scalar '{sym}'")
    dt = a.dtype
    if dt == T.i1 and sym not in ("==", "!="):
        raise KernelError(D.DSL_UNSUPPORTED, f"'{sym}' on i1 scalars is not supported",
                          hint="select with tl.where(cond, x, y)")
    if sym in _INT_CMP:
        if dt.is_float:
            op = arith.CmpfOp(a.ssa(state), b.ssa(state), _FLOAT_CMP[sym])
        else:
            op = arith.CmpiOp(a.ssa(state), b.ssa(state), _INT_CMP[sym])
        return Scalar(state.emit(op).results[0], state.scope)
    table = _FLOAT_OPS if dt.is_float else _INT_OPS
    if sym not in table:
        hint = "use // for integer division, or convert with .to(tl.f32)" if sym == "/" else \
            "// and % are integer operations; use / on floats"
        raise KernelError(D.DSL_UNSUPPORTED, f"'{sym}' is not defined on {dt} scalars", hint=hint)
    return Scalar(state.emit(table[sym](a.ssa(state), b.ssa(state))).results[0], state.scope)


def select(cond: Scalar, x, y) -> Scalar:
    """arith.select between two scalars (numbers take the other side's dtype)."""
    state = B.current("tl.where")
    if cond.dtype != T.i1:
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"tl.where: the condition is a {cond.dtype} scalar, not i1",
                          hint="compare to get a condition, e.g. tl.where(x > 0, x, 0)")
    if isinstance(x, NUMBER) and isinstance(y, NUMBER):
        raise KernelError(D.DSL_OPERAND_INVALID, "tl.where on a scalar condition needs a traced scalar on one side")
    if isinstance(x, NUMBER):
        y, x = unify(y, x, "where")
    else:
        x, y = unify(x, y, "where")
    op = arith.SelectOp(cond.ssa(state), x.ssa(state), y.ssa(state))
    return Scalar(state.emit(op).results[0], state.scope)
