"""Tile ops from one source tile to a result whose type the op derives from it.

reduce, broadcast, convert, transpose and reshape share the `%r = tile.OP %x : A -> B`
syntax (`_UnaryShapeOp`); each states in `verify_` how B follows from A.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import IntAttr, StringAttr, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from tessera.ir import diagnostics as D
from tessera.ir.syntax import parse_arrow_type, parse_operand, print_arrow_type
from tessera.ir.tile_checks import expect_tile, fail
from tessera.ir.types import TileType


class _UnaryShapeOp(IRDLOperation):
    """Base of `%r = tile.OP %x : A -> B` ops whose rule relates A and B."""

    source = operand_def(TileType)
    result = result_def(TileType)
    traits = traits_def(Pure())

    def __init__(self, source: SSAValue, result_type: Attribute, properties=None):
        super().__init__(operands=[source], result_types=[result_type], properties=properties or {})

    def _keyword(self) -> str:
        return ""

    @classmethod
    def _parse_keyword(cls, parser: Parser) -> dict:
        return {}

    @classmethod
    def parse(cls, parser: Parser):
        props = cls._parse_keyword(parser)
        src = parse_operand(parser)
        res = parse_arrow_type(parser)
        return cls(src, res, props) if props else cls(src, res)

    def print(self, printer: Printer) -> None:
        printer.print_string(self._keyword() + " ")
        printer.print_operand(self.source)
        print_arrow_type(printer, self.source.type, self.result.type)


REDUCE_KINDS = ("sum", "max", "min")


class _KindAxisOp(_UnaryShapeOp):
    """Base of `%r = tile.OP KIND AXIS %x : A -> B` (reduce, scan)."""

    kind = prop_def(StringAttr)
    axis = prop_def(IntAttr)

    def _keyword(self) -> str:
        return f" {self.kind.data} {self.axis.data}"

    @classmethod
    def _parse_keyword(cls, parser: Parser) -> dict:
        kind = parser.parse_identifier(f" ({cls.name} kind)")
        axis = parser.parse_integer(allow_boolean=False)
        return {"kind": StringAttr(kind), "axis": IntAttr(axis)}


@irdl_op_definition
class ReduceOp(_KindAxisOp):
    """`%r = tile.reduce sum 1 %x : 128x64 -> 128x1`: reduce along an axis, keeping it as size 1."""

    name = "tile.reduce"

    def __init__(self, source: SSAValue, result_type: Attribute | None = None, properties=None, *,
                 kind: str = "sum", axis: int = 1):
        if properties is None:
            properties = {"kind": StringAttr(kind), "axis": IntAttr(axis)}
        if result_type is None:
            shape = list(source.type.get_shape())
            shape[properties["axis"].data] = 1
            result_type = source.type.with_shape(shape)
        super().__init__(source, result_type, properties)

    def verify_(self) -> None:
        if self.kind.data not in REDUCE_KINDS:
            fail(self, D.TILE_ATTR_INVALID, f"tile.reduce: kind '{self.kind.data}' is not one of {', '.join(REDUCE_KINDS)}")
        s = expect_tile(self, "source", self.source.type)
        if s.element_type == i1:
            fail(self, D.TILE_ELEMENT_TYPE_INVALID, f"tile.reduce is not defined on i1 (mask) tiles, got {s}; "
                                                    "convert the mask to i32 first")
        if not 0 <= self.axis.data < s.rank:
            fail(self, D.TILE_ATTR_INVALID, f"tile.reduce: axis {self.axis.data} is out of range for {s}")
        shape = list(s.get_shape())
        shape[self.axis.data] = 1
        want = s.with_shape(shape)
        if self.result.type != want:
            fail(self, D.TILE_SHAPE_MISMATCH, f"tile.reduce: reducing {s} along axis {self.axis.data} gives {want}, "
                                              f"not {self.result.type}")


@irdl_op_definition
class BroadcastOp(_UnaryShapeOp):
    """Expand size-1 dims (numpy rules, same rank, same element type)."""

    name = "tile.broadcast"

    def verify_(self) -> None:
        s = expect_tile(self, "source", self.source.type)
        r = expect_tile(self, "result", self.result.type)
        if s.element_type != r.element_type or s.rank != r.rank or any(
                a not in (1, b) for a, b in zip(s.get_shape(), r.get_shape())):
            fail(self, D.TILE_SHAPE_MISMATCH, f"tile.broadcast: cannot broadcast {s} to {r}: "
                                              "ranks and element types must match and only size-1 dims expand")


@irdl_op_definition
class ConvertOp(_UnaryShapeOp):
    """Element type conversion (round to nearest even for narrowing floats)."""

    name = "tile.convert"

    def verify_(self) -> None:
        s = expect_tile(self, "source", self.source.type)
        r = expect_tile(self, "result", self.result.type)
        if s.get_shape() != r.get_shape():
            fail(self, D.TILE_SHAPE_MISMATCH, f"tile.convert: source {s} and result {r} differ in shape")


@irdl_op_definition
class TransposeOp(_UnaryShapeOp):
    """Swap the two dims of a 2-D tile."""

    name = "tile.transpose"

    def verify_(self) -> None:
        s = expect_tile(self, "source", self.source.type)
        r = expect_tile(self, "result", self.result.type)
        if s.rank != 2 or r != s.with_shape(s.get_shape()[::-1]):
            fail(self, D.TILE_SHAPE_MISMATCH, f"tile.transpose: transposing {s} gives "
                                              f"{s.with_shape(s.get_shape()[::-1]) if s.rank == 2 else 'nothing (rank != 2)'}, not {r}")


@irdl_op_definition
class ReshapeOp(_UnaryShapeOp):
    """The same elements in the same row-major order under another shape of the same count: a [N] row as
    [1, N] (`w[None, :]`, tl.expand_dims), [N, 1], or back (squeeze)."""

    name = "tile.reshape"

    def verify_(self) -> None:
        s = expect_tile(self, "source", self.source.type)
        r = expect_tile(self, "result", self.result.type)
        if r != s.with_shape(r.get_shape()) or math.prod(s.get_shape()) != math.prod(r.get_shape()):
            fail(self, D.TILE_SHAPE_MISMATCH, f"tile.reshape: cannot reshape {s} to {r}: the element count, element "
                                              "type and memory space must stay the same")


SCAN_KINDS = ("sum",)
SCAN_TYPES = ("f32", "f64", "i32")


@irdl_op_definition
class ScanOp(_KindAxisOp):
    """`%r = tile.scan sum 1 %x : A -> A`: the inclusive prefix (cumulative sum) along an axis; f32, f64 or i32
    (a 16-bit float tile is converted first: its partial sums would round at every step)."""

    name = "tile.scan"

    def __init__(self, source: SSAValue, result_type: Attribute | None = None, properties=None, *,
                 kind: str = "sum", axis: int = 1):
        if properties is None:
            properties = {"kind": StringAttr(kind), "axis": IntAttr(axis)}
        super().__init__(source, source.type if result_type is None else result_type, properties)

    def verify_(self) -> None:
        from tessera.ir.types import type_name

        if self.kind.data not in SCAN_KINDS:
            fail(self, D.TILE_ATTR_INVALID, f"tile.scan: kind '{self.kind.data}' is not one of {', '.join(SCAN_KINDS)}")
        s = expect_tile(self, "source", self.source.type)
        if type_name(s.element_type) not in SCAN_TYPES:
            fail(self, D.TILE_ELEMENT_TYPE_INVALID, f"tile.scan takes {', '.join(SCAN_TYPES)} tiles, got {s}; "
                                                    "convert a 16-bit float tile to f32 first")
        if not 0 <= self.axis.data < s.rank:
            fail(self, D.TILE_ATTR_INVALID, f"tile.scan: axis {self.axis.data} is out of range for {s}")
        if self.result.type != s:
            fail(self, D.TILE_SHAPE_MISMATCH, f"tile.scan: a scan of {s} is {s}, not {self.result.type}")
