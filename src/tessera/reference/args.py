"""Launch checks before anything runs: kernel lookup, grid, and arguments against the signature.

Every check fails with a coded `TesseraError` that names the argument (its
position and its `%name` in the IR), so no output array is touched when the
input is bad.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerType, MemRefType, ModuleOp
from xdsl.ir import Attribute, BlockArgument

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import FragmentStoreOp
from tessera.ir.tile_ops import StoreOp
from tessera.ir.types import is_float, type_name
from tessera.reference.values import BF16, UnsupportedType, np_dtype, round_scalar

_DTYPE_SPELLING = {BF16: "ml_dtypes.bfloat16"}


def find_kernel(module: ModuleOp, func_name: str | None) -> func.FuncOp:
    """The func.func to run: the one named, or the module's only function (declarations excluded)."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
    if func_name is None:
        if len(funcs) == 1:
            return funcs[0]
        raise D.TesseraError(D.REF_FUNC_NOT_FOUND,
                             f"the module has {len(funcs)} functions with bodies ({names}); name one with func_name=")
    for f in funcs:
        if f.sym_name.data == func_name.lstrip("@"):
            return f
    raise D.TesseraError(D.REF_FUNC_NOT_FOUND,
                         f"no function @{func_name.lstrip('@')} with a body in the module (functions: {names})")


def check_grid(grid) -> tuple[int, int, int]:
    """The launch grid padded to 3-D (unused axes have extent 1)."""
    dims = (grid,) if isinstance(grid, numbers.Integral) else grid
    ok = isinstance(dims, Sequence) and 1 <= len(dims) <= 3 and all(
        isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1 for d in dims)
    if not ok or isinstance(grid, bool):
        raise D.TesseraError(D.REF_GRID_INVALID,
                             f"grid {grid!r} is not a positive int or a tuple of 1 to 3 positive ints")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


def arg_label(kernel: func.FuncOp, i: int) -> str:
    hint = kernel.body.blocks.first.args[i].name_hint
    return f"argument #{i}{f' (%{hint})' if hint else ''} of @{kernel.sym_name.data}"


def _fail(kernel, code: D.Code, i: int, message: str, hint: str | None = None):
    raise D.TesseraError(code, f"{arg_label(kernel, i)}: {message}", op=kernel, hint=hint)


def _bind_array(kernel, i: int, t: MemRefType, value):
    if not isinstance(value, np.ndarray):
        _fail(kernel, D.REF_ARG_KIND, i, f"{t} takes a numpy array, got {type(value).__name__}")
    try:
        want = np_dtype(t.element_type)
    except UnsupportedType as err:
        _fail(kernel, D.REF_ARG_KIND, i, str(err))
    shape = t.get_shape()
    if value.ndim != len(shape):
        _fail(kernel, D.REF_ARG_RANK, i, f"{t} has rank {len(shape)}, the array has rank {value.ndim} "
                                         f"(shape {list(value.shape)})")
    if value.dtype != want:
        spelling = _DTYPE_SPELLING.get(want, f"np.{want.name}")
        _fail(kernel, D.REF_ARG_DTYPE, i, f"{t} holds {type_name(t.element_type)}, the array is {value.dtype}",
              hint=f"convert with .astype({spelling})")
    for d, (s, n) in enumerate(zip(shape, value.shape)):
        if s != DYNAMIC_INDEX and s != n:
            _fail(kernel, D.REF_ARG_SHAPE, i, f"dim {d} of {t} is {s}, the array's is {n} (shape {list(value.shape)})")
    return value


def _bind_scalar(kernel, i: int, t: Attribute, value):
    name = type_name(t)
    if isinstance(t, IndexType | IntegerType):
        width = 64 if isinstance(t, IndexType) else t.width.data
        is_int = isinstance(value, numbers.Integral) and (width == 1 or not isinstance(value, bool | np.bool_))
        if not is_int:
            _fail(kernel, D.REF_ARG_KIND, i, f"{name} takes a Python int, got {type(value).__name__}")
        v = int(value)
        if width == 1:
            if v not in (0, 1):
                _fail(kernel, D.REF_ARG_VALUE, i, f"{v} is not an i1 value (0, 1, False or True)")
            return bool(v)
        if not -(1 << (width - 1)) <= v < (1 << (width - 1)):
            _fail(kernel, D.REF_ARG_VALUE, i, f"{v} does not fit {name}")
        return v
    if is_float(t):
        if not isinstance(value, numbers.Real) or isinstance(value, bool | np.bool_):
            _fail(kernel, D.REF_ARG_KIND, i, f"{name} takes a Python float, got {type(value).__name__}")
        rounded = round_scalar(float(value), t)
        if np.isinf(rounded) and np.isfinite(float(value)):
            _fail(kernel, D.REF_ARG_VALUE, i, f"{value} overflows {name}")
        return rounded
    _fail(kernel, D.REF_ARG_KIND, i, f"parameters of type {t} cannot be passed to the reference interpreter",
          hint="kernel parameters are memrefs and index/iN/float scalars")


def bind_args(kernel: func.FuncOp, args) -> tuple:
    """Check `args` against the kernel's signature; return the values the interpreter runs on."""
    params = kernel.function_type.inputs.data
    if not isinstance(args, Sequence) or isinstance(args, str | bytes):
        raise D.TesseraError(D.REF_ARG_COUNT, f"@{kernel.sym_name.data} takes a list of {len(params)} arguments, "
                                              f"got {type(args).__name__}", op=kernel)
    if len(args) != len(params):
        raise D.TesseraError(D.REF_ARG_COUNT, f"@{kernel.sym_name.data} takes {len(params)} arguments "
                                              f"({', '.join(map(str, params))}), got {len(args)}", op=kernel)
    return tuple(_bind_array(kernel, i, t, v) if isinstance(t, MemRefType) else _bind_scalar(kernel, i, t, v)
                 for i, (t, v) in enumerate(zip(params, args)))


def written_args(kernel: func.FuncOp) -> set[int]:
    """Positions of the kernel's array arguments that some op writes to."""
    entry = kernel.body.blocks.first
    out: set[int] = set()
    for op in kernel.walk():
        dest = op.dest if isinstance(op, StoreOp | FragmentStoreOp) else (
            op.memref if isinstance(op, memref.StoreOp) else None)
        if isinstance(dest, BlockArgument) and dest.block is entry:
            out.add(dest.index)
    return out


def check_writeable(kernel: func.FuncOp, values: tuple) -> None:
    for i in sorted(written_args(kernel)):
        if not values[i].flags.writeable:
            _fail(kernel, D.REF_ARG_READONLY, i, "the kernel stores to this array, but it is read-only")
