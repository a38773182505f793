"""Tile dialect types: logical tiles, typed fragments and async tokens.

`!tile.tile<128x64xbf16>` is a logical tile (a value in registers); with a
space (`smem`, `global`) it names a buffer or a view instead. A fragment type
carries the whole contract that decides whether two fragments are
interchangeable (DESIGN section 2), so compatibility is type equality and
block arguments verify without looking at producers.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerType,
    StringAttr,
    bf16,
    f16,
    f32,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from tessera.ir import diagnostics as D

SPACES = ("reg", "smem", "global")
ROLES = ("a", "b", "acc")
LAYOUTS = ("row", "col")
FAMILIES = ("auto", "mma_sync", "wgmma")
FLOAT_TYPES = (BFloat16Type, Float16Type, Float32Type, Float64Type)
_ELEM_NAMES = {"bf16": bf16, "f16": f16, "f32": f32}
_ACC_NAMES = {"f32": f32, "f16": f16}


def is_float(t: Attribute) -> bool:
    return isinstance(t, FLOAT_TYPES)


def is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType)


def type_name(t: Attribute) -> str:
    """Short MLIR spelling of an element type (bf16, f32, i1, ...)."""
    from xdsl.printer import Printer
    import io

    buf = io.StringIO()
    Printer(stream=buf).print_attribute(t)
    return buf.getvalue()


@irdl_attr_definition
class TileType(ParametrizedAttribute, TypeAttribute):
    """A logical tile: static shape, element type, memory space (default `reg`)."""

    name = "tile.tile"

    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    space: StringAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, space: str = "reg"):
        super().__init__(ArrayAttr(IntAttr(d) for d in shape), element_type, StringAttr(space))

    def verify(self) -> None:
        dims = self.get_shape()
        if not dims or any(d <= 0 for d in dims):
            raise D.TesseraError(D.TILE_TYPE_INVALID, f"tile shape {list(dims)} must have rank >= 1 and positive dims")
        if self.space.data not in SPACES:
            raise D.TesseraError(D.TILE_TYPE_INVALID, f"tile space '{self.space.data}' is not one of {', '.join(SPACES)}")
        if not (is_float(self.element_type) or is_int(self.element_type)):
            raise D.TesseraError(D.TILE_TYPE_INVALID, f"tile element type {type_name(self.element_type)} is not a float or integer type")

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def rank(self) -> int:
        return len(self.shape.data)

    @property
    def space_name(self) -> str:
        return self.space.data

    def with_shape(self, shape: Sequence[int]) -> "TileType":
        return tile_type(tuple(shape), self.element_type, self.space.data)

    def with_element(self, elem: Attribute) -> "TileType":
        return tile_type(self.get_shape(), elem, self.space.data)

    def with_space(self, space: str) -> "TileType":
        return tile_type(self.get_shape(), self.element_type, space)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            parser.raise_error(f"{D.TILE_TYPE_INVALID.name}: expected '<' after !tile.tile; {D.TILE_TYPE_INVALID.hint}")
        dims = parser.parse_dimension_list()
        if not dims:
            parser.raise_error(f"{D.TILE_TYPE_INVALID.name}: a tile needs a static shape; {D.TILE_TYPE_INVALID.hint}")
        if any(d < 0 for d in dims):
            parser.raise_error(f"{D.TILE_TYPE_INVALID.name}: dynamic dims are not allowed in a tile; {D.TILE_TYPE_INVALID.hint}")
        parser.parse_shape_delimiter()
        elem = parser.parse_type()
        space = "reg"
        if parser.parse_optional_punctuation(",") is not None:
            space = parser.parse_identifier(" (tile memory space)")
            if space not in SPACES:
                parser.raise_error(f"{D.TILE_TYPE_INVALID.name}: unknown tile space '{space}'; {D.TILE_TYPE_INVALID.hint}")
        parser.parse_punctuation(">")
        if any(d == 0 for d in dims):
            parser.raise_error(f"{D.TILE_TYPE_INVALID.name}: tile dims must be positive; {D.TILE_TYPE_INVALID.hint}")
        if not (is_float(elem) or is_int(elem)):
            parser.raise_error(f"{D.TILE_TYPE_INVALID.name}: tile element type must be a float or integer type")
        return (ArrayAttr(IntAttr(d) for d in dims), elem, StringAttr(space))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "x".join(str(d) for d in self.get_shape()) + "x")
        printer.print_attribute(self.element_type)
        if self.space.data != "reg":
            printer.print_string(", " + self.space.data)
        printer.print_string(">")


@lru_cache(maxsize=4096)
def tile_type(shape: tuple[int, ...], elem: Attribute, space: str = "reg") -> TileType:
    """Cached constructor: parametrized types are immutable and costly to build."""
    return TileType(shape, elem, space)


@irdl_attr_definition
class FragmentType(ParametrizedAttribute, TypeAttribute):
    """A per-warp (or per-warpgroup) register slice of an MMA operand or accumulator."""

    name = "tile.fragment"

    m: IntAttr
    n: IntAttr
    k: IntAttr
    elem: Attribute
    acc: Attribute
    role: StringAttr
    layout: StringAttr
    family: StringAttr

    def __init__(self, m: int, n: int, k: int, elem: Attribute, acc: Attribute,
                 role: str, layout: str = "row", family: str = "auto"):
        super().__init__(IntAttr(m), IntAttr(n), IntAttr(k), elem, acc,
                         StringAttr(role), StringAttr(layout), StringAttr(family))

    def verify(self) -> None:
        problem = fragment_param_problem(self.m.data, self.n.data, self.k.data, self.elem, self.acc,
                                         self.role.data, self.layout.data, self.family.data)
        if problem:
            raise D.TesseraError(D.TILE_FRAGMENT_PARAM_INVALID, problem)

    @property
    def shape(self) -> tuple[int, int]:
        """The (rows, cols) of the matrix slice this fragment holds."""
        m, n, k = self.m.data, self.n.data, self.k.data
        return {"a": (m, k), "b": (k, n), "acc": (m, n)}[self.role.data]

    def replace(self, **changes) -> "FragmentType":
        p = dict(m=self.m.data, n=self.n.data, k=self.k.data, elem=self.elem, acc=self.acc,
                 role=self.role.data, layout=self.layout.data, family=self.family.data)
        p.update(changes)
        return fragment_type(**p)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            parser.raise_error(f"{D.TILE_FRAGMENT_BARE.name}: a bare !tile.fragment has no contract; {D.TILE_FRAGMENT_BARE.hint}")
        values: dict[str, object] = {}
        for i, key in enumerate(("m", "n", "k", "elem", "acc", "role", "layout", "family")):
            if i:
                parser.parse_punctuation(",")
            got = parser.parse_identifier(f" (fragment parameter '{key}')")
            if got != key:
                parser.raise_error(f"{D.TILE_FRAGMENT_PARAM_INVALID.name}: expected fragment parameter '{key}', got '{got}'; "
                                   f"{D.TILE_FRAGMENT_BARE.hint}")
            parser.parse_punctuation("=")
            if key in ("m", "n", "k"):
                values[key] = parser.parse_integer(allow_boolean=False, allow_negative=True)
            elif key in ("elem", "acc"):
                values[key] = parser.parse_type()
            else:
                values[key] = parser.parse_str_literal(f" (fragment parameter '{key}')")
        parser.parse_punctuation(">")
        problem = fragment_param_problem(**values)  # type: ignore[arg-type]
        if problem:
            parser.raise_error(f"{D.TILE_FRAGMENT_PARAM_INVALID.name}: {problem}; {D.TILE_FRAGMENT_PARAM_INVALID.hint}")
        return (IntAttr(values["m"]), IntAttr(values["n"]), IntAttr(values["k"]), values["elem"], values["acc"],
                StringAttr(values["role"]), StringAttr(values["layout"]), StringAttr(values["family"]))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<m={self.m.data}, n={self.n.data}, k={self.k.data}, elem=")
        printer.print_attribute(self.elem)
        printer.print_string(", acc=")
        printer.print_attribute(self.acc)
        printer.print_string(f', role="{self.role.data}", layout="{self.layout.data}", family="{self.family.data}">')


def fragment_param_problem(m, n, k, elem, acc, role, layout, family) -> str | None:
    """Why a fragment parameter set is illegal, or None."""
    for key, v in (("m", m), ("n", n), ("k", k)):
        if not isinstance(v, int) or v <= 0:
            return f"fragment parameter {key}={v} must be a positive integer"
    if type_name(elem) not in _ELEM_NAMES:
        return f"fragment elem={type_name(elem)} is not one of {', '.join(_ELEM_NAMES)}"
    if type_name(acc) not in _ACC_NAMES:
        return f"fragment acc={type_name(acc)} is not one of {', '.join(_ACC_NAMES)}"
    if role not in ROLES:
        return f"fragment role=\"{role}\" is not one of {', '.join(ROLES)}"
    if layout not in LAYOUTS:
        return f"fragment layout=\"{layout}\" is not one of {', '.join(LAYOUTS)}"
    if family not in FAMILIES:
        return f"fragment family=\"{family}\" is not one of {', '.join(FAMILIES)}"
    return None


@lru_cache(maxsize=4096)
def fragment_type(m: int, n: int, k: int, elem: Attribute, acc: Attribute, role: str,
                  layout: str = "row", family: str = "auto") -> FragmentType:
    return FragmentType(m, n, k, elem, acc, role, layout, family)


def fragment_mismatch(expected: FragmentType, got: FragmentType) -> tuple[D.Code, str] | None:
    """The code and a phrase for the first contract field where two fragment types differ.

    Type equality is the compatibility rule; this only names *why* two types
    are unequal so the diagnostic says role/family/acc rather than 'types differ'.
    """
    if expected == got:
        return None
    checks = (
        (D.TILE_FRAGMENT_ROLE_MISMATCH, "role", expected.role.data, got.role.data),
        (D.TILE_FRAGMENT_FAMILY_MISMATCH, "family", expected.family.data, got.family.data),
        (D.TILE_FRAGMENT_ACC_MISMATCH, "acc", type_name(expected.acc), type_name(got.acc)),
        (D.TILE_FRAGMENT_ELEM_MISMATCH, "elem", type_name(expected.elem), type_name(got.elem)),
        (D.TILE_FRAGMENT_SHAPE_MISMATCH, "(m, n, k)",
         (expected.m.data, expected.n.data, expected.k.data), (got.m.data, got.n.data, got.k.data)),
        (D.TILE_FRAGMENT_LAYOUT_MISMATCH, "layout", expected.layout.data, got.layout.data),
    )
    for code, field, want, have in checks:
        if want != have:
            return code, f"{field} {have!r} where {want!r} is required"
    return D.IR_VERIFY, "fragment types differ"


@irdl_attr_definition
class AsyncTokenType(ParametrizedAttribute, TypeAttribute):
    """Completion token of an asynchronous copy; consumed by tile.wait."""

    name = "tile.async_token"


async_token = AsyncTokenType()
