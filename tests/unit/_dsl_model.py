"""A numpy model of tile programs for test_fuzz_dsl.py: the DSL's rules and Tessera's numerics, per statement.

Each `m_*` function mirrors one `tl`/operator entry point: it raises `Bad`
with the codes the DSL must raise for illegal operands (in the DSL's own
order of checks), or computes the result the way Tessera specifies it
(float ops in float64, rounded to the tile's type after every op, narrow
floats via f32; C integer division; IEEE maxNum/minNum). A value holds one
tile per program of the grid, as an array (gm, rows, gn, cols).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tessera.ir import diagnostics as D

NP = {"f32": np.dtype(np.float32), "bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16),
      "i32": np.dtype(np.int32), "i1": np.dtype(np.bool_)}
FLOATS = ("f32", "bf16", "f16")
INT_RANGE = {"i1": (0, 1), "i32": (-2 ** 31, 2 ** 31 - 1)}
F64 = np.float64
_ERF = np.vectorize(math.erf, otypes=[F64])


class Bad(Exception):
    """The model's verdict: tracing fails with one of `codes` (none given: any coded error)."""

    def __init__(self, *codes: D.Code):
        super().__init__(", ".join(c.name for c in codes) or "any code")
        self.codes = frozenset(c.name for c in codes)


@dataclass
class V:
    """A model value, one per program of the grid: a tile is an array (gm, rows, gn, cols), a scalar (gm, 1, gn, 1)."""

    dtype: str  # f32 bf16 f16 i32 i1 (tiles); f32 index (scalars)
    arr: np.ndarray
    scalar: bool = False

    @property
    def shape(self) -> tuple[int, int]:
        return self.arr.shape[1], self.arr.shape[3]


POISON = "poison"  # a name the tl.range body defined: unusable after the loop


def rnd(x, dtype: str) -> np.ndarray:
    """A float64 (or wide int) result rounded to `dtype` as Tessera specifies: narrow floats via f32, ints wrap."""
    with np.errstate(all="ignore"):
        if dtype in FLOATS:
            return np.asarray(x, F64).astype(np.float32).astype(NP[dtype])
        return np.asarray(x).astype(np.int64).astype(NP[dtype])


def is_int(dtype: str) -> bool:
    return dtype in ("i32", "i1", "index")


def _bshape(shapes) -> tuple[int, int]:
    out = []
    for dims in zip(*shapes):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise Bad(D.DSL_SHAPE_MISMATCH)
        out.append(big.pop() if big else 1)
    return tuple(out)


def expand(arr: np.ndarray, shape) -> np.ndarray:
    return np.broadcast_to(arr, (arr.shape[0], shape[0], arr.shape[2], shape[1]))


def operands(values, shape_only=()) -> tuple[str, list[np.ndarray]]:
    """The DSL's elementwise rule: tiles share a dtype and broadcast; scalars splat; numbers become constants."""
    tiles = [v for v in values if isinstance(v, V) and not v.scalar]
    if not tiles:
        raise Bad(D.DSL_OPERAND_INVALID)
    if len({t.dtype for t in tiles}) > 1:
        raise Bad(D.DSL_DTYPE_MISMATCH)
    dt = tiles[0].dtype
    shape = _bshape([t.shape for t in tiles] + list(shape_only))
    out = []
    for v in values:
        if isinstance(v, V) and not v.scalar:
            out.append(expand(v.arr, shape))
        elif isinstance(v, V):
            if v.dtype != dt and not (is_int(v.dtype) and is_int(dt) and dt != "i1"):
                raise Bad(D.DSL_DTYPE_MISMATCH)
            out.append(expand(rnd(v.arr, dt), shape))
        else:
            if abs(v) > 1e308 or (is_int(dt) and float(v) != int(v)):  # too large for a float; not an integer
                raise Bad(D.DSL_DTYPE_MISMATCH)
            lo, hi = INT_RANGE.get(dt, (-math.inf, math.inf))
            if not lo <= v <= hi:
                raise Bad(D.DSL_DTYPE_MISMATCH)
            gm, gn = tiles[0].arr.shape[0], tiles[0].arr.shape[2]
            out.append(np.full((gm, shape[0], gn, shape[1]), (v != 0) if dt == "i1" else rnd(v, dt), NP[dt]))
    return dt, out


def _int_div(x, y):
    safe = np.where(y == 0, 1, y)
    q = np.abs(x) // np.abs(safe)
    return np.where(y == 0, 0, np.where((x < 0) != (safe < 0), -q, q))


