"""Tile ops that compute on whole register tiles: mma, the elementwise family, cmp and select.

Elementwise ops share one base (`ElementwiseOp`) that owns their type rule and
syntax, so each concrete op is a line in the table below.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from tessera.ir import diagnostics as D
from tessera.ir.syntax import (
    parse_operands_then_type,
    parse_operands_then_types,
    print_operands_then_type,
    print_operands_then_types,
)
from tessera.ir.tile_checks import check_mma_dtypes, check_mma_shapes, expect_tile, fail
from tessera.ir.types import TileType, is_float


@irdl_op_definition
class MmaOp(IRDLOperation):
    """acc + a @ b on whole tiles; the result has the accumulator's type."""

    name = "tile.mma"
    a = operand_def(TileType)
    b = operand_def(TileType)
    acc = operand_def(TileType)
    result = result_def(TileType)
    traits = traits_def(Pure())

    def __init__(self, a: SSAValue, b: SSAValue, acc: SSAValue):
        super().__init__(operands=[a, b, acc], result_types=[acc.type])

    def verify_(self) -> None:
        a = expect_tile(self, "a", self.a.type)
        b = expect_tile(self, "b", self.b.type)
        c = expect_tile(self, "acc", self.acc.type)
        check_mma_shapes(self, a.get_shape(), b.get_shape(), c.get_shape())
        check_mma_dtypes(self, a.element_type, b.element_type, c.element_type)
        if self.result.type != c:
            fail(self, D.TILE_TYPE_MISMATCH, f"{self.name}: result {self.result.type} differs from acc {c}")

    @classmethod
    def parse(cls, parser: Parser):
        return cls(*parse_operands_then_types(parser, 3))

    def print(self, printer: Printer) -> None:
        print_operands_then_types(printer, (self.a, self.b, self.acc))


class ElementwiseOp(IRDLOperation):
    """Base of `%r = tile.OP %x, %y : T`: every operand and the result share type T."""

    args = var_operand_def(TileType)
    result = result_def(TileType)
    traits = traits_def(Pure())
    ARITY: ClassVar[int] = 0
    FLOAT_ONLY: ClassVar[bool] = False

    def __init__(self, *args: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[list(args)], result_types=[result_type or args[0].type])

    def verify_(self) -> None:
        if len(self.args) != self.ARITY:
            fail(self, D.IR_VERIFY, f"{self.name} takes {self.ARITY} operand(s), got {len(self.args)}")
        t = expect_tile(self, "result", self.result.type)
        for i, a in enumerate(self.args):
            if a.type != t:
                fail(self, D.TILE_TYPE_MISMATCH, f"{self.name}: operand #{i} has type {a.type} but the result is {t}")
        if self.FLOAT_ONLY and not is_float(t.element_type):
            fail(self, D.TILE_ELEMENT_TYPE_INVALID, f"{self.name} needs a float tile, got {t}")
        if t.element_type == i1:  # i1 arithmetic has no one meaning (wrapping? signed?): masks use select and cmp
            fail(self, D.TILE_ELEMENT_TYPE_INVALID, f"{self.name} is not defined on i1 (mask) tiles, got {t}; "
                                                    "combine masks with tile.select")

    @classmethod
    def parse(cls, parser: Parser):
        args, result_type = parse_operands_then_type(parser)
        return cls(*args, result_type=result_type)

    def print(self, printer: Printer) -> None:
        print_operands_then_type(printer, self.args, self.result.type)


class BinaryOp(ElementwiseOp):
    ARITY: ClassVar[int] = 2


class UnaryOp(ElementwiseOp):
    ARITY: ClassVar[int] = 1


class FloatUnaryOp(ElementwiseOp):
    ARITY: ClassVar[int] = 1
    FLOAT_ONLY: ClassVar[bool] = True


def _elementwise(op_name: str, base: type[ElementwiseOp]) -> type[ElementwiseOp]:
    cls_name = op_name.split(".")[1].title().replace("_", "") + "Op"
    return irdl_op_definition(type(cls_name, (base,), {"name": op_name, "__doc__": f"Elementwise {op_name}."}))


