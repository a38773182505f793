"""`tessera.tl`: the operations a kernel body calls. Each one emits Tile IR into the active trace.

Tiles have static shapes; tensors are the kernel's memref arguments; scalars
are index/i32/f32 values (program ids, sizes, loop counters, scalar
arguments). Reductions keep the reduced axis as size 1 (`tl.sum(x, 1)` of a
128x64 tile is 128x1), so the result broadcasts back against `x`.
Everything here fails with a coded `KernelError` at the calling line.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from tessera.dsl import builder as B
from tessera.dsl import dtypes as _T
from tessera.dsl.dtypes import bf16, f16, f32, f64, i1, i32, index  # noqa: F401 - the namespace's dtypes
from tessera.dsl.errors import KernelError
from tessera.dsl.loops import range_ as range  # noqa: A001 - tl.range mirrors Python's range
from tessera.dsl.scalar import NUMBER, Scalar, binary as _scalar_binary, constant as _scalar_constant, \
    convert as _scalar_convert, select as _scalar_select, unify as _unify
from tessera.dsl.tensor_arg import Tensor
from tessera.dsl.tile import Tile, binary as _tile_binary, broadcast_to as _broadcast_to, check_shape, constant, \
    elementwise_operands, select as _tile_select, splat, unary
from tessera.dsl.values import reject_poison
from tessera.ir import diagnostics as D
from tessera.ir import tile_ops as TO
from tessera.ir.tile_ops import MMA_INPUTS
from tessera.ir.types import tile_type

bfloat16, float16, float32, float64, int32 = bf16, f16, f32, f64, i32

__all__ = ["bf16", "f16", "f32", "f64", "i1", "i32", "index", "program_id", "num_programs", "load", "store",
           "atomic_add", "dot", "zeros", "full", "arange", "iota", "where", "exp", "exp2", "log", "sqrt", "rsqrt",
           "tanh", "erf", "abs", "sigmoid", "maximum", "minimum", "sum", "max", "min", "cumsum", "broadcast_to",
           "reshape", "expand_dims", "cdiv", "dim", "range", "Tile", "Scalar", "Tensor"]


def _tile(x, what: str) -> Tile:
    reject_poison(x)
    if not isinstance(x, Tile):
        raise KernelError(D.DSL_OPERAND_INVALID, f"{what} takes a tile, got {type(x).__name__} {x!r}")
    return x


def _tensor(x, what: str) -> Tensor:
    reject_poison(x)
    if not isinstance(x, Tensor):
        extra = " (an optional argument traced as None)" if x is None else ""
        raise KernelError(D.DSL_OPERAND_INVALID, f"{what} takes a tensor argument, got {x!r}{extra}")
    return x


def _axis(axis, rank: int, what: str) -> int:
    if isinstance(axis, builtins.bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        raise KernelError(D.DSL_AXIS_INVALID, f"{what}: axis {axis!r} is out of range for a rank-{rank} tile")
    return axis % rank


# --- the launch grid ------------------------------------------------------------------------


def _grid_query(op_cls, axis, what: str) -> Scalar:
    state = B.current(what)
    if isinstance(axis, builtins.bool) or not isinstance(axis, int) or axis not in (0, 1, 2):
        raise KernelError(D.DSL_AXIS_INVALID, f"{what}: axis {axis!r} is not 0, 1 or 2")
    op = state.hoisted((op_cls.name, axis), lambda: op_cls(axis))
    return Scalar(op.results[0], state.root)


def program_id(axis: int) -> Scalar:
    """This program's coordinate along grid axis 0, 1 or 2 (an index scalar)."""
    return _grid_query(TO.ProgramIdOp, axis, "tl.program_id")


def num_programs(axis: int) -> Scalar:
    """The grid's extent along axis 0, 1 or 2 (an index scalar)."""
    return _grid_query(TO.NumProgramsOp, axis, "tl.num_programs")


# --- global memory -------------------------------------------------------------------------------


