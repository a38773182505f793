"""Traced tiles and the rules that make mixed operands legal Tile IR.

Elementwise operands meet in one dtype and one shape before an op is built:
Python numbers become `tile.constant`s of the tile's dtype, traced scalars
become `tile.splat`s (index scalars are cast to i32 for integer tiles), and
size-1 dims expand with `tile.broadcast` under numpy rules (equal rank; a dim
is equal or 1). Two tiles of different dtypes are an error naming both, never
a silent promotion.
"""

from __future__ import annotations

import math

import numpy as np

from tessera.dsl import builder as B
from tessera.dsl import dtypes as T
from tessera.dsl.errors import KernelError
from tessera.dsl.scalar import NUMBER, Scalar, convert
from tessera.dsl.values import Traced, binary_operators, reject_poison
from tessera.ir import diagnostics as D
from tessera.ir import tile_ops as TO
from tessera.ir.types import TileType, tile_type

_BINARY = {"+": TO.AddOp, "-": TO.SubOp, "*": TO.MulOp, "/": TO.DivOp, "//": TO.DivOp, "max": TO.MaxOp,
           "min": TO.MinOp}
_CMP = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}


@binary_operators("+", "-", "*", "/", "//", "<", "<=", ">", ">=", "==", "!=", "&", "|")
class Tile(Traced):
    """A traced tile value: a static shape, an element type, operators that emit tile ops."""

    __slots__ = ()

    @property
    def type(self) -> TileType:
        return self._value.type  # type: ignore[return-value]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.get_shape()

    @property
    def dtype(self) -> T.DType:
        return T.from_ir(self.type.element_type)

    @property
    def rank(self) -> int:
        return self.type.rank

    ndim = rank

    def __repr__(self) -> str:
        return f"<tile {'x'.join(map(str, self.shape))}x{self.dtype}>"

    def __len__(self) -> int:
        return self.shape[0]

    def to(self, dtype) -> "Tile":
        """Convert the element type (tile.convert; narrowing floats round to nearest even)."""
        dt = T.as_dtype(dtype)
        if dt == self.dtype:
            return self
        if dt == T.index:
            raise KernelError(D.DSL_DTYPE_INVALID, "tiles cannot hold index elements; use tl.i32")
        return unary_shape(TO.ConvertOp, self, tile_type(self.shape, dt.ir))

    @property
    def T(self) -> "Tile":
        """The transpose of a 2-D tile (tile.transpose)."""
        if self.rank != 2:
            raise KernelError(D.DSL_SHAPE_MISMATCH, f".T needs a 2-D tile, got a rank-{self.rank} tile {self!r}")
        return unary_shape(TO.TransposeOp, self, self.type.with_shape(self.shape[::-1]))

    def broadcast_to(self, shape) -> "Tile":
        return broadcast_to(self, shape)

    # --- operators -----------------------------------------------------------------------

    def _bin(self, other, sym: str, reflected: bool = False):
        reject_poison(other)
        if not isinstance(other, (Tile, Scalar, *NUMBER)):
            return NotImplemented
        a, b = elementwise_operands([self, other], f"'{sym}'")
        if reflected:
            a, b = b, a
        return binary(a, b, sym)


    def __neg__(self):
        return unary(TO.NegOp, self)

    def __abs__(self):
        return unary(TO.AbsOp, self)

    def __pos__(self):
        return self

    def __invert__(self):
        if self.dtype != T.i1:
            raise KernelError(D.DSL_UNSUPPORTED, f"'~' needs an i1 (mask) tile, got {self!r}")
        return select(self, constant(False, self.shape, T.i1), constant(True, self.shape, T.i1))

    def __iter__(self):
        raise KernelError(D.DSL_UNSUPPORTED, f"tile {self!r} is not iterable: it is one value while tracing",
                          hint="reduce with tl.sum/tl.max, or load the part you need with tl.load")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise KernelError(D.DSL_UNSUPPORTED, f"numpy's {ufunc.__name__} cannot run on tile {self!r}: numpy "
                                             "computes on the host, a tile is traced into the kernel",
                          hint=numpy_hint(ufunc.__name__))

    def __array_function__(self, func, types, args, kwargs):
        raise KernelError(D.DSL_UNSUPPORTED, f"numpy's {func.__name__} cannot run on tile {self!r}: numpy "
                                             "computes on the host, a tile is traced into the kernel",
                          hint=numpy_hint(func.__name__))

    def __getitem__(self, item):
        """numpy's new axes, `w[None, :]` / `x[:, None]` (tile.reshape); any other index is not a tile op."""
        items = item if isinstance(item, tuple) else (item,)
        full = [i for i, x in enumerate(items) if isinstance(x, slice) and x == slice(None)]
        if len(full) + sum(x is None for x in items) != len(items) or len(full) not in (0, self.rank):
            raise KernelError(D.DSL_UNSUPPORTED, f"tile {self!r} cannot be indexed or sliced with {item!r}: only "
                                                 "new axes are tile ops (None between the ':' of every dim)",
                              hint="x[None, :] / x[:, None] add an axis; load the sub-tile you need with tl.load, "
                                   "or mask with tl.where")
        dims = iter(self.shape)
        return reshape(self, tuple(1 if x is None else next(dims) for x in items) + tuple(dims))

    def reshape(self, *shape) -> "Tile":
        return reshape(self, shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape)

    def __matmul__(self, other):
        raise KernelError(D.DSL_UNSUPPORTED, "'@' is not a tile operator", hint="use tl.dot(a, b, acc)")


