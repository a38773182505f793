"""Launch checks before anything runs: kernel lookup, grid, and arguments against the signature.

The argument rules are the compiled lane's (`tessera.ir.argcheck`, which
`CompiledKernel.launch` calls too): kind, dtype, rank, C-contiguity, static
dims, the agreement of dims traced with one symbol (when the caller passes the
tracer's specs), scalar ranges, and no read-only or aliased output. Every
refusal is a coded `TesseraError` that names the argument (its position and
its `%name` in the IR), so no output array is touched when the input is bad.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp
from xdsl.ir import BlockArgument

from tessera.ir import argcheck as A
from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import FragmentStoreOp
from tessera.ir.tile_ops import AtomicAddOp, MaskedStoreOp, StoreOp
from tessera.ir.types import is_float
from tessera.reference.values import UnsupportedType, np_dtype, round_scalar

CODES = {A.COUNT: D.REF_ARG_COUNT, A.KIND: D.REF_ARG_KIND, A.DTYPE: D.REF_ARG_DTYPE, A.RANK: D.REF_ARG_RANK,
         A.LAYOUT: D.REF_ARG_LAYOUT, A.SHAPE: D.REF_ARG_SHAPE, A.SYMBOL: D.REF_ARG_SHAPE, A.LIMIT: D.REF_ARG_SHAPE,
         A.READONLY: D.REF_ARG_READONLY, A.ALIAS: D.REF_ARG_ALIAS, A.VALUE: D.REF_ARG_VALUE}


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


def _error(kernel, err: A.ArgProblem) -> D.TesseraError:
    where = f"@{kernel.sym_name.data}" if err.index is None else f"{arg_label(kernel, err.index)}:"
    return D.TesseraError(CODES[err.rule], f"{where} {err.message}", op=kernel, hint=err.hint)


def declared_args(kernel: func.FuncOp, specs=None) -> tuple:
    """The kernel's arguments as `argcheck` declares them; `specs` (the tracer's, one per argument) name
    the symbol of each `?` dim, without them `?` dims are free."""
    entry = kernel.body.blocks.first
    names = [a.name_hint or f"#{i}" for i, a in enumerate(entry.args)]
    labels = [f"#{i}{f' (%{a.name_hint})' if a.name_hint else ''}" for i, a in enumerate(entry.args)]
    return A.declare(kernel.function_type.inputs.data, names, labels, specs, written_args(kernel))


def bind_args(kernel: func.FuncOp, args, specs=None) -> tuple:
    """Check `args` against the kernel's signature (and `specs`, see `declared_args`); return the values the
    interpreter runs on: the arrays themselves, scalars as Python ints, bools (i1) and floats rounded to type."""
    params = kernel.function_type.inputs.data
    decl = declared_args(kernel, specs)
    try:
        A.check_count([a.name for a in decl], args)
        for i, t in enumerate(params):
            if isinstance(t, MemRefType):
                try:
                    np_dtype(t.element_type)
                except UnsupportedType as err:
                    raise A.ArgProblem(A.KIND, str(err), i) from None
        checked = A.check_call(decl, args, A.host_view, takes="a numpy array")
    except A.ArgProblem as err:
        raise _error(kernel, err) from None
    out = []
    for t, a, v in zip(params, args, checked):
        if isinstance(t, MemRefType):
            out.append(a)
        elif is_float(t):
            out.append(round_scalar(v, t))
        elif isinstance(t, IntegerType) and t.width.data == 1:
            out.append(bool(v))
        else:
            out.append(v)
    return tuple(out)


def written_args(kernel: func.FuncOp) -> set[int]:
    """Positions of the kernel's array arguments that some op writes to."""
    entry = kernel.body.blocks.first
    out: set[int] = set()
    for op in kernel.walk():
        dest = op.dest if isinstance(op, StoreOp | MaskedStoreOp | AtomicAddOp | FragmentStoreOp) else (
            op.memref if isinstance(op, memref.StoreOp) else None)
        if isinstance(dest, BlockArgument) and dest.block is entry:
            out.add(dest.index)
    return out