def _offsets(state: B.TraceState, t: Tensor, offsets, rank: int, what: str) -> list:
    if not isinstance(offsets, (list, tuple)):
        offsets = [offsets]
    if len(offsets) != t.rank:
        raise KernelError(D.DSL_OFFSETS_INVALID,
                          f"{what}: {len(offsets)} offset(s) given for the rank-{t.rank} tensor '{t.name}' "
                          f"{list(t.spec.shape)}; give one offset per dim (the tile covers the trailing {rank} dim(s))")
    out = []
    for i, o in enumerate(offsets):
        reject_poison(o)
        if isinstance(o, (int, np.integer)) and not isinstance(o, builtins.bool):
            out.append(_scalar_constant(state, int(o), index).ssa(state))
        elif isinstance(o, Scalar) and o.dtype in (index, i32):
            out.append(_scalar_convert(o, index).ssa(state))
        else:
            raise KernelError(D.DSL_OFFSETS_INVALID, f"{what}: offset #{i} is {o!r}; offsets are ints or "
                                                     "index/i32 scalars")
    return out


def load(tensor: Tensor, offsets, shape, padding: float = 0.0, *, mask=None, other=None) -> Tile:
    """Read a tile of `shape` whose origin is `offsets` (one per tensor dim; the tile covers the trailing dims).

    Elements past the tensor's edge read `padding` (0.0 by default; -inf and
    nan are allowed for float tensors), so ragged edges need no masks.
    mask / other (Triton's): where the i1 tile `mask` is false the result is
    `other` (a number, scalar or tile; `padding` by default). Every load is
    bounds-checked, so the mask decides values, never whether memory is safe.
    """
    if mask is not None or other is not None:
        if mask is None:
            raise KernelError(D.DSL_OPERAND_INVALID, "tl.load: other= without mask= has nothing to replace",
                              hint="pass mask=<i1 tile>, or use padding= for the elements past the edge")
        x = load(tensor, offsets, shape, padding)
        m = _mask(mask, x, "tl.load")
        return where(m, x, padding if other is None else other)
    t = _tensor(tensor, "tl.load")
    state = B.current("tl.load")
    shape = check_shape(shape, "tl.load")
    if len(shape) > t.rank:
        raise KernelError(D.DSL_OFFSETS_INVALID, f"tl.load: a rank-{len(shape)} tile cannot come from the "
                                                 f"rank-{t.rank} tensor '{t.name}'")
    offs = _offsets(state, t, offsets, len(shape), "tl.load")
    if not isinstance(padding, NUMBER):
        raise KernelError(D.DSL_OPERAND_INVALID, f"tl.load: padding must be a Python number, got {padding!r}")
    pad = float(padding)
    if t.dtype.is_int and not (math.isfinite(pad) and pad == int(pad)):
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"tl.load: padding {padding!r} is not a {t.dtype} value")
    op = TO.LoadOp(t.ssa(state), offs, tile_type(shape, t.dtype.ir), pad)
    return Tile(state.emit(op).results[0], state.scope)


def _write(tensor, offsets, value, mask, what: str):
    """(tensor, value tile, builder state, offsets, mask tile or None) of a store-like call, checked alike."""
    t = _tensor(tensor, what)
    v = _tile(value, what)
    state = B.current(what)
    if v.rank > t.rank:
        raise KernelError(D.DSL_OFFSETS_INVALID, f"{what}: a rank-{v.rank} tile cannot go into the "
                                                 f"rank-{t.rank} tensor '{t.name}'")
    if v.dtype != t.dtype:
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"{what}: the tile is {v.dtype} but tensor '{t.name}' holds "
                                                f"{t.dtype}", hint=f"convert the tile with .to({t.name}.dtype)")
    offs = _offsets(state, t, offsets, v.rank, what)
    return t, v, state, offs, None if mask is None else _mask(mask, v, what)


def store(tensor: Tensor, offsets, value: Tile, *, mask=None) -> None:
    """Write `value` with its origin at `offsets`; elements past the tensor's edge are dropped, and with `mask`
    (an i1 tile of value's shape, or one that broadcasts to it) so are those where the mask is false: memory
    there is not written (tile.masked_store)."""
    t, v, state, offs, m = _write(tensor, offsets, value, mask, "tl.store")
    if m is None:
        state.emit(TO.StoreOp(v.ssa(state), t.ssa(state), offs))
    else:
        state.emit(TO.MaskedStoreOp(v.ssa(state), m.ssa(state), t.ssa(state), offs))


