"""Logical Tile IR ops: whole-tile values, no threads, no lanes.

Each op states its shape and dtype rule in `verify_`, raising a coded
`TesseraError` that names the operand and both types. Every op also has an
implementation in `tessera.reference` (its reference semantics).
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    f64,
    i1,
)
from xdsl.ir import Attribute, Operation, SSAValue
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
    AccessSyntax,
    format_number,
    parse_arrow_type,
    parse_operand,
    parse_number,
    parse_operands_then_type,
    parse_operands_then_types,
    parse_types,
    print_arrow_type,
    print_operands_then_type,
    print_operands_then_types,
    print_types,
)
from tessera.ir.types import TileType, is_float, is_int, type_name

index = IndexType()


def fail(op: Operation, code: D.Code, message: str) -> None:
    raise D.TesseraError(code, message, op=op)


def expect_tile(op: Operation, what: str, t: Attribute, space: str | None = "reg") -> TileType:
    """The operand/result type as a TileType in `space`, or a coded error."""
    if not isinstance(t, TileType):
        fail(op, D.TILE_TYPE_MISMATCH, f"{op.name}: {what} must be a !tile.tile, got {t}")
    if space is not None and t.space_name != space:
        fail(op, D.TILE_SPACE_INVALID, f"{op.name}: {what} {t} must be in space '{space}', not '{t.space_name}'")
    return t  # type: ignore[return-value]


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


def check_memref_access(op: Operation, mem_t: Attribute, n_offsets: int, tile_t: TileType) -> None:
    """Offsets index every memref dim; the tile covers the trailing dims."""
    if not isinstance(mem_t, MemRefType):
        fail(op, D.TILE_MEMREF_MISMATCH, f"{op.name}: the memory operand must be a memref, got {mem_t}")
    rank = len(mem_t.get_shape())
    if n_offsets != rank:
        fail(op, D.TILE_MEMREF_MISMATCH, f"{op.name}: {n_offsets} offsets given for a rank-{rank} memref {mem_t}")
    if tile_t.rank > rank:
        fail(op, D.TILE_MEMREF_MISMATCH, f"{op.name}: tile {tile_t} has rank {tile_t.rank} > memref rank {rank}")
    if mem_t.element_type != tile_t.element_type:
        fail(op, D.TILE_MEMREF_MISMATCH,
             f"{op.name}: memref element type {type_name(mem_t.element_type)} differs from tile element type "
             f"{type_name(tile_t.element_type)}")


def check_offsets(op: Operation, offsets) -> None:
    for i, v in enumerate(offsets):
        if not isinstance(v.type, IndexType):
            fail(op, D.TILE_MEMREF_MISMATCH, f"{op.name}: offset #{i} must be index, got {v.type}")


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


# --- compute ------------------------------------------------------------------------

MMA_INPUTS = {"bf16": ("f32",), "f16": ("f32", "f16"), "f32": ("f32",)}


def check_mma_shapes(op: Operation, a: tuple[int, ...], b: tuple[int, ...], c: tuple[int, ...],
                     names=("a", "b", "acc")) -> None:
    if len(a) != 2 or len(b) != 2 or len(c) != 2:
        fail(op, D.TILE_MMA_SHAPE_MISMATCH, f"{op.name}: operands must be 2-D, got {a}, {b}, {c}")
    if a[1] != b[0]:
        fail(op, D.TILE_MMA_SHAPE_MISMATCH,
             f"{op.name}: {names[0]} is {a[0]}x{a[1]} but {names[1]} is {b[0]}x{b[1]}: inner dims {a[1]} and {b[0]} differ")
    if (a[0], b[1]) != c:
        fail(op, D.TILE_MMA_SHAPE_MISMATCH,
             f"{op.name}: {names[0]}@{names[1]} is {a[0]}x{b[1]} but {names[2]} is {c[0]}x{c[1]}")


def check_mma_dtypes(op: Operation, a: Attribute, b: Attribute, acc: Attribute) -> None:
    an, bn, cn = type_name(a), type_name(b), type_name(acc)
    if an != bn:
        fail(op, D.TILE_MMA_DTYPE_MISMATCH, f"{op.name}: a is {an} but b is {bn}")
    if an not in MMA_INPUTS or cn not in MMA_INPUTS[an]:
        fail(op, D.TILE_MMA_DTYPE_MISMATCH, f"{op.name}: {an} inputs with a {cn} accumulator are not supported")


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


@irdl_op_definition
class ReduceOp(_UnaryShapeOp):
    """`%r = tile.reduce sum 1 %x : 128x64 -> 128x1`: reduce along an axis, keeping it as size 1."""

    name = "tile.reduce"
    kind = prop_def(StringAttr)
    axis = prop_def(IntAttr)

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

    def _keyword(self) -> str:
        return f" {self.kind.data} {self.axis.data}"

    @classmethod
    def _parse_keyword(cls, parser: Parser) -> dict:
        kind = parser.parse_identifier(" (reduction kind)")
        axis = parser.parse_integer(allow_boolean=False)
        return {"kind": StringAttr(kind), "axis": IntAttr(axis)}


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


LOGICAL_OPS = (ProgramIdOp, NumProgramsOp, LoadOp, StoreOp, MmaOp, *BINARY_OPS, *UNARY_OPS, CmpOp, SelectOp,
               ReduceOp, BroadcastOp, ConvertOp, TransposeOp, ConstantOp, SplatOp, IotaOp)
