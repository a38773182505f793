"""Element types of the kernel language and their IR and numpy spellings.

A kernel author names element types many ways (`tl.f32`, `"f32"`,
`np.float32`, an array's dtype, an xDSL type); `as_dtype` maps all of them to
one `DType`, so every other module compares DTypes and never strings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import IndexType, bf16 as _bf16, f16 as _f16, f32 as _f32, f64 as _f64, i1 as _i1, i32 as _i32
from xdsl.ir import Attribute

from tessera.dsl.errors import KernelError
from tessera.ir import diagnostics as D


@dataclass(frozen=True)
class DType:
    """An element type: `name` is its MLIR spelling, `ir` the xDSL type, `numpy` the host dtype."""

    name: str
    ir: Attribute = field(compare=False, repr=False)
    numpy: np.dtype | None = field(compare=False, repr=False)

    @property
    def is_float(self) -> bool:
        return self.name in ("bf16", "f16", "f32", "f64")

    @property
    def is_int(self) -> bool:
        return self.name in ("i1", "i32", "index")

    @property
    def int_range(self) -> tuple[int, int] | None:
        """The integers this type holds (i1: 0 and 1; i32 and the 64-bit index: signed); None for floats."""
        return _INT_RANGES.get(self.name)

    def __call__(self, value) -> "Scalar":  # noqa: F821
        """A traced scalar constant of this type (inside a kernel body): `acc_rows = tl.index(0)`."""
        return _make_constant(self, value)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"tl.{self.name}"


def _scalars_not_loaded(dtype: DType, value) -> "Scalar":  # noqa: F821
    raise RuntimeError("tessera.dsl.scalar was not imported, so dtypes cannot make traced constants")


_make_constant: Callable[[DType, object], "Scalar"] = _scalars_not_loaded  # noqa: F821


def make_constants_with(make: Callable[[DType, object], "Scalar"]) -> None:  # noqa: F821
    """Set what calling a DType does. Scalars are built on dtypes, so tessera.dsl.scalar hands its
    constant maker down here rather than this module importing it back (that was an import cycle)."""
    global _make_constant
    _make_constant = make


_INT_RANGES = {"i1": (0, 1), "i32": (-2 ** 31, 2 ** 31 - 1), "index": (-2 ** 63, 2 ** 63 - 1)}

bf16 = DType("bf16", _bf16, np.dtype(ml_dtypes.bfloat16))
f16 = DType("f16", _f16, np.dtype(np.float16))
f32 = DType("f32", _f32, np.dtype(np.float32))
f64 = DType("f64", _f64, np.dtype(np.float64))
i1 = DType("i1", _i1, np.dtype(np.bool_))
i32 = DType("i32", _i32, np.dtype(np.int32))
index = DType("index", IndexType(), None)

ALL = (bf16, f16, f32, f64, i1, i32, index)
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"bfloat16": bf16, "float16": f16, "half": f16, "float32": f32, "float": f32,
                 "float64": f64, "double": f64, "bool": i1, "int32": i32})
_BY_NUMPY = {d.numpy: d for d in ALL if d.numpy is not None}
_BY_IR = {d.ir: d for d in ALL}


def as_dtype(x: object, what: str = "dtype") -> DType:
    """The DType named by `x`: a DType, a name ('bf16', 'float32'), a numpy dtype or type, or an xDSL type."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    if isinstance(x, Attribute) and x in _BY_IR:
        return _BY_IR[x]
    if not isinstance(x, (str, Attribute)):
        try:
            npd = np.dtype(x)  # type: ignore[call-overload]
        except TypeError:
            npd = None
        if npd is not None and npd in _BY_NUMPY:
            return _BY_NUMPY[npd]
    raise KernelError(D.DSL_DTYPE_INVALID, f"{what} {x!r} is not a Tessera element type "
                                           f"(one of {', '.join(d.name for d in ALL)})")


def from_ir(t: Attribute) -> DType:
    """The DType of an xDSL element type the tracer produced."""
    return _BY_IR[t]
