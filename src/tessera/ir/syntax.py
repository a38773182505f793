"""Parse/print pieces shared by the tile ops' custom assembly formats.

The tile ops use a handful of textual shapes (`%a, %b : T`, `%a, %b, %c : A, B, C`,
`%x : A -> B`, `%src[%offsets] ... : A -> B`). Each shape is written once here,
so an op states only what differs and two ops of one shape cannot drift apart
in spelling or in the order their parse errors are reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer


def format_number(v: float) -> str:
    """An MLIR-lexable spelling of a float: 0.0, -1.5e+30, inf, -inf, nan."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    s = repr(float(v))
    if "e" in s and "." not in s.split("e")[0]:
        mant, exp = s.split("e")
        s = f"{mant}.0e{exp}"
    return s


def parse_number(parser: Parser) -> float:
    """Inverse of `format_number`; also accepts integer literals."""
    negative = parser.parse_optional_punctuation("-") is not None
    if parser.parse_optional_keyword("inf") is not None:
        v = math.inf
    elif parser.parse_optional_keyword("nan") is not None:
        v = math.nan
    else:
        f = parser.parse_optional_float(allow_negative=False)
        if f is None:
            f = float(parser.parse_integer(allow_boolean=False, allow_negative=False, context_msg=" or float literal"))
        v = f
    return -v if negative else v


def parse_operand(parser: Parser) -> SSAValue:
    """One operand that is already defined above (these formats take no forward references): the value itself,
    whose type the written types after `:` restate and the verifiers check. xDSL's untyped `parse_operand()`
    did this and is deprecated; typed resolution would turn a wrong written type into a parse error instead of
    the op's coded verifier error."""
    unresolved = parser.parse_unresolved_operand()
    defined = parser.ssa_values.get(unresolved.operand_name)
    if defined is None:
        parser.raise_error("SSA value used before assignment", unresolved.span)
    if unresolved.index >= len(defined):
        parser.raise_error(f"SSA value tuple index out of bounds: the tuple has {len(defined)} values",
                           unresolved.span)
    return defined[unresolved.index]


def parse_index_list(parser: Parser) -> list[SSAValue]:
    """`[%a, %b]` of index operands."""
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_operand(parser))


def print_index_list(printer: Printer, values: Sequence[SSAValue]) -> None:
    printer.print_string("[")
    print_operands(printer, values)
    printer.print_string("]")


def parse_int_list(parser: Parser) -> ArrayAttr[IntAttr]:
    """`[2, 2]` of integer literals."""
    vals = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False))
    return ArrayAttr(IntAttr(v) for v in vals)


def print_int_list(printer: Printer, values: ArrayAttr[IntAttr]) -> None:
    printer.print_string("[" + ", ".join(str(v.data) for v in values.data) + "]")


def parse_operands(parser: Parser, n: int | None = None) -> list[SSAValue]:
    """`%a, %b, ...`: exactly `n` operands, or one or more when `n` is None."""
    values = [parse_operand(parser)]
    if n is None:
        while parser.parse_optional_punctuation(",") is not None:
            values.append(parse_operand(parser))
    for _ in range(1, n or 1):
        parser.parse_punctuation(",")
        values.append(parse_operand(parser))
    return values


def print_operands(printer: Printer, values: Sequence[SSAValue]) -> None:
    for i, v in enumerate(values):
        if i:
            printer.print_string(", ")
        printer.print_operand(v)


def parse_types(parser: Parser, n: int) -> list[Attribute]:
    """`: A, B, C`: exactly `n` types."""
    parser.parse_punctuation(":")
    types = [parser.parse_type()]
    for _ in range(1, n):
        parser.parse_punctuation(",")
        types.append(parser.parse_type())
    return types


def print_types(printer: Printer, types: Sequence[Attribute]) -> None:
    printer.print_string(" : ")
    for i, t in enumerate(types):
        if i:
            printer.print_string(", ")
        printer.print_attribute(t)


def parse_operands_then_types(parser: Parser, n: int) -> list[SSAValue]:
    """`%a, %b, %c : A, B, C`; the types are the operands' own, so they are only checked for syntax."""
    values = parse_operands(parser, n)
    parse_types(parser, n)
    return values


