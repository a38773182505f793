"""Run-time values of the reference interpreter and the element-type <-> numpy mapping.

What each IR type becomes while the interpreter runs:

* `index`, `iN` scalars: Python ints (`i1`: Python bools); float scalars:
  Python floats already rounded to their type (see `round_scalar`).
* memrefs: the caller's numpy arrays, read and written in place.
* `!tile.tile<..., reg>` values: numpy arrays in the tile's own element type
  (bf16 as `ml_dtypes.bfloat16`), never mutated once made.
* `!tile.tile<..., smem>` buffers (tile.alloc): mutable numpy arrays.
* `!tile.tile<..., global>` views (tile.view): a lazy `View` window.
* `!tile.async_token`: a `Token`.
* `!tile.fragment<...>`: a `Fragment` (per-warp matrices, see its docstring).

Narrow floats (bf16, f16) are rounded back to their type after every op, like
the GPU's cvt.rn after f32 math, so the interpreter's error matches the GPU's
(the arithmetic itself is in `numerics`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.ir import Attribute

from tessera.ir.types import type_name

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
NARROW_FLOATS = (BF16, F16)
_INT_BY_WIDTH = {1: np.dtype(np.bool_), 8: np.dtype(np.int8), 16: np.dtype(np.int16),
                 32: np.dtype(np.int32), 64: np.dtype(np.int64)}


class UnsupportedType(ValueError):
    """An IR type with no numpy counterpart (caught and reported with a code by the caller)."""


@lru_cache(maxsize=256)
def np_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype that holds elements of IR type `t`."""
    if isinstance(t, BFloat16Type):
        return BF16
    if isinstance(t, Float16Type):
        return F16
    if isinstance(t, Float32Type):
        return F32
    if isinstance(t, Float64Type):
        return F64
    if isinstance(t, IndexType):
        return _INT_BY_WIDTH[64]
    if isinstance(t, IntegerType) and t.width.data in _INT_BY_WIDTH:
        return _INT_BY_WIDTH[t.width.data]
    raise UnsupportedType(f"element type {type_name(t)} has no numpy counterpart in the reference interpreter")


def is_float_dtype(dtype: np.dtype) -> bool:
    return dtype in NARROW_FLOATS or dtype.kind == "f"


def to_dtype(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round/cast an array to `dtype`; narrow floats always round from f32 (round to nearest even)."""
    if x.dtype == dtype:
        return x
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the IEEE result, not an error
        if dtype in NARROW_FLOATS and x.dtype != F32 and is_float_dtype(x.dtype):
            x = x.astype(F32)
        return x.astype(dtype)


def fill_value(value: float, dtype: np.dtype):
    """`value` as an element of `dtype`: floats round; ints saturate (+-inf to the extremes, nan to 0)."""
    if is_float_dtype(dtype):
        return to_dtype(np.asarray(value, dtype=F64), dtype)[()]
    if dtype == np.bool_:
        return np.bool_(value != 0)
    info = np.iinfo(dtype)
    if value != value:
        return dtype.type(0)
    return dtype.type(int(min(max(value, info.min), info.max)))


def round_scalar(value: float, t: Attribute) -> float:
    """A float scalar rounded to IR float type `t` (via f32 for bf16/f16), kept as a Python float."""
    if isinstance(t, Float64Type):
        return float(value)
    with np.errstate(over="ignore"):
        v32 = np.float32(value)
    if isinstance(t, Float32Type):
        return float(v32)
    return float(v32.astype(np_dtype(t)))


@dataclass(frozen=True, slots=True)
class View:
    """A tile-shaped window of a global array (tile.view): nothing is read until a copy needs it.

    `window` is the full-rank window shape (leading 1s, then the tile's dims);
    `shape` is the tile's own shape.
    """

    array: np.ndarray
    offsets: tuple[int, ...]
    window: tuple[int, ...]
    shape: tuple[int, ...]


class Token:
    """Completion token of a tile.async_copy. Copies complete eagerly, so waiting only checks provenance."""

    __slots__ = ("op",)

    def __init__(self, op) -> None:
        self.op = op


@dataclass(frozen=True, slots=True)
class Fragment:
    """A CTA-collective fragment: one matrix per warp, as `data[i, j]` for warp (i, j).

    `data` has shape [wm | 1, wn | 1, rows, cols] where (rows, cols) is the role
    shape (a: m x k, b: k x n, acc: m x n). A warp axis of size 1 means every
    warp along it holds the same matrix; numpy broadcasting then supplies the
    grid. That is exact, not an approximation: a packed `a` really is the same
    for every warp column (role a takes no column shift), `b` the same for
    every warp row, and `tile.fragment_zero` is zero for every warp, so a zero
    accumulator is [1, 1, m, n] and takes its warp grid from the first
    fragment_mma it meets. Data is held in the fragment's element type
    (`elem` for roles a and b, `acc` for role acc).

    `grid` is the warps [wm, wn] the fragment was packed (or computed) for,
    None for a zero fragment, which fits any grid. Fragments of different
    grids never meet: mma, unpack and store check it.
    """

    data: np.ndarray
    grid: tuple[int, int] | None = None

    def warp_dims(self) -> tuple[int, int]:
        return self.data.shape[0], self.data.shape[1]