def atomic_add(tensor: Tensor, offsets, value: Tile, *, mask=None) -> None:
    """Add `value` into the tensor at `offsets` atomically (tile.atomic_add: every program may add into the same
    elements, in any order); elements past the edge, or where `mask` is false, add nothing. f32, f64 or i32.
    Unlike Triton's it returns nothing (the old values are not read back)."""
    t = _tensor(tensor, "tl.atomic_add")
    if t.dtype.name not in TO.ATOMIC_TYPES:
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"tl.atomic_add adds {', '.join(TO.ATOMIC_TYPES)} tensors; "
                                                f"'{t.name}' holds {t.dtype}",
                          hint="accumulate in an f32 tensor and convert once at the end")
    t, v, state, offs, m = _write(tensor, offsets, value, mask, "tl.atomic_add")
    state.emit(TO.AtomicAddOp(v.ssa(state), t.ssa(state), offs, None if m is None else m.ssa(state)))


def _mask(mask, like: Tile, what: str) -> Tile:
    """`mask` as an i1 tile of `like`'s shape (a size-1 dim broadcasts; a scalar i1 fills it)."""
    reject_poison(mask)
    if isinstance(mask, Scalar) and mask.dtype == i1:
        return splat(mask, like.shape, i1)
    if not isinstance(mask, Tile) or mask.dtype != i1:
        raise KernelError(D.DSL_OPERAND_INVALID, f"{what}: mask must be an i1 tile (a comparison), got {mask!r}",
                          hint="e.g. mask=tl.arange(0, BLOCK) < n")
    try:
        return _broadcast_to(mask, like.shape)
    except KernelError:
        raise KernelError(D.DSL_SHAPE_MISMATCH, f"{what}: mask {mask!r} does not broadcast to the tile's shape "
                                                f"{like.shape}", hint="build the mask with the tile's shape") from None


# --- compute ---------------------------------------------------------------------------------------


def dot(a: Tile, b: Tile, acc: Tile | None = None) -> Tile:
    """acc + a @ b (tile.mma): a is MxK, b is KxN, acc MxN (f32 zeros when omitted).

    a and b share bf16, f16 or f32; the accumulator is f32 (or f16 for f16
    inputs). Convert operands explicitly; nothing is promoted.
    """
    a, b = _tile(a, "tl.dot"), _tile(b, "tl.dot")
    if a.rank != 2 or b.rank != 2:
        raise KernelError(D.DSL_SHAPE_MISMATCH, f"tl.dot takes 2-D tiles, got {a!r} and {b!r}")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise KernelError(D.DSL_SHAPE_MISMATCH, f"tl.dot: a is {m}x{k} but b is {k2}x{n}: inner dims {k} and {k2} "
                                                "differ")
    if a.dtype != b.dtype:
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"tl.dot: a is {a.dtype} but b is {b.dtype}",
                          hint=f"convert one: b.to(tl.{a.dtype.name}) or a.to(tl.{b.dtype.name})")
    if a.dtype.name not in MMA_INPUTS:
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"tl.dot: {a.dtype} inputs are not supported (bf16, f16 or f32)")
    if acc is None:
        acc = zeros((m, n), f32)
    acc = _tile(acc, "tl.dot (acc)")
    if acc.shape != (m, n):
        raise KernelError(D.DSL_SHAPE_MISMATCH, f"tl.dot: a@b is {m}x{n} but acc is "
                                                f"{'x'.join(map(str, acc.shape))}")
    if acc.dtype.name not in MMA_INPUTS[a.dtype.name]:
        raise KernelError(D.DSL_DTYPE_MISMATCH, f"tl.dot: a {acc.dtype} accumulator cannot take {a.dtype} inputs",
                          hint="accumulate in f32: tl.zeros((M, N), tl.f32)")
    state = B.current("tl.dot")
    return Tile(state.emit(TO.MmaOp(a.ssa(state), b.ssa(state), acc.ssa(state))).results[0], state.scope)


def zeros(shape, dtype=f32) -> Tile:
    """A tile of zeros."""
    return constant(0, check_shape(shape, "tl.zeros"), _T.as_dtype(dtype))


def full(shape, value, dtype=None) -> Tile:
    """A tile filled with `value`: a number (tile.constant) or a traced scalar (tile.splat).

    Without `dtype`, floats give f32, ints i32 and a scalar its own type (index as i32).
    """
    shape = check_shape(shape, "tl.full")
    reject_poison(value)
    if isinstance(value, Scalar):
        dt = _T.as_dtype(dtype) if dtype is not None else (i32 if value.dtype == index else value.dtype)
        if value.dtype != dt and not (value.dtype.is_int and dt.is_int):
            value = _scalar_convert(value, dt)
        return splat(value, shape, dt)
    if not isinstance(value, NUMBER):
        raise KernelError(D.DSL_OPERAND_INVALID, f"tl.full: value must be a number or a scalar, got {value!r}")
    if dtype is None:
        dtype = f32 if isinstance(value, (float, np.floating)) else i32
    return constant(value, shape, _T.as_dtype(dtype))


