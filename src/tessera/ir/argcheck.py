"""The argument rules every lane applies before a kernel runs, written once.

The reference interpreter (`tessera.reference.run`), `CompiledKernel.launch`
and the runtime's `ArgBinder` all call this module, so what one lane refuses
no other lane runs (two tensors traced with dims ("M", "N") but passed with
different shapes used to run on the reference lane with a wrong result). It
knows nothing of devices:

* a kernel's arguments are declared (`declare`) as `ArrayArg`s -- element
  type, each dim a static int, a symbol (dims sharing one are promised equal)
  or None (any size), and whether the kernel writes it -- and `ScalarArg`s
  (index, iN or a float type);
* `check_call(decl, args, read)` checks one call: the count; per array its
  kind, element type, rank, C-contiguity, static dims, the 32-bit index limit
  and the agreement of dims that share a symbol; per scalar its type and range
  (`scalar_value`); then that no array the kernel writes is read-only or
  shares memory with another argument (emitted pointers are `__restrict__`);
* a refusal is an `ArgProblem` (rule, message, argument index, hint); each lane
  turns it into its own coded error, naming the argument its own way.

`read(x)` is the lane's reader of one array argument: it returns anything
with `shape`, `dtype` (Tessera's element name; None or a foreign spelling if
there is none), `strides` (elements), `contiguous`, `readonly`, `ptr` (device
address, None for host memory) and `nbytes` -- `tessera.compiler.arrays.view`
on the compiled lane, `host_view` for numpy -- or None when `x` is not an
array the lane takes.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import NamedTuple

import ml_dtypes
import numpy as np

INDEX_LIMIT = 2**31  # index values are 32-bit inside an emitted kernel: dims and index scalars stay below
# rules (ArgProblem.rule); each lane maps them to its codes
COUNT, KIND, DTYPE, RANK, LAYOUT, SHAPE, SYMBOL, LIMIT, READONLY, ALIAS, VALUE = (
    "count", "kind", "dtype", "rank", "layout", "shape", "symbol", "limit", "readonly", "alias", "value")

# element type -> numpy dtype name (ml_dtypes supplies 'bfloat16'); i1 memrefs hold numpy bools
NUMPY_NAMES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
               "u64": "uint64", "i32": "int32", "u32": "uint32", "i16": "int16", "u16": "uint16", "i8": "int8",
               "u8": "uint8", "i1": "bool"}
ELEM_OF_NUMPY = {v: k for k, v in NUMPY_NAMES.items()}
INT_RANGES = {"i1": (0, 1), "i8": (-2**7, 2**7 - 1), "i16": (-2**15, 2**15 - 1), "i32": (-2**31, 2**31 - 1),
              "u32": (0, 2**32 - 1), "i64": (-2**63, 2**63 - 1), "u64": (0, 2**64 - 1),
              "index": (-INDEX_LIMIT, INDEX_LIMIT - 1)}
FLOAT_KINDS = ("f16", "bf16", "f32", "f64")
_F32_OVERFLOW = 2.0**128 - 2.0**103  # the smallest magnitude that rounds to inf in f32 (ties to even)
_NARROW = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


class ArgProblem(Exception):
    """One refused argument: `rule` (COUNT, KIND, ...), `message` (reads after the argument's name),
    `index` (its position; None for COUNT) and an optional `hint`."""

    def __init__(self, rule: str, message: str, index: int | None = None, hint: str | None = None):
        super().__init__(message)
        self.rule, self.message, self.index, self.hint = rule, message, index, hint


class ArrayArg(NamedTuple):
    """A memref argument: `label` names it inside other arguments' messages ("'A'", "#0 (%A)")."""

    name: str
    label: str
    elem: str
    dims: tuple[int | str | None, ...]
    written: bool = False


class ScalarArg(NamedTuple):
    """A by-value argument of `kind` index, iN, f16, bf16, f32 or f64 (anything else is refused as KIND)."""

    name: str
    label: str
    kind: str


class HostView(NamedTuple):
    """A numpy array as `check_call` reads it (the fields of `tessera.compiler.arrays.ArrayView` it uses)."""

    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...] | None
    contiguous: bool
    readonly: bool
    nbytes: int
    ptr: None = None


