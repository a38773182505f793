"""Types, arch requirements and shared helpers of the nv dialect (see `tessera.target.nvidia.ir.ops`).

`!nv.smem<RxCxT, pitch>` is a shared-memory tile handle; `!nv.async_group`
the ordinal of a committed cp.async group; per-thread registers are builtin
`vector<N x T>`. Every nv op derives from `NvOp`, which carries the oldest
arch that has its instructions (`MIN_ARCH`) and its shared-memory effect.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntAttr, IntegerAttr, VectorType, i64
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from tessera.ir import diagnostics as D
from tessera.ir.types import type_name
from tessera.target.arch import Arch


# --- arch requirements ------------------------------------------------------------


def need_arch(text: str) -> Arch:
    """`'sm_80'` -> Arch(8, 0); unlike `parse_arch` it accepts any arch, old ones included."""
    arch = Arch.read(text)
    if arch is None:
        raise ValueError(f"malformed MIN_ARCH '{text}'")
    return arch


def arch_satisfies(target: Arch, need: Arch) -> bool:
    """An "a" requirement (wgmma: sm_90a) holds on exactly that arch; others on it or newer."""
    if need.specific:
        return target == need
    return (target.major, target.minor) >= (need.major, need.minor)


def check_target_arch(root: Operation, arch: Arch) -> None:
    """NV_ARCH_UNSUPPORTED at the first op under `root` whose MIN_ARCH `arch` does not satisfy."""
    for op in root.walk():
        need = getattr(op, "MIN_ARCH", None)
        if need is not None and not arch_satisfies(arch, need_arch(need)):
            exact = " exactly" if need.endswith("a") else " or newer"
            raise D.TesseraError(D.NV_ARCH_UNSUPPORTED, f"{op.name} needs {need}{exact}, but the target is {arch}",
                                 op=op)


# --- types ------------------------------------------------------------------------


@irdl_attr_definition
class SmemType(ParametrizedAttribute, TypeAttribute):
    """`!nv.smem<128x32xbf16, 40>`: a shared-memory tile, row-major, rows `pitch` elements apart."""

    name = "nv.smem"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    pitch: IntAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, pitch: int):
        super().__init__(ArrayAttr(IntAttr(d) for d in shape), element_type, IntAttr(pitch))

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    def strides(self) -> tuple[int, ...]:
        """Element strides: the last dim is contiguous, the one before it is `pitch` apart."""
        shape, out = self.get_shape(), [1]
        for i in range(len(shape) - 1, 0, -1):
            out.insert(0, (self.pitch.data if i == len(shape) - 1 else out[0] * shape[i]))
        return tuple(out)

    def extent(self) -> int:
        """Elements spanned, padding included."""
        shape = self.get_shape()
        return shape[0] * self.strides()[0] if len(shape) > 1 else shape[0]

    def verify(self) -> None:
        shape = self.get_shape()
        if not shape or any(d <= 0 for d in shape) or self.pitch.data < shape[-1]:
            raise D.TesseraError(D.NV_OP_INVALID, f"!nv.smem shape {list(shape)} needs positive dims and a pitch "
                                                  f">= the last dim, got pitch {self.pitch.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        parser.parse_punctuation("<")
        dims = parser.parse_dimension_list()
        parser.parse_shape_delimiter()
        elem = parser.parse_type()
        parser.parse_punctuation(",")
        pitch = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation(">")
        if not dims or min(dims) <= 0 or pitch < dims[-1]:
            parser.raise_error(f"{D.NV_OP_INVALID.name}: !nv.smem shape {list(dims)} needs positive dims and a pitch "
                               f">= the last dim, got pitch {pitch}; {D.NV_OP_INVALID.hint}", start, parser.pos)
        return (ArrayAttr(IntAttr(d) for d in dims), elem, IntAttr(pitch))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "x".join(map(str, self.get_shape())) + "x")
        printer.print_attribute(self.element_type)
        printer.print_string(f", {self.pitch.data}>")


@irdl_attr_definition
class AsyncGroupType(ParametrizedAttribute, TypeAttribute):
    """`!nv.async_group`: the ordinal of a committed cp.async group (what nv.cp_async_wait waits for)."""

    name = "nv.async_group"


async_group = AsyncGroupType()


@lru_cache(maxsize=4096)
def smem_type(shape: tuple[int, ...], elem: Attribute, pitch: int) -> SmemType:
    return SmemType(shape, elem, pitch)


@lru_cache(maxsize=4096)
def vec(n: int, elem: Attribute) -> VectorType:
    """The per-thread register vector of n elements."""
    return VectorType(elem, [n])


def ints(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(attr.get_values())


def i64s(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def blocked_len(shape: Sequence[int], threads: int) -> int:
    """Slots per thread of a tile in the blocked distribution."""
    return -(-math.prod(shape) // threads)


def fail(op: Operation, message: str) -> None:
    raise D.TesseraError(D.NV_OP_INVALID, f"{op.name}: {message}", op=op)


def expect_vec(op: Operation, what: str, t: Attribute, n: int | None = None, elem: Attribute | None = None):
    if not isinstance(t, VectorType) or len(t.get_shape()) != 1:
        fail(op, f"{what} must be a 1-D vector of per-thread registers, got {t}")
    if n is not None and t.get_shape()[0] != n:
        fail(op, f"{what} {t} must hold {n} elements per thread")
    if elem is not None and t.element_type != elem:
        fail(op, f"{what} {t} must have element type {type_name(elem)}")
    return t



# --- base of every nv op ---------------------------------------------------------


class NvOp(IRDLOperation):
    """Base of nv ops: the arch they need and their shared-memory effect."""

    MIN_ARCH: ClassVar[str] = "sm_30"
    SMEM: ClassVar[str] = ""  # "", "read" or "write"
    irdl_options = (ParsePropInAttrDict(),)


MAX_SMEM = 227 * 1024  # shared memory a Hopper CTA may hold


def int_attr(v: int) -> IntegerAttr:
    return IntegerAttr(v, i64)


def check_smem_offset(op, what: str, value: int, align: int = 8) -> None:
    """`value` is a shared-memory byte offset: non-negative, `align`-aligned and inside MAX_SMEM."""
    if value < 0 or value % align or value >= MAX_SMEM:
        fail(op, f"{what} {value} must be a multiple of {align} in [0, {MAX_SMEM})")


# --- memory facts of the target ------------------------------------------------------------
SMEM_ALIGN = 128
SMEM_LIMIT = {(8, 0): 163 * 1024, (8, 6): 99 * 1024, (8, 9): 99 * 1024, (9, 0): 227 * 1024}


def elem_bytes(t: Attribute) -> int:
    """Bytes of one element of `t` in registers and memory (NV_LOWER_UNSUPPORTED for a type with no form)."""
    name = type_name(t)
    if name in ("bf16", "f16"):
        return 2
    if name in ("f32",):
        return 4
    if name in ("f64",):
        return 8
    if name.startswith("i") and name[1:].isdigit():
        return max(1, int(name[1:]) // 8)
    raise D.TesseraError(D.NV_LOWER_UNSUPPORTED, f"element type {name} has no register or memory form")