def arange(shape, axis: int = 0, dtype=i32) -> Tile:
    """A tile whose elements hold their index along `axis` (tile.iota), e.g. arange((1, 64), 1) is 0..63 in a row."""
    shape = check_shape(shape, "tl.arange")
    axis = _axis(axis, len(shape), "tl.arange")
    dt = _T.as_dtype(dtype)
    state = B.current("tl.arange")
    t = Tile(state.emit(TO.IotaOp(axis, tile_type(shape, i32.ir))).results[0], state.scope)
    return t.to(dt) if dt != i32 else t


iota = arange


def where(cond, x, y):
    """Elementwise `x if cond else y`; cond is an i1 tile (or scalar), x and y tiles, scalars or numbers."""
    for v in (cond, x, y):
        reject_poison(v)
    if isinstance(cond, Scalar) and not isinstance(x, Tile) and not isinstance(y, Tile):
        return _scalar_select(cond, x, y)
    cond_tiles = [cond] if isinstance(cond, Tile) else []
    if not cond_tiles and not isinstance(cond, Scalar):
        raise KernelError(D.DSL_OPERAND_INVALID, f"tl.where: the condition must be an i1 tile or scalar, got {cond!r}")
    x, y = elementwise_operands([x, y], "tl.where", shape_only=cond_tiles)
    if isinstance(cond, Scalar):
        cond = splat(cond, x.shape, i1) if cond.dtype == i1 else _tile(cond, "tl.where")
    return _tile_select(cond, x, y)


def _math(op_cls, pyfn, name: str):
    def fn(x):
        reject_poison(x)
        if isinstance(x, NUMBER):
            return pyfn(float(x))
        if isinstance(x, Scalar):
            raise KernelError(D.DSL_UNSUPPORTED, f"tl.{name} works on tiles; got a scalar",
                              hint="make a tile first, e.g. tl.full((1, 1), x, tl.f32)")
        return unary(op_cls, _tile(x, f"tl.{name}"))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of a tile (tile.{op_cls.name.split('.')[1]}); on a Python number, math.{name}."
    return fn


exp = _math(TO.ExpOp, math.exp, "exp")
exp2 = _math(TO.Exp2Op, lambda v: 2.0 ** v, "exp2")
log = _math(TO.LogOp, math.log, "log")
sqrt = _math(TO.SqrtOp, math.sqrt, "sqrt")
rsqrt = _math(TO.RsqrtOp, lambda v: 1.0 / math.sqrt(v), "rsqrt")
tanh = _math(TO.TanhOp, math.tanh, "tanh")
erf = _math(TO.ErfOp, math.erf, "erf")
abs = _math(TO.AbsOp, builtins.abs, "abs")  # noqa: A001


def sigmoid(x):
    """Elementwise logistic 1 / (1 + exp(-x)) of a float tile (on a Python number, the same in floats).

    Composed of tile.exp, an add and a divide: for x -> -inf, exp(-x) overflows to inf and the
    result is 0, for x -> +inf it is 1, never NaN."""
    reject_poison(x)
    if isinstance(x, NUMBER):
        v = float(x)
        return 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v))
    return 1.0 / (1.0 + exp(-_tile(x, "tl.sigmoid")))


def _extremum(a, b, sym: str, name: str):
    reject_poison(a)
    reject_poison(b)
    if isinstance(a, NUMBER) and isinstance(b, NUMBER):
        return builtins.max(a, b) if sym == "max" else builtins.min(a, b)
    if isinstance(a, Tile) or isinstance(b, Tile):
        x, y = elementwise_operands([a, b], f"tl.{name}")
        return _tile_binary(x, y, sym)
    if isinstance(a, Scalar):
        return _scalar_binary(*_unify(a, b, sym), sym)
    if isinstance(b, Scalar):
        y, x = _unify(b, a, sym)
        return _scalar_binary(x, y, sym)
    raise KernelError(D.DSL_OPERAND_INVALID, f"tl.{name}: operands {a!r} and {b!r} are not tiles, scalars or numbers")