def print_operands_then_types(printer: Printer, values: Sequence[SSAValue]) -> None:
    printer.print_string(" ")
    print_operands(printer, values)
    print_types(printer, [v.type for v in values])


def parse_operands_then_type(parser: Parser, n: int | None = None) -> tuple[list[SSAValue], Attribute]:
    """`%a, %b : T`: operands sharing one stated type T (returned)."""
    values = parse_operands(parser, n)
    return values, parse_types(parser, 1)[0]


def print_operands_then_type(printer: Printer, values: Sequence[SSAValue], t: Attribute) -> None:
    printer.print_string(" ")
    print_operands(printer, values)
    print_types(printer, [t])


def parse_arrow_type(parser: Parser) -> Attribute:
    """`: A -> B`, returning B (A is an operand's own type)."""
    parser.parse_punctuation(":")
    parser.parse_type()
    parser.parse_punctuation("->")
    return parser.parse_type()


def print_arrow_type(printer: Printer, a: Attribute, b: Attribute) -> None:
    printer.print_string(" : ")
    printer.print_attribute(a)
    printer.print_string(" -> ")
    printer.print_attribute(b)


def parse_pad(parser: Parser) -> float:
    """`pad N`: the value read for elements past the memory edge."""
    parser.parse_keyword("pad")
    return parse_number(parser)


def print_pad(printer: Printer, padding: FloatAttr) -> None:
    printer.print_string(f" pad {format_number(padding.value.data)}")


def parse_warps(parser: Parser) -> ArrayAttr[IntAttr]:
    """`warps [wm, wn]`: the CTA's warp grid."""
    parser.parse_keyword("warps")
    return parse_int_list(parser)


def print_warps(printer: Printer, warps: ArrayAttr[IntAttr]) -> None:
    printer.print_string(" warps ")
    print_int_list(printer, warps)


class ResultTypeSyntax(IRDLOperation):
    """Base of ops spelled `%r = OP : T`, built as `cls(T)`."""

    @classmethod
    def parse(cls, parser: Parser):
        return cls(parse_types(parser, 1)[0])

    def print(self, printer: Printer) -> None:
        print_types(printer, [self.results[0].type])


class AccessSyntax(IRDLOperation):
    """Base of memory-access ops: `[%value,] %base[%offsets] [pad N] [warps [wm, wn]] : A -> B`.

    The class flags pick the parts; the op's constructor takes them by name
    (`value`, `dest` or `source`, `offsets`, `padding`, `warps`, `result_type`).
    A storing op (STORES) writes `value` into `dest` and has no result, so its
    arrow reads value type -> dest type; otherwise source type -> result type.
    """

    STORES: ClassVar[bool] = False
    HAS_OFFSETS: ClassVar[bool] = True
    HAS_PAD: ClassVar[bool] = False
    HAS_WARPS: ClassVar[bool] = False

    @classmethod
    def parse(cls, parser: Parser):
        args: dict = {}
        if cls.STORES:
            args["value"], args["dest"] = parse_operands(parser, 2)
        else:
            args["source"] = parse_operand(parser)
        if cls.HAS_OFFSETS:
            args["offsets"] = parse_index_list(parser)
        if cls.HAS_PAD:
            args["padding"] = parse_pad(parser)
        if cls.HAS_WARPS:
            args["warps"] = parse_warps(parser)
        result_type = parse_arrow_type(parser)
        if not cls.STORES:
            args["result_type"] = result_type
        return cls(**args)

    def print(self, printer: Printer) -> None:
        lead = [self.value, self.dest] if self.STORES else [self.source]
        printer.print_string(" ")
        print_operands(printer, lead)
        if self.HAS_OFFSETS:
            print_index_list(printer, self.offsets)
        if self.HAS_PAD:
            print_pad(printer, self.padding)
        if self.HAS_WARPS:
            print_warps(printer, self.warps)
        print_arrow_type(printer, lead[0].type, self.dest.type if self.STORES else self.result.type)
