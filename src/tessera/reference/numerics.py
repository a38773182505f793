"""Whole-tile numerics: the elementwise tables, erf, conversion and the mma product.

Every function takes and returns numpy arrays and works on whole tiles (no
per-element Python loops). Float math runs in float64 and is rounded back to
the tile's element type after every op (via f32 for bf16/f16). For + - * /
and sqrt that is bitwise the IEEE f32 result (a double-width result rounds
once, correctly), so a bf16 tile behaves exactly like "compute in f32, round
to bf16" on the GPU; for exp, tanh, erf it is (all but always) the correctly rounded value the
GPU's approximations aim at, so measured errors are the kernel's own.
"""

from __future__ import annotations

import math

import numpy as np

from tessera.reference.values import F32, F64, is_float_dtype, to_dtype

# --- erf ----------------------------------------------------------------------------
# |x| < 3: the Maclaurin series, 46 terms in Horner form over x^2 (the largest
# term is ~1e3, so cancellation costs ~3 digits of f64: error < 1e-12).
# |x| >= 3: the continued fraction erfc(x) = e^{-x^2}/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
# 60 levels evaluated bottom-up; it converges fastest exactly where the series fails.
_ERF_SERIES = np.array([(-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(46)][::-1])
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (absolute error below 1e-12), vectorised; nan stays nan, +-inf give +-1."""
    x = np.asarray(x, dtype=F64)
    out = np.empty_like(x)
    ax = np.abs(x)
    small = ax < 3.0
    xs = x[small]
    z = xs * xs
    acc = np.full_like(xs, _ERF_SERIES[0])
    for c in _ERF_SERIES[1:]:
        acc = acc * z + c
    out[small] = _TWO_OVER_SQRT_PI * xs * acc
    big = ~small
    if big.any():
        xb = ax[big]
        with np.errstate(over="ignore", invalid="ignore"):
            frac = xb.copy()
            for k in range(60, 0, -1):
                frac = xb + (0.5 * k) / frac
            erfc = np.exp(-xb * xb) / (math.sqrt(math.pi) * frac)
        erfc = np.where(np.isinf(xb), 0.0, erfc)
        out[big] = np.copysign(1.0 - erfc, x[big])
    return out


# --- elementwise tables --------------------------------------------------------------


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


def _erf_in(x):
    return erf(x).astype(x.dtype)


FLOAT_UNARY = {
    "tile.neg": np.negative, "tile.abs": np.abs, "tile.exp": np.exp, "tile.exp2": np.exp2,
    "tile.log": np.log, "tile.sqrt": np.sqrt, "tile.rsqrt": _rsqrt, "tile.tanh": np.tanh,
    "tile.erf": _erf_in,
}
# max/min follow IEEE maxNum/minNum (CUDA fmaxf/fminf): a nan loses to a number.
FLOAT_BINARY = {
    "tile.add": np.add, "tile.sub": np.subtract, "tile.mul": np.multiply, "tile.div": np.divide,
    "tile.max": np.fmax, "tile.min": np.fmin,
}


def _int_div(x, y):
    """Signed integer division truncating toward zero (C and PTX div.s semantics); x/0 gives 0."""
    safe = np.where(y == 0, 1, y)
    q = np.abs(x) // np.abs(safe)
    q = np.where((x < 0) != (safe < 0), -q, q)
    return np.where(y == 0, 0, q).astype(x.dtype)


INT_UNARY = {"tile.neg": np.negative, "tile.abs": np.abs}
INT_BINARY = {
    "tile.add": np.add, "tile.sub": np.subtract, "tile.mul": np.multiply, "tile.div": _int_div,
    "tile.max": np.maximum, "tile.min": np.minimum,
}
CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
       "gt": np.greater, "ge": np.greater_equal}
REDUCE = {"sum": np.add, "max": np.fmax, "min": np.fmin}
INT_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def elementwise(name: str, args: tuple[np.ndarray, ...], dtype: np.dtype) -> np.ndarray:
    """Apply tile op `name` to same-typed tiles: floats compute in f64 and round to `dtype`; ints wrap."""
    if is_float_dtype(dtype):
        fn = FLOAT_UNARY[name] if len(args) == 1 else FLOAT_BINARY[name]
        with np.errstate(all="ignore"):
            out = fn(*(a.astype(F64) for a in args))
        return to_dtype(np.asarray(out, dtype=F64), dtype)
    fn = INT_UNARY[name] if len(args) == 1 else INT_BINARY[name]
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args)).astype(dtype, copy=False)


def compare(predicate: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Elementwise compare to a bool tile (exact in any dtype; narrow floats widen first)."""
    if is_float_dtype(x.dtype):
        x, y = x.astype(F64), y.astype(F64)
    return CMP[predicate](x, y)


def reduce(kind: str, x: np.ndarray, axis: int) -> np.ndarray:
    """Reduce along `axis`, keeping it with size 1; float sums accumulate in f64 and round once."""
    if is_float_dtype(x.dtype):
        out = REDUCE[kind].reduce(x.astype(F64), axis=axis, keepdims=True)
        return to_dtype(out, x.dtype)
    return INT_REDUCE[kind].reduce(x, axis=axis, keepdims=True, dtype=x.dtype)


def convert(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """tile.convert: floats round to nearest even; float -> int truncates toward zero and saturates
    (nan -> 0, as PTX cvt.rzi.sat); int -> float rounds; to i1 tests != 0."""
    if x.dtype == dtype:
        return x
    if dtype == np.bool_:
        return x != 0
    if is_float_dtype(dtype):
        return to_dtype(x, dtype)
    if is_float_dtype(x.dtype):
        info = np.iinfo(dtype)
        with np.errstate(invalid="ignore"):
            t = np.trunc(x.astype(F64))
            t = np.where(np.isnan(t), 0.0, np.clip(t, info.min, info.max))
        return t.astype(dtype)
    return x.astype(dtype)


def mma(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """acc + a @ b (batched over leading dims by broadcasting), rounded once to acc's dtype.

    The product is formed in float64: bf16/f16 products are exact there and
    their K-sums nearly so, which makes the result independent of how the
    matmul is blocked (whole tile vs per-warp fragments) -- the property the
    Fragment-vs-Tile equivalence relies on -- and at least as accurate as the
    GPU's f32 accumulation.
    """
    prod = np.matmul(a.astype(F64), b.astype(F64))
    out = acc.astype(F64) + prod
    return to_dtype(out.astype(F32) if acc.dtype != F64 else out, acc.dtype)