def maximum(a, b):
    """Elementwise maximum of tiles (broadcasting), or of scalars (arith.maxsi / arith.maximumf)."""
    return _extremum(a, b, "max", "maximum")


def minimum(a, b):
    """Elementwise minimum of tiles (broadcasting), or of scalars (arith.minsi / arith.minimumf)."""
    return _extremum(a, b, "min", "minimum")


def _reduce(kind: str):
    def fn(x, axis):
        what = f"tl.{kind}"
        if isinstance(axis, (Tile, Scalar)):
            raise KernelError(D.DSL_AXIS_INVALID, f"{what} reduces a tile along an axis; its second argument must be "
                                                  "an int", hint=f"for the elementwise {kind} of two values use "
                                                                 f"tl.{'maximum' if kind == 'max' else 'minimum'}")
        t = _tile(x, what)
        ax = _axis(axis, t.rank, what)
        if t.dtype == i1:
            raise KernelError(D.DSL_UNSUPPORTED, f"{what} of an i1 (mask) tile is not defined",
                              hint="convert the mask first, e.g. tl.sum(m.to(tl.i32), axis) counts its true elements")
        state = B.current(what)
        return Tile(state.emit(TO.ReduceOp(t.ssa(state), kind=kind, axis=ax)).results[0], state.scope)
    fn.__name__ = kind
    fn.__doc__ = (f"The {kind} of a tile along `axis`, keeping that axis as size 1 (tile.reduce {kind}): "
                  f"a 128x64 tile reduced along axis 1 is 128x1.")
    return fn


sum = _reduce("sum")  # noqa: A001
max = _reduce("max")  # noqa: A001
min = _reduce("min")  # noqa: A001


def cumsum(x: Tile, axis: int = 0) -> Tile:
    """The inclusive cumulative sum of a tile along `axis` (tile.scan sum; Triton's tl.cumsum), same shape and
    dtype. bf16/f16 tiles are summed in f32 and rounded once at the end; i1 (mask) tiles count as i32."""
    what = "tl.cumsum"
    if isinstance(axis, (Tile, Scalar)):
        raise KernelError(D.DSL_AXIS_INVALID, f"{what} scans a tile along an axis; its second argument must be an int")
    t = _tile(x, what)
    ax = _axis(axis, t.rank, what)
    work = t.to(f32) if t.dtype in (bf16, f16) else t.to(i32) if t.dtype == i1 else t
    state = B.current(what)
    out = Tile(state.emit(TO.ScanOp(work.ssa(state), kind="sum", axis=ax)).results[0], state.scope)
    return out.to(t.dtype) if t.dtype in (bf16, f16) else out


def broadcast_to(x: Tile, shape) -> Tile:
    """Expand the size-1 dims of `x` to `shape` (same rank; numpy rules)."""
    return _broadcast_to(_tile(x, "tl.broadcast_to"), shape)


def reshape(x: Tile, shape) -> Tile:
    """`x`'s elements in row-major order under `shape` of the same count (tile.reshape), e.g. a [N] row as [1, N]."""
    return _tile(x, "tl.reshape").reshape(shape)


def expand_dims(x: Tile, axis: int) -> Tile:
    """`x` with a new size-1 axis at `axis` (numpy's expand_dims; x[None, :] is expand_dims(x, 0))."""
    x = _tile(x, "tl.expand_dims")
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.rank - 1 <= axis <= x.rank:
        raise KernelError(D.DSL_SHAPE_MISMATCH, f"tl.expand_dims: axis {axis!r} is out of range for {x!r}",
                          hint=f"a rank-{x.rank} tile takes an int axis in [{-x.rank - 1}, {x.rank}]")
    at = axis % (x.rank + 1)
    return x.reshape(x.shape[:at] + (1,) + x.shape[at:])


def cdiv(a, b):
    """Ceiling division (a + b - 1) // b of ints or index/i32 scalars (computed in Python when both are ints)."""
    reject_poison(a)
    reject_poison(b)
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return (a + (b - 1)) // b


def dim(tensor: Tensor, i: int) -> Scalar:
    """Dim `i` of a tensor argument as an index scalar (memref.dim), static or symbolic."""
    return _tensor(tensor, "tl.dim").dim(i)

