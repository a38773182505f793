"""Tile ops that address global memory: the program's grid coordinates, tile load and store.

A tile program finds its tile from `tile.program_id` and reads and writes it
with `tile.load`/`tile.store`; the access rules are in `tile_checks` because
the fragment ops' shared-memory copies apply them too.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import FloatAttr, IndexType, IntAttr, MemRefType, f64, i1
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from tessera.ir import diagnostics as D
from tessera.ir.syntax import (AccessSyntax, parse_arrow_type, parse_index_list, parse_operand, parse_operands,
                               print_arrow_type, print_index_list, print_operands)
from tessera.ir.tile_checks import check_memref_access, check_offsets, expect_tile, fail
from tessera.ir.types import TileType, type_name

index = IndexType()


# --- program ids ----------------------------------------------------------------


class _GridQueryOp(IRDLOperation):
    """`%x = tile.program_id 0`: a CTA coordinate (or grid extent) along an axis."""

    axis = prop_def(IntAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, axis: int):
        super().__init__(properties={"axis": IntAttr(axis)}, result_types=[index])

    def verify_(self) -> None:
        if self.axis.data not in (0, 1, 2):
            fail(self, D.TILE_ATTR_INVALID, f"{self.name}: axis {self.axis.data} is not 0, 1 or 2")

    @classmethod
    def parse(cls, parser: Parser):
        return cls(parser.parse_integer(allow_boolean=False))

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.axis.data}")


@irdl_op_definition
class ProgramIdOp(_GridQueryOp):
    name = "tile.program_id"


@irdl_op_definition
class NumProgramsOp(_GridQueryOp):
    name = "tile.num_programs"


# --- global memory <-> tiles --------------------------------------------------------


@irdl_op_definition
class LoadOp(AccessSyntax):
    """Read a tile whose origin is `offsets`; elements past the memref edge read `padding`."""

    name = "tile.load"
    HAS_PAD: ClassVar[bool] = True
    source = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    padding = prop_def(FloatAttr)
    result = result_def(TileType)

    def __init__(self, source: SSAValue, offsets, result_type: TileType, padding: float = 0.0):
        super().__init__(operands=[source, list(offsets)], result_types=[result_type],
                         properties={"padding": FloatAttr(padding, f64)})

    def verify_(self) -> None:
        t = expect_tile(self, "result", self.result.type, "reg")
        check_offsets(self, self.offsets)
        check_memref_access(self, self.source.type, len(self.offsets), t)


@irdl_op_definition
class StoreOp(AccessSyntax):
    """Write a tile at `offsets`; elements past the memref edge are dropped."""

    name = "tile.store"
    STORES: ClassVar[bool] = True
    value = operand_def(TileType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)

    def __init__(self, value: SSAValue, dest: SSAValue, offsets):
        super().__init__(operands=[value, dest, list(offsets)])

    def verify_(self) -> None:
        t = expect_tile(self, "stored value", self.value.type, "reg")
        check_offsets(self, self.offsets)
        check_memref_access(self, self.dest.type, len(self.offsets), t)


def _check_mask(op, mask: SSAValue, value_t: TileType, what: str) -> None:
    """A write's mask: an i1 register tile of the shape of the value written (`what` names it)."""
    m = expect_tile(op, "mask", mask.type, "reg")
    if m.element_type != i1:
        fail(op, D.TILE_ELEMENT_TYPE_INVALID, f"{op.name}: the mask {m} must be an i1 tile")
    if m.get_shape() != value_t.get_shape():
        fail(op, D.TILE_SHAPE_MISMATCH, f"{op.name}: the mask {m} and the {what} {value_t} differ in shape")


def _parse_write(parser: Parser, mask_required: bool):
    """`%v, %M[%i, %j] [if %m] : A -> memref` (the masked store's and the atomic add's form): value, dest, offsets,
    mask (None when absent)."""
    value, dest = parse_operands(parser, 2)
    offsets = parse_index_list(parser)
    if mask_required:
        parser.parse_keyword("if")
    mask = parse_operand(parser) if mask_required or parser.parse_optional_keyword("if") else None
    parse_arrow_type(parser)
    return value, dest, offsets, mask


def _print_write(printer: Printer, op) -> None:
    printer.print_string(" ")
    print_operands(printer, [op.value, op.dest])
    print_index_list(printer, op.offsets)
    if op.mask is not None:
        printer.print_string(" if ")
        printer.print_operand(op.mask)
    print_arrow_type(printer, op.value.type, op.dest.type)


@irdl_op_definition
class MaskedStoreOp(IRDLOperation):
    """`tile.masked_store %v, %M[%i, %j] if %m : A -> memref`: write the elements of a tile where the i1 tile
    `mask` is true (and inside the memref); memory under a false element is not written. A separate op, not a
    flag of tile.store, so that a pass that does not know masks refuses it instead of storing every element."""

    name = "tile.masked_store"
    value = operand_def(TileType)
    mask = operand_def(TileType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)

    def __init__(self, value: SSAValue, mask: SSAValue, dest: SSAValue, offsets):
        super().__init__(operands=[value, mask, dest, list(offsets)])

    def verify_(self) -> None:
        t = expect_tile(self, "stored value", self.value.type, "reg")
        _check_mask(self, self.mask, t, "stored value")
        check_offsets(self, self.offsets)
        check_memref_access(self, self.dest.type, len(self.offsets), t)

    @classmethod
    def parse(cls, parser: Parser):
        value, dest, offsets, mask = _parse_write(parser, mask_required=True)
        return cls(value, mask, dest, offsets)

    def print(self, printer: Printer) -> None:
        _print_write(printer, self)


ATOMIC_TYPES = ("f32", "f64", "i32")  # what atomicAdd takes on every arch Tessera targets


@irdl_op_definition
class AtomicAddOp(IRDLOperation):
    """`tile.atomic_add %v, %M[%i, %j] [if %m] : A -> memref`: add each element of a tile into memory atomically
    (programs may add into the same elements in any order); elements past the edge, or under a false element
    of the optional i1 `mask`, add nothing. f32, f64 or i32 (what atomicAdd takes)."""

    name = "tile.atomic_add"
    value = operand_def(TileType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    mask = opt_operand_def(TileType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, value: SSAValue, dest: SSAValue, offsets, mask: SSAValue | None = None):
        super().__init__(operands=[value, dest, list(offsets), [] if mask is None else [mask]])

    def verify_(self) -> None:
        t = expect_tile(self, "added value", self.value.type, "reg")
        if type_name(t.element_type) not in ATOMIC_TYPES:
            fail(self, D.TILE_ELEMENT_TYPE_INVALID, f"tile.atomic_add adds {', '.join(ATOMIC_TYPES)} tiles, not {t}")
        if self.mask is not None:
            _check_mask(self, self.mask, t, "added value")
        check_offsets(self, self.offsets)
        check_memref_access(self, self.dest.type, len(self.offsets), t)

    @classmethod
    def parse(cls, parser: Parser):
        value, dest, offsets, mask = _parse_write(parser, mask_required=False)
        return cls(value, dest, offsets, mask)

    def print(self, printer: Printer) -> None:
        _print_write(printer, self)