# numpy names -> their tl spelling, for the hint when a numpy function meets a tile
_NUMPY_TO_TL = {"exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "sqrt": "tl.sqrt", "tanh": "tl.tanh",
                "absolute": "tl.abs", "abs": "tl.abs", "maximum": "tl.maximum", "minimum": "tl.minimum",
                "fmax": "tl.maximum", "fmin": "tl.minimum", "sum": "tl.sum(x, axis)", "max": "tl.max(x, axis)",
                "amax": "tl.max(x, axis)", "min": "tl.min(x, axis)", "amin": "tl.min(x, axis)",
                "where": "tl.where", "dot": "tl.dot", "matmul": "tl.dot", "zeros": "tl.zeros", "full": "tl.full",
                "arange": "tl.arange", "broadcast_to": "tl.broadcast_to", "transpose": "x.T", "erf": "tl.erf",
                "add": "+", "subtract": "-", "multiply": "*", "divide": "/", "true_divide": "/", "negative": "-x"}


def numpy_hint(name: str) -> str:
    """The hint for numpy's `name` on a tile: its tl spelling where there is one."""
    spelled = _NUMPY_TO_TL.get(name)
    if spelled is None:
        return "use the tessera.tl functions (tl.exp, tl.sum, tl.where, ...) inside a kernel"
    return f"use {spelled} inside a kernel" if spelled.startswith(("tl.", "x.")) else \
        f"use the operator {spelled} on tiles"


# --- emission helpers -----------------------------------------------------------------------


def _result(state: B.TraceState, op) -> Tile:
    return Tile(state.emit(op).results[0], state.scope)


def unary(op_cls, x: Tile) -> Tile:
    state = B.current(op_cls.name)
    if op_cls in (TO.ExpOp, TO.Exp2Op, TO.LogOp, TO.SqrtOp, TO.RsqrtOp, TO.TanhOp, TO.ErfOp) and not x.dtype.is_float:
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"{op_cls.name.replace('tile.', 'tl.')} needs a float tile, got {x!r}",
                          hint="convert first with .to(tl.f32)")
    if x.dtype == T.i1:
        raise KernelError(D.DSL_UNSUPPORTED, f"{op_cls.name} is not defined on i1 (mask) tiles, got {x!r}",
                          hint="invert a mask with ~, or convert it for arithmetic with .to(tl.i32)")
    return _result(state, op_cls(x.ssa(state)))


def unary_shape(op_cls, x: Tile, result_type: TileType) -> Tile:
    state = B.current(op_cls.name)
    return _result(state, op_cls(x.ssa(state), result_type))