def host_view(x) -> HostView | None:
    """The HostView of a numpy array, None for anything else."""
    if not isinstance(x, np.ndarray):
        return None
    item = x.itemsize
    strides = tuple(s // item for s in x.strides) if item and all(s % item == 0 for s in x.strides) else None
    return HostView(x.shape, ELEM_OF_NUMPY.get(x.dtype.name, x.dtype.name), strides, x.flags.c_contiguous,
                    not x.flags.writeable, x.nbytes)


def declare(arg_types, names, labels=None, specs=None, written=()) -> tuple[ArrayArg | ScalarArg, ...]:
    """The declared arguments of a func.func from its input types.

    names / labels: per argument (labels default to the names quoted). specs:
    per argument the tracer's TensorSpec/ScalarSpec (their `shape` holds the
    symbol of each `?` dim), or None for a bare module, whose `?` dims are free.
    written: positions of the arrays the kernel stores to.
    """
    from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerType, MemRefType  # func.func types: loaded

    from tessera.ir.types import is_float, type_name

    labels = labels or [repr(n) for n in names]
    specs = specs or [None] * len(arg_types)
    out = []
    for i, (t, name, label, spec) in enumerate(zip(arg_types, names, labels, specs)):
        if isinstance(t, MemRefType):
            declared = getattr(spec, "shape", ())
            if len(declared) != len(t.get_shape()):
                declared = (None,) * len(t.get_shape())
            dims = tuple(s if s != DYNAMIC_INDEX else d if isinstance(d, str) else None
                         for s, d in zip(t.get_shape(), declared))
            elem = "i64" if isinstance(t.element_type, IndexType) else type_name(t.element_type)  # numpy int64
            out.append(ArrayArg(name, label, elem, dims, i in written))
        elif isinstance(t, IndexType | IntegerType) or is_float(t):
            out.append(ScalarArg(name, label, type_name(t)))
        else:
            out.append(ScalarArg(name, label, str(t)))
    return tuple(out)


def check_count(names: Sequence[str], args) -> None:
    """COUNT unless `args` is a sequence of one value per name."""
    if not isinstance(args, Sequence) or isinstance(args, str | bytes):
        raise ArgProblem(COUNT, f"takes a list of {len(names)} arguments, got {type(args).__name__}")
    if len(args) != len(names):
        raise ArgProblem(COUNT, f"takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")


def _overflows(kind: str, v: float) -> bool:
    if kind == "f64" or not math.isfinite(v):
        return False
    if kind == "f32":
        return abs(v) >= _F32_OVERFLOW
    with np.errstate(over="ignore"):  # f16 and bf16 round through f32, as the reference interpreter does
        return bool(np.isinf(np.float32(v).astype(_NARROW[kind])))


def scalar_value(kind: str, v):
    """`v` as the int or float a `kind` parameter holds; KIND if it is not that kind of number, VALUE if
    it is out of range (ints) or finite but rounds to inf (floats). index is 32-bit (INDEX_LIMIT)."""
    rng = INT_RANGES.get(kind)
    if rng is not None:
        if v.__class__ is not int:
            if (isinstance(v, bool | np.bool_) and kind != "i1") or not isinstance(v, numbers.Integral | np.bool_):
                raise ArgProblem(KIND, f"must be an int ({kind}), got {type(v).__name__}")
            v = int(v)
        if not rng[0] <= v <= rng[1]:
            why = "; kernel indices are 32-bit" if kind == "index" else ""
            raise ArgProblem(VALUE, f"value {v} is out of range [{rng[0]}, {rng[1]}] of {kind}{why}")
        return v
    if kind in FLOAT_KINDS:
        if v.__class__ is not float:
            if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
                raise ArgProblem(KIND, f"must be a number ({kind}), got {type(v).__name__}")
            v = float(v)
        if _overflows(kind, v):
            raise ArgProblem(VALUE, f"value {v} overflows {kind}")
        return v
    raise ArgProblem(KIND, f"is a parameter of type {kind}, which cannot be passed",
                     hint="kernel parameters are memrefs and index/iN/float scalars")


def dtype_hint(elem: str) -> str:
    spelling = "ml_dtypes.bfloat16" if elem == "bf16" else f"np.{NUMPY_NAMES.get(elem, elem)}"
    return f"convert with .astype({spelling})"


def check_dtype(elem: str, got: str | None, host: bool = False) -> None:
    if got != elem:
        raise ArgProblem(DTYPE, f"has element type {got or 'unknown'}, the kernel takes {elem}",
                         hint=dtype_hint(elem) if host else None)


def check_layout(contiguous: bool, shape=None, strides=None) -> None:
    """LAYOUT unless C-contiguous (`strides` in elements, for the message)."""
    if not contiguous:
        shown = "" if shape is None else f" (shape {list(shape)}" + ("" if strides is None else
                                                                    f", strides {list(strides)}") + ")"
        raise ArgProblem(LAYOUT, f"is not C-contiguous{shown}", hint="pass np.ascontiguousarray(x) (or x.contiguous())")


def check_writeable(readonly: bool) -> None:
    if readonly:
        raise ArgProblem(READONLY, "is read-only, but the kernel writes it",
                         hint="pass a writeable array (e.g. x.copy()) for every output")


def check_extent(count: int, need: int, terms) -> None:
    """An array of `count` elements passed where the launch indexes `need` (the product of `terms`)."""
    if count < need:
        raise ArgProblem(SHAPE, f"holds {count} elements, the launch needs at least {need} "
                                f"({' * '.join(map(str, terms))})")


def _check_array(arg: ArrayArg, v, symbols: dict) -> None:
    check_dtype(arg.elem, v.dtype, v.ptr is None)
    shape = tuple(v.shape)
    if len(shape) != len(arg.dims):
        raise ArgProblem(RANK, f"has rank {len(shape)}, the kernel takes rank {len(arg.dims)} (shape {list(shape)})")
    check_layout(v.contiguous, shape, v.strides)
    for d, (size, want) in enumerate(zip(shape, arg.dims)):
        if isinstance(want, int) and size != want:
            raise ArgProblem(SHAPE, f"dim {d} is {size}, the kernel's is {want} (shape {list(shape)})")
        if size >= INDEX_LIMIT:
            raise ArgProblem(LIMIT, f"dim {d} is {size}; kernel indices are 32-bit (< 2**31)",
                             hint="split the problem into arrays whose dims stay below 2**31")
        if isinstance(want, str):
            seen = symbols.setdefault(want, (size, arg.label, d))
            if seen[0] != size:
                raise ArgProblem(SYMBOL, f"dim {d} ('{want}') is {size}, but argument {seen[1]} dim {seen[2]} "
                                         f"('{want}') is {seen[0]}: dims traced with one symbol must be equal",
                                 hint="pass arrays whose dims agree wherever the kernel's specs share a symbol, or "
                                      "trace with distinct symbols")


def _overlap(a, va, b, vb) -> bool:
    if not va.nbytes or not vb.nbytes:
        return False
    if va.ptr is not None and vb.ptr is not None:
        return va.ptr < vb.ptr + vb.nbytes and vb.ptr < va.ptr + va.nbytes
    # host arrays (both C-contiguous by now, so their byte bounds are their memory)
    return va.ptr is None and vb.ptr is None and isinstance(a, np.ndarray) and isinstance(b, np.ndarray) \
        and np.may_share_memory(a, b)


def check_call(decl: Sequence[ArrayArg | ScalarArg], args, read=host_view, takes: str = "an array") -> list:
    """Check `args` against `decl` (see the module docstring); return per argument what `read` gave
    (arrays) or the checked number (scalars). Raises the first ArgProblem, naming its index."""
    check_count([a.name for a in decl], args)
    symbols: dict = {}
    out = []
    for i, (arg, x) in enumerate(zip(decl, args)):
        try:
            if isinstance(arg, ScalarArg):
                out.append(scalar_value(arg.kind, x))
                continue
            v = read(x)
            if v is None:
                raise ArgProblem(KIND, f"is a {type(x).__name__}, not {takes}")
            _check_array(arg, v, symbols)
            out.append(v)
        except ArgProblem as err:
            err.index = i
            raise
    for i, arg in enumerate(decl):
        if not (isinstance(arg, ArrayArg) and arg.written):
            continue
        try:
            check_writeable(out[i].readonly)
        except ArgProblem as err:
            err.index = i
            raise
        for j, other in enumerate(decl):
            if j != i and isinstance(other, ArrayArg) and _overlap(args[i], out[i], args[j], out[j]):
                raise ArgProblem(ALIAS, f"shares memory with argument {other.label}, and the kernel writes it "
                                        "(its arrays are __restrict__: one it writes must not overlap another)",
                                 i, "pass a separate output array")
    return out
