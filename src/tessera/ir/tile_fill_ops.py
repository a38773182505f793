"""Tile ops that make a tile from no tile: a constant, a splatted scalar, an index ramp.

Their verifiers check that the value fits the result's element type, since
the interpreter and a GPU would disagree on one that does not.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import FloatAttr, IntAttr, IntegerType, f64
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from tessera.ir import diagnostics as D
from tessera.ir.syntax import (
    format_number,
    parse_arrow_type,
    parse_number,
    parse_operand,
    parse_types,
    print_arrow_type,
    print_types,
)
from tessera.ir.tile_checks import expect_tile, fail
from tessera.ir.types import TileType, is_int


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """`%z = tile.constant 0.0 : T`: a tile filled with one value."""

    name = "tile.constant"
    value = prop_def(FloatAttr)
    result = result_def(TileType)
    traits = traits_def(Pure())

    def __init__(self, value: float, result_type: TileType):
        super().__init__(properties={"value": FloatAttr(float(value), f64)}, result_types=[result_type])

    def verify_(self) -> None:
        t = expect_tile(self, "result", self.result.type)
        v = self.value.value.data
        if is_int(t.element_type) and not (math.isfinite(v) and v == int(v)):
            fail(self, D.TILE_ATTR_INVALID, f"tile.constant: {format_number(v)} is not an integer value for {t}")
        if is_int(t.element_type):  # the interpreter would saturate, a GPU wrap: neither is what was written
            width = t.element_type.width.data
            lo, hi = (0, 1) if width == 1 else (-2 ** (width - 1), 2 ** (width - 1) - 1)
            if not lo <= v <= hi:
                fail(self, D.TILE_ATTR_INVALID, f"tile.constant: {format_number(v)} does not fit in {t} "
                                                f"({lo} to {hi})")

    @classmethod
    def parse(cls, parser: Parser):
        v = parse_number(parser)
        return cls(v, parse_types(parser, 1)[0])  # type: ignore[arg-type]

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {format_number(self.value.value.data)}")
        print_types(printer, [self.result.type])


@irdl_op_definition
class SplatOp(IRDLOperation):
    """`%t = tile.splat %s : f32 -> T`: a tile filled with a run-time scalar of T's element type."""

    name = "tile.splat"
    scalar = operand_def()
    result = result_def(TileType)
    traits = traits_def(Pure())

    def __init__(self, scalar: SSAValue, result_type: TileType):
        super().__init__(operands=[scalar], result_types=[result_type])

    def verify_(self) -> None:
        t = expect_tile(self, "result", self.result.type)
        if self.scalar.type != t.element_type:
            fail(self, D.TILE_TYPE_MISMATCH, f"tile.splat: scalar of type {self.scalar.type} cannot fill {t}")

    @classmethod
    def parse(cls, parser: Parser):
        s = parse_operand(parser)
        return cls(s, parse_arrow_type(parser))  # type: ignore[arg-type]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.scalar)
        print_arrow_type(printer, self.scalar.type, self.result.type)


@irdl_op_definition
class IotaOp(IRDLOperation):
    """`%i = tile.iota 1 : !tile.tile<128x64xi32>`: each element holds its index along `axis`."""

    name = "tile.iota"
    axis = prop_def(IntAttr)
    result = result_def(TileType)
    traits = traits_def(Pure())

    def __init__(self, axis: int, result_type: TileType):
        super().__init__(properties={"axis": IntAttr(axis)}, result_types=[result_type])

    def verify_(self) -> None:
        t = expect_tile(self, "result", self.result.type)
        if not isinstance(t.element_type, IntegerType) or t.element_type.width.data < 32:
            fail(self, D.TILE_ELEMENT_TYPE_INVALID, f"tile.iota: result {t} needs an integer element type of >= 32 bits")
        if not 0 <= self.axis.data < t.rank:
            fail(self, D.TILE_ATTR_INVALID, f"tile.iota: axis {self.axis.data} is out of range for {t}")

    @classmethod
    def parse(cls, parser: Parser):
        axis = parser.parse_integer(allow_boolean=False)
        return cls(axis, parse_types(parser, 1)[0])  # type: ignore[arg-type]

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.axis.data}")
        print_types(printer, [self.result.type])