AddOp = _elementwise("tile.add", BinaryOp)
SubOp = _elementwise("tile.sub", BinaryOp)
MulOp = _elementwise("tile.mul", BinaryOp)
DivOp = _elementwise("tile.div", BinaryOp)
MaxOp = _elementwise("tile.max", BinaryOp)
MinOp = _elementwise("tile.min", BinaryOp)
NegOp = _elementwise("tile.neg", UnaryOp)
AbsOp = _elementwise("tile.abs", UnaryOp)
ExpOp = _elementwise("tile.exp", FloatUnaryOp)
Exp2Op = _elementwise("tile.exp2", FloatUnaryOp)
LogOp = _elementwise("tile.log", FloatUnaryOp)
SqrtOp = _elementwise("tile.sqrt", FloatUnaryOp)
RsqrtOp = _elementwise("tile.rsqrt", FloatUnaryOp)
TanhOp = _elementwise("tile.tanh", FloatUnaryOp)
ErfOp = _elementwise("tile.erf", FloatUnaryOp)
BINARY_OPS = (AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp)
UNARY_OPS = (NegOp, AbsOp, ExpOp, Exp2Op, LogOp, SqrtOp, RsqrtOp, TanhOp, ErfOp)

CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CmpOp(IRDLOperation):
    """`%m = tile.cmp lt %x, %y : T`: elementwise compare giving an i1 tile of T's shape."""

    name = "tile.cmp"
    predicate = prop_def(StringAttr)
    lhs = operand_def(TileType)
    rhs = operand_def(TileType)
    result = result_def(TileType)
    traits = traits_def(Pure())

    def __init__(self, predicate: str, lhs: SSAValue, rhs: SSAValue):
        t = lhs.type
        res = t.with_element(i1) if isinstance(t, TileType) else t
        super().__init__(operands=[lhs, rhs], result_types=[res], properties={"predicate": StringAttr(predicate)})

    def verify_(self) -> None:
        if self.predicate.data not in CMP_PREDICATES:
            fail(self, D.TILE_ATTR_INVALID, f"tile.cmp: predicate '{self.predicate.data}' is not one of {', '.join(CMP_PREDICATES)}")
        t = expect_tile(self, "lhs", self.lhs.type)
        if self.rhs.type != t:
            fail(self, D.TILE_TYPE_MISMATCH, f"tile.cmp: rhs has type {self.rhs.type} but lhs is {t}")
        if self.result.type != t.with_element(i1):
            fail(self, D.TILE_TYPE_MISMATCH, f"tile.cmp: result must be {t.with_element(i1)}, got {self.result.type}")

    @classmethod
    def parse(cls, parser: Parser):
        pred = parser.parse_identifier(" (comparison predicate)")
        (lhs, rhs), _ = parse_operands_then_type(parser, 2)
        return cls(pred, lhs, rhs)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate.data}")
        print_operands_then_type(printer, (self.lhs, self.rhs), self.lhs.type)


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`%r = tile.select %c, %x, %y : T`: where c (an i1 tile of T's shape) pick x, else y."""

    name = "tile.select"
    cond = operand_def(TileType)
    lhs = operand_def(TileType)
    rhs = operand_def(TileType)
    result = result_def(TileType)
    traits = traits_def(Pure())

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[cond, lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        t = expect_tile(self, "result", self.result.type)
        for what, v in (("true value", self.lhs), ("false value", self.rhs)):
            if v.type != t:
                fail(self, D.TILE_TYPE_MISMATCH, f"tile.select: {what} has type {v.type} but the result is {t}")
        c = expect_tile(self, "condition", self.cond.type)
        if c != t.with_element(i1):
            fail(self, D.TILE_ELEMENT_TYPE_INVALID, f"tile.select: condition must be {t.with_element(i1)}, got {c}")

    @classmethod
    def parse(cls, parser: Parser):
        return cls(*parse_operands_then_type(parser, 3)[0])

    def print(self, printer: Printer) -> None:
        print_operands_then_type(printer, (self.cond, self.lhs, self.rhs), self.result.type)