def constant(value, shape: tuple[int, ...], dtype: T.DType) -> Tile:
    """A tile.constant of `dtype` filled with `value`."""
    state = B.current("a tile constant")
    check_constant(value, dtype, "tile")
    return _result(state, TO.ConstantOp(float(value), tile_type(tuple(shape), dtype.ir)))


def check_constant(value, dtype: T.DType, what: str) -> None:
    """A Python number that `dtype` holds as it is: an integer in range for integer types (no silent
    saturation or wrap-around), a number a float can round to for float types."""
    try:
        v = float(value)
    except OverflowError:  # an int beyond the float range
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"{value} is too large for a {dtype} {what}") from None
    if dtype.is_int and not (math.isfinite(v) and v == int(v)):
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"{value!r} is not an integer, so it cannot fill a {dtype} {what}",
                          hint="convert the tile to a float type with .to(tl.f32)")
    if dtype.int_range is not None:
        lo, hi = dtype.int_range
        if not lo <= int(value) <= hi:
            raise KernelError(D.DSL_DTYPE_MISMATCH, f"{value!r} is out of range for {dtype} ({lo} to {hi})",
                              hint="use a wider type, e.g. convert the other operand with .to(tl.f32)")


def splat(s: Scalar, shape: tuple[int, ...], dtype: T.DType) -> Tile:
    """A tile.splat of a traced scalar; index/i32 scalars fill integer tiles after a cast."""
    state = B.current("a scalar splat")
    if s.dtype != dtype:
        if s.dtype.is_int and dtype.is_int and dtype != T.i1:
            s = convert(s, dtype)
        else:
            raise KernelError(D.DSL_DTYPE_MISMATCH, f"a {s.dtype} scalar meets a {dtype} tile",
                              hint=f"convert one: scalar.to(tl.{dtype.name}) or tile.to(tl.{s.dtype.name})")
    return _result(state, TO.SplatOp(s.ssa(state), tile_type(tuple(shape), dtype.ir)))


def reshape(x: Tile, shape) -> Tile:
    """The same elements in row-major order under `shape` (tile.reshape): the element count must not change."""
    shape = check_shape(shape, "reshape")
    if shape == x.shape:
        return x
    if math.prod(shape) != math.prod(x.shape):
        raise KernelError(D.DSL_SHAPE_MISMATCH, f"cannot reshape {x!r} to {shape}: {math.prod(x.shape)} elements "
                                                f"into {math.prod(shape)}",
                          hint="a reshape keeps the element count; add a size-1 axis with x[None, :] or "
                               "tl.expand_dims, widen one with tl.broadcast_to")
    return unary_shape(TO.ReshapeOp, x, x.type.with_shape(shape))


def broadcast_to(x: Tile, shape) -> Tile:
    shape = check_shape(shape, "broadcast_to")
    if x.shape == shape:
        return x
    if len(shape) != x.rank or any(a not in (1, b) for a, b in zip(x.shape, shape)):
        raise KernelError(D.DSL_SHAPE_MISMATCH, f"cannot broadcast {x!r} to {shape}: ranks must match and only "
                                                "size-1 dims expand")
    return unary_shape(TO.BroadcastOp, x, x.type.with_shape(shape))


def check_shape(shape, what: str) -> tuple[int, ...]:
    """A static tile shape: an int or a non-empty tuple of positive Python ints."""
    if isinstance(shape, (int, np.integer, Scalar)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        dims = None
    if not dims or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d <= 0 for d in dims):
        bad = next((d for d in (dims or ()) if isinstance(d, Scalar)), None)
        extra = " (a traced scalar: a tensor dim that is symbolic in the spec?)" if bad is not None else ""
        raise KernelError(D.DSL_SHAPE_INVALID, f"{what}: shape {shape!r} is not a tuple of positive ints{extra}")
    return tuple(int(d) for d in dims)


def broadcast_shape(shapes: list[tuple[int, ...]], what: str) -> tuple[int, ...]:
    ranks = {len(s) for s in shapes}
    if len(ranks) != 1:
        raise KernelError(D.DSL_SHAPE_MISMATCH, f"{what}: operand shapes {' and '.join(map(str, shapes))} have "
                                                "different ranks",
                          hint="tiles of one op share a rank; reductions keep the reduced axis as size 1")
    out = []
    for axis, dims in enumerate(zip(*shapes)):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise KernelError(D.DSL_SHAPE_MISMATCH, f"{what}: operand shapes {' and '.join(map(str, shapes))} "
                                                    f"differ in dim {axis} ({' vs '.join(map(str, sorted(big)))})")
        out.append(big.pop() if big else 1)
    return tuple(out)


