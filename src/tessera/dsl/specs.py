"""Argument specs: what a kernel is specialised on besides its meta-parameters.

A tensor spec fixes rank and element type; each dim is either a static int
(part of the memref type) or a symbol (a `?` dim read at run time with
memref.dim). Dims that share a symbol name are promised to be equal: the
tracer reads the size once, and a launcher should check the promise. A scalar
spec fixes a run-time scalar's type.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.ir import Attribute

from tessera.dsl import dtypes as T
from tessera.dsl.errors import KernelError
from tessera.ir import diagnostics as D

TENSOR_DTYPES = (T.bf16, T.f16, T.f32, T.f64, T.i32)
SCALAR_DTYPES = (T.f32, T.i32, T.index)


@dataclass(frozen=True)
class TensorSpec:
    """A memref argument: `shape` holds ints (static dims) and strs (symbolic dims)."""

    shape: tuple[int | str, ...]
    dtype: T.DType

    @property
    def rank(self) -> int:
        return len(self.shape)

    def ir_type(self) -> MemRefType:
        return MemRefType(self.dtype.ir, [d if isinstance(d, int) else DYNAMIC_INDEX for d in self.shape])

    def __str__(self) -> str:
        return f"tensor[{', '.join(str(d) for d in self.shape)}; {self.dtype}]"


@dataclass(frozen=True)
class ScalarSpec:
    """A run-time scalar argument of type f32, i32 or index."""

    dtype: T.DType

    def ir_type(self) -> Attribute:
        return self.dtype.ir

    def __str__(self) -> str:
        return f"scalar[{self.dtype}]"


ArgSpec = TensorSpec | ScalarSpec | None


def tensor(shape, dtype) -> TensorSpec:
    """A tensor spec: `shape` entries are ints (static) or strings (symbolic; equal names mean equal sizes).

    `tensor(("M", "K"), "bf16")` is a `memref<?x?xbf16>`; `tensor((M, 64), tl.f32)`
    with an int M is `memref<Mx64xf32>`. Element types: bf16, f16, f32, f64, i32.
    """
    if isinstance(shape, (int, str)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise KernelError(D.DSL_ARG_SPEC, f"tensor shape {shape!r} is not a sequence of ints and strs") from None
    fixed = []
    for i, d in enumerate(dims):
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer, str)):
            raise KernelError(D.DSL_ARG_SPEC, f"tensor dim #{i} is {d!r}: give an int (static) or a str (symbolic)")
        if isinstance(d, str) and not d:
            raise KernelError(D.DSL_ARG_SPEC, f"tensor dim #{i} is an empty symbol name")
        if not isinstance(d, str) and int(d) < 0:
            raise KernelError(D.DSL_ARG_SPEC, f"tensor dim #{i} is {d}: static dims are >= 0")
        fixed.append(d if isinstance(d, str) else int(d))
    if not fixed:
        raise KernelError(D.DSL_ARG_SPEC, "a tensor spec needs rank >= 1 (pass a rank-0 value as a scalar spec)")
    dt = T.as_dtype(dtype, "tensor element type")
    if dt not in TENSOR_DTYPES:
        raise KernelError(D.DSL_DTYPE_INVALID, f"tensors of {dt} are not supported "
                                               f"(one of {', '.join(d.name for d in TENSOR_DTYPES)})")
    return TensorSpec(tuple(fixed), dt)


def scalar(dtype) -> ScalarSpec:
    """A run-time scalar spec of type f32, i32 or index."""
    dt = T.as_dtype(dtype, "scalar type")
    if dt not in SCALAR_DTYPES:
        raise KernelError(D.DSL_DTYPE_INVALID, f"scalar arguments of {dt} are not supported "
                                               f"(one of {', '.join(d.name for d in SCALAR_DTYPES)})")
    return ScalarSpec(dt)


def spec_of(value: object, param: str) -> ArgSpec:
    """The spec for one trace argument: specs pass through; arrays and Python numbers are described.

    A numpy array gives a tensor of its dtype with symbolic dims named
    `param.0`, `param.1`, ... (so no two arrays' dims are assumed equal). A
    Python float gives an f32 scalar, an int an index scalar; numpy scalars
    keep their type (float64 becomes f32). None marks an absent optional
    argument: the parameter is bound to None and is not a func.func argument.
    """
    if value is None or isinstance(value, (TensorSpec, ScalarSpec)):
        return value
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            raise KernelError(D.DSL_ARG_SPEC, f"argument '{param}' is a 0-d array: pass a scalar spec or a Python number")
        return tensor(tuple(f"{param}.{i}" for i in range(value.ndim)), value.dtype)
    if isinstance(value, (bool, np.bool_)):
        raise KernelError(D.DSL_ARG_SPEC, f"argument '{param}' is a bool: a flag belongs in a meta-parameter "
                                          "(keyword-only) so that it specialises the trace")
    if isinstance(value, np.integer):
        return scalar(T.i32 if value.dtype == np.int32 else T.index)
    if isinstance(value, (np.floating, float)):
        return scalar(T.f32)
    if isinstance(value, int):
        return scalar(T.index)
    raise KernelError(D.DSL_ARG_SPEC, f"argument '{param}' is {type(value).__name__} {value!r}, which is not an "
                                      "argument spec")