FLOAT_BIN = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "max": np.fmax, "min": np.fmin}
INT_BIN = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": _int_div, "max": np.maximum, "min": np.minimum}
CMP = {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal, "==": np.equal,
       "!=": np.not_equal}


def m_bin(x, y, sym: str) -> V:
    """`x sym y` (or tl.maximum/minimum for 'max'/'min') in source order."""
    dt, (a, b) = operands([x, y])
    if sym in CMP:
        wide = (a.astype(F64), b.astype(F64)) if dt in FLOATS else (a, b)
        return V("i1", CMP[sym](*wide))
    if sym in ("&", "|"):
        if dt != "i1":
            raise Bad(D.DSL_UNSUPPORTED)
        return V("i1", (a & b) if sym == "&" else (a | b))
    if (sym == "/" and is_int(dt)) or (sym == "//" and dt in FLOATS) or dt == "i1":
        raise Bad(D.DSL_UNSUPPORTED)
    if dt in FLOATS:
        with np.errstate(all="ignore"):
            return V(dt, rnd(FLOAT_BIN[sym](a.astype(F64), b.astype(F64)), dt))
    return V(dt, rnd(INT_BIN[sym](a.astype(np.int64), b.astype(np.int64)), dt))


def m_invert(x) -> V:
    t = _tile(x)
    if t.dtype != "i1":
        raise Bad(D.DSL_UNSUPPORTED)
    return V("i1", ~t.arr)


def _tile(x) -> V:
    if not isinstance(x, V) or x.scalar:
        raise Bad(D.DSL_OPERAND_INVALID, D.DSL_UNSUPPORTED)
    return x


def m_neg_abs(x, kind: str) -> V:
    t = _tile(x)
    if t.dtype == "i1":
        raise Bad(D.DSL_UNSUPPORTED, D.TILE_ELEMENT_TYPE_INVALID)
    fn = np.negative if kind == "neg" else np.abs
    return V(t.dtype, rnd(fn(t.arr.astype(F64 if t.dtype in FLOATS else np.int64)), t.dtype))


MATH = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1.0 / np.sqrt(v),
        "tanh": np.tanh, "erf": _ERF}


def m_math(x, name: str) -> V:
    if isinstance(x, V) and x.scalar:
        raise Bad(D.DSL_UNSUPPORTED)
    t = _tile(x)
    if t.dtype not in FLOATS:
        raise Bad(D.DSL_DTYPE_MISMATCH, D.TILE_ELEMENT_TYPE_INVALID)
    with np.errstate(all="ignore"):
        return V(t.dtype, rnd(MATH[name](t.arr.astype(F64)), t.dtype))


def m_reduce(x, kind: str, axis) -> V:
    t = _tile(x)
    if not isinstance(axis, int) or not -2 <= axis < 2:
        raise Bad(D.DSL_AXIS_INVALID)
    if t.dtype == "i1":
        raise Bad(D.DSL_UNSUPPORTED, D.TILE_ELEMENT_TYPE_INVALID)
    ax = 1 if axis % 2 == 0 else 3
    fn = {"sum": np.add, "max": np.fmax if t.dtype in FLOATS else np.maximum,
          "min": np.fmin if t.dtype in FLOATS else np.minimum}[kind]
    if t.dtype in FLOATS:
        return V(t.dtype, rnd(fn.reduce(t.arr.astype(F64), axis=ax, keepdims=True), t.dtype))
    return V(t.dtype, fn.reduce(t.arr, axis=ax, keepdims=True, dtype=NP[t.dtype]))


def m_transpose(x) -> V:
    t = _tile(x)
    return V(t.dtype, t.arr.transpose(0, 3, 2, 1))


def m_broadcast(x, shape) -> V:
    t = _tile(x)
    if t.shape != tuple(shape) and any(a not in (1, b) for a, b in zip(t.shape, shape)):
        raise Bad(D.DSL_SHAPE_MISMATCH)
    return V(t.dtype, expand(t.arr, shape))


def m_where(c, x, y) -> V:
    cond = [c] if isinstance(c, V) and not c.scalar else []
    if not cond:
        raise Bad(D.DSL_OPERAND_INVALID)
    dt, (a, b) = operands([x, y], shape_only=[c.shape])
    if c.dtype != "i1":
        raise Bad(D.DSL_DTYPE_MISMATCH)
    return V(dt, np.where(expand(c.arr, a.shape[1::2]), a, b))


