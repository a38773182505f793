"""Small parse/print helpers shared by the tile ops' custom assembly formats."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import SSAValue
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


def parse_index_list(parser: Parser) -> list[SSAValue]:
    """`[%a, %b]` of index operands."""
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_operand)


def print_index_list(printer: Printer, values: Sequence[SSAValue]) -> None:
    printer.print_string("[")
    for i, v in enumerate(values):
        if i:
            printer.print_string(", ")
        printer.print_operand(v)
    printer.print_string("]")


def parse_int_list(parser: Parser) -> ArrayAttr[IntAttr]:
    """`[2, 2]` of integer literals."""
    vals = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False))
    return ArrayAttr(IntAttr(v) for v in vals)


def print_int_list(printer: Printer, values: ArrayAttr[IntAttr]) -> None:
    printer.print_string("[" + ", ".join(str(v.data) for v in values.data) + "]")


def print_operands(printer: Printer, values: Sequence[SSAValue]) -> None:
    for i, v in enumerate(values):
        if i:
            printer.print_string(", ")
        printer.print_operand(v)