def elementwise_operands(values: list, what: str, shape_only: list[Tile] = ()) -> list[Tile]:
    """Tiles of one dtype and one shape for `values` (tiles, traced scalars, numbers).

    `shape_only` tiles (a where() condition) join the shape rule but not the dtype rule.
    """
    for v in values:
        reject_poison(v)
        if not isinstance(v, (Tile, Scalar, *NUMBER)):
            raise KernelError(D.DSL_OPERAND_INVALID, f"{what}: {type(v).__name__} {v!r} is not a tile, scalar or "
                                                     "number")
    tiles = [v for v in values if isinstance(v, Tile)]
    if not tiles and not shape_only:
        raise KernelError(D.DSL_OPERAND_INVALID, f"{what}: needs at least one tile operand")
    dtypes = []
    for t in tiles:
        if t.dtype not in dtypes:
            dtypes.append(t.dtype)
    if not tiles:  # tl.where(mask, 1.0, 0.0): the values take the mask's shape and their own type
        scalars = [v.dtype for v in values if isinstance(v, Scalar)]
        dtypes = list(dict.fromkeys(scalars)) or [T.f32 if any(isinstance(v, float) for v in values) else T.i32]
    if len(dtypes) > 1:
        a, b = dtypes[0], dtypes[1]
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"{what}: operands are {a} and {b} tiles",
                          hint=f"convert one explicitly: the {a} operand with .to(tl.{b.name}), or the {b} "
                               f"operand with .to(tl.{a.name})")
    dtype = dtypes[0]
    shape = broadcast_shape([t.shape for t in [*tiles, *shape_only]], what)
    out = []
    for v in values:
        if isinstance(v, Tile):
            out.append(broadcast_to(v, shape))
        elif isinstance(v, Scalar):
            out.append(splat(v, shape, dtype))
        else:
            out.append(constant(v, shape, dtype))
    return out


def binary(a: Tile, b: Tile, sym: str) -> Tile:
    """The tile op for `sym` on two tiles already of one dtype and shape."""
    state = B.current(f"tile '{sym}'")
    dt = a.dtype
    if sym in _CMP:
        return _result(state, TO.CmpOp(_CMP[sym], a.ssa(state), b.ssa(state)))
    if sym in ("&", "|"):
        if dt != T.i1:
            raise KernelError(D.DSL_UNSUPPORTED, f"'{sym}' combines i1 (mask) tiles, not {dt} tiles")
        if sym == "&":
            return select(a, b, constant(False, a.shape, T.i1))
        return select(a, constant(True, a.shape, T.i1), b)
    if sym == "/" and dt.is_int:
        raise KernelError(D.DSL_UNSUPPORTED, f"'/' on {dt} tiles is not defined",
                          hint="use // for integer division (C semantics), or convert with .to(tl.f32)")
    if sym == "//" and dt.is_float:
        raise KernelError(D.DSL_UNSUPPORTED, f"'//' on {dt} tiles is not defined", hint="use / on float tiles")
    if dt == T.i1:
        raise KernelError(D.DSL_UNSUPPORTED, f"'{sym}' is not defined on i1 (mask) tiles",
                          hint="combine masks with & and |; select values with tl.where")
    return _result(state, _BINARY[sym](a.ssa(state), b.ssa(state)))


def select(cond: Tile, x: Tile, y: Tile) -> Tile:
    state = B.current("tl.where")
    if cond.dtype != T.i1:
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"tl.where: the condition is a {cond.dtype} tile, not an i1 mask",
                          hint="compare to get a mask, e.g. tl.where(x > 0, x, 0.0)")
    cond = broadcast_to(cond, x.shape)
    return _result(state, TO.SelectOp(cond.ssa(state), x.ssa(state), y.ssa(state)))