def m_convert(x, to: str) -> V:
    t = _tile(x)
    if t.dtype == to:
        return t
    a = t.arr
    if to == "i1":
        return V(to, a != 0)
    if to in FLOATS:
        return V(to, rnd(a.astype(F64), to))
    if t.dtype in FLOATS:
        with np.errstate(invalid="ignore"):
            w = np.trunc(a.astype(F64))
            w = np.where(np.isnan(w), 0.0, np.clip(w, -2 ** 31, 2 ** 31 - 1))
        return V(to, w.astype(np.int32))
    return V(to, a.astype(NP[to]))


MMA_ACC = {"bf16": ("f32",), "f16": ("f32", "f16"), "f32": ("f32",)}


def m_dot(a, b, acc=None) -> V:
    """`tl.dot(a, b, acc)`; `acc` is a thunk (or None), since the DSL looks at it only after a and b."""
    a, b = _tile(a), _tile(b)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise Bad(D.DSL_SHAPE_MISMATCH)
    if a.dtype != b.dtype or a.dtype not in MMA_ACC:
        raise Bad(D.DSL_DTYPE_MISMATCH)
    acc = V("f32", np.zeros((a.arr.shape[0], m, a.arr.shape[2], n), np.float32)) if acc is None else _tile(acc())
    if acc.shape != (m, n):
        raise Bad(D.DSL_SHAPE_MISMATCH)
    if acc.dtype not in MMA_ACC[a.dtype]:
        raise Bad(D.DSL_DTYPE_MISMATCH)
    per_program = lambda t: t.arr.astype(F64).transpose(0, 2, 1, 3)  # noqa: E731 - (gm, gn, rows, cols)
    with np.errstate(all="ignore"):  # inf * 0 in a product is nan, as on the GPU
        prod = np.matmul(per_program(a), per_program(b)) + per_program(acc)
    return V(acc.dtype, rnd(prod.transpose(0, 2, 1, 3), acc.dtype))


@dataclass
class Grid:
    M: int
    N: int
    BM: int
    BN: int

    @property
    def gm(self) -> int:
        return -(-self.M // self.BM)

    @property
    def gn(self) -> int:
        return -(-self.N // self.BN)

    def program_ids(self, axis: int) -> V:
        i, j = np.meshgrid(np.arange(self.gm), np.arange(self.gn), indexing="ij")
        return V("index", (i if axis == 0 else j)[:, None, :, None], scalar=True)

    def scalar(self, value, dtype: str) -> V:
        return V(dtype, np.full((self.gm, 1, self.gn, 1), value, np.float32 if dtype == "f32" else np.int64),
                 scalar=True)

    def tile(self, value, shape, dtype: str) -> V:
        return V(dtype, np.full((self.gm, shape[0], self.gn, shape[1]), value, NP[dtype]))

    def iota(self, shape, axis: int) -> V:
        idx = np.arange(shape[axis]).reshape((1, -1, 1, 1) if axis == 0 else (1, 1, 1, -1))
        return V("i32", np.broadcast_to(idx, (self.gm, shape[0], self.gn, shape[1])).astype(np.int32))

    def load(self, array: np.ndarray, dtype: str, rows: V, cols: V, shape, pad: float) -> V:
        out = np.empty((self.gm, shape[0], self.gn, shape[1]), NP[dtype])
        for i, j in itertools.product(range(self.gm), range(self.gn)):
            r0, c0 = int(rows.arr[i, 0, j, 0]), int(cols.arr[i, 0, j, 0])
            r = np.arange(r0, r0 + shape[0])[:, None]
            c = np.arange(c0, c0 + shape[1])[None, :]
            inside = (r >= 0) & (r < array.shape[0]) & (c >= 0) & (c < array.shape[1])
            vals = array[np.clip(r, 0, array.shape[0] - 1), np.clip(c, 0, array.shape[1] - 1)]
            out[i, :, j, :] = np.where(inside, vals, rnd(pad, dtype))
        return V(dtype, out)

    def store(self, out: np.ndarray, value: V) -> None:
        """Each program writes its tile at (i*BM, j*BN), clipped at the edges, axis 0 fastest."""
        r, c = value.shape
        for j, i in itertools.product(range(self.gn), range(self.gm)):
            r0, c0 = i * self.BM, j * self.BN
            block = value.arr[i, :, j, :]
            h, w = min(r, out.shape[0] - r0), min(c, out.shape[1] - c0)
            out[r0:r0 + h, c0:c0 + w] = block[:h, :w]
