"""Fragment-level ops: shared-memory staging and typed per-warp register fragments.

These ops are CTA-collective: the CTA's warps form a `warps = [wm, wn]` grid
and warp (i, j) owns the fragment at rows i*m (roles a, acc) and columns j*n
(roles b, acc) of the tile it is taken from or written to. The fragment type
is the per-warp contract; compatibility between fragments is type equality.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IndexType, IntAttr, MemRefType, f64
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
    AccessSyntax,
    ResultTypeSyntax,
    parse_operands,
    parse_operands_then_types,
    parse_pad,
    parse_types,
    print_operands,
    print_operands_then_types,
    print_pad,
    print_types,
)
from tessera.ir.tile_checks import check_memref_access, check_mma_dtypes, check_offsets, expect_tile, fail
from tessera.ir.types import AsyncTokenType, FragmentType, TileType, async_token, fragment_mismatch, tile_type


def expect_fragment(op, what: str, t: Attribute, role: str | None = None) -> FragmentType:
    if not isinstance(t, FragmentType):
        fail(op, D.TILE_TYPE_MISMATCH, f"{op.name}: {what} must be a !tile.fragment, got {t}")
    if role is not None and t.role.data != role:
        fail(op, D.TILE_FRAGMENT_ROLE_MISMATCH, f"{op.name}: {what} has role \"{t.role.data}\" where role \"{role}\" is required ({t})")
    return t  # type: ignore[return-value]


def warp_grid(attr: ArrayAttr) -> tuple[int, int]:
    return tuple(v.data for v in attr.data)  # type: ignore[return-value]


def check_warps(op, warps: ArrayAttr) -> tuple[int, int]:
    grid = warp_grid(warps)
    if len(grid) != 2 or any(w <= 0 for w in grid):
        fail(op, D.TILE_ATTR_INVALID, f"{op.name}: warps {list(grid)} must be two positive integers [wm, wn]")
    return grid


def footprint(frag: FragmentType, grid: tuple[int, int]) -> tuple[int, int]:
    """Rows x cols of the (logical, row-major) operand region that a warp grid of these fragments covers."""
    rows, cols = frag.shape
    role = frag.role.data
    return (rows * (grid[0] if role in ("a", "acc") else 1), cols * (grid[1] if role in ("b", "acc") else 1))


def source_footprint(frag: FragmentType, grid: tuple[int, int]) -> tuple[int, int]:
    """The region a fragment_pack reads: layout="col" names a source holding the transpose (B as N x K)."""
    fp = footprint(frag, grid)
    return fp[::-1] if frag.layout.data == "col" else fp


def check_footprint(op, frag: FragmentType, grid, tile_shape) -> None:
    fp = source_footprint(frag, grid)
    if len(tile_shape) != 2 or fp[0] > tile_shape[0] or fp[1] > tile_shape[1]:
        fail(op, D.TILE_FRAGMENT_FOOTPRINT,
             f"{op.name}: warps {list(grid)} of {frag} cover {fp[0]}x{fp[1]}, which does not fit a "
             f"{'x'.join(map(str, tile_shape))} tile")


@irdl_op_definition
class AllocOp(ResultTypeSyntax):
    """`%s = tile.alloc : !tile.tile<128x64xbf16, smem>`: a shared-memory tile buffer."""

    name = "tile.alloc"
    result = result_def(TileType)

    def __init__(self, result_type: TileType):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        expect_tile(self, "result", self.result.type, "smem")


@irdl_op_definition
class ViewOp(AccessSyntax):
    """`%v = tile.view %A[%i, %j] : memref -> !tile.tile<..., global>`: a tile-shaped window, no data moved."""

    name = "tile.view"
    source = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    result = result_def(TileType)
    traits = traits_def(Pure())

    def __init__(self, source: SSAValue, offsets, result_type: TileType):
        super().__init__(operands=[source, list(offsets)], result_types=[result_type])

    def verify_(self) -> None:
        t = expect_tile(self, "result", self.result.type, "global")
        check_offsets(self, self.offsets)
        check_memref_access(self, self.source.type, len(self.offsets), t)


@irdl_op_definition
class AsyncCopyOp(IRDLOperation):
    """Start copying a global view into a shared tile; past-the-edge elements read `padding`."""

    name = "tile.async_copy"
    source = operand_def(TileType)
    dest = operand_def(TileType)
    padding = prop_def(FloatAttr)
    token = result_def(AsyncTokenType)

    def __init__(self, source: SSAValue, dest: SSAValue, padding: float = 0.0):
        super().__init__(operands=[source, dest], result_types=[async_token],
                         properties={"padding": FloatAttr(padding, f64)})

    def verify_(self) -> None:
        s = expect_tile(self, "source", self.source.type, "global")
        d = expect_tile(self, "destination", self.dest.type, "smem")
        if s.get_shape() != d.get_shape() or s.element_type != d.element_type:
            fail(self, D.TILE_SHAPE_MISMATCH, f"tile.async_copy: source {s} and destination {d} differ in shape or element type")

    @classmethod
    def parse(cls, parser: Parser):
        src, dst = parse_operands(parser, 2)
        pad = parse_pad(parser)
        parse_types(parser, 2)
        return cls(src, dst, pad)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_operands(printer, (self.source, self.dest))
        print_pad(printer, self.padding)
        print_types(printer, (self.source.type, self.dest.type))


@irdl_op_definition
class WaitOp(IRDLOperation):
    """`tile.wait %t0, %t1`: block until the copies complete, then synchronise the CTA."""

    name = "tile.wait"
    tokens = var_operand_def(AsyncTokenType)

    def __init__(self, *tokens: SSAValue):
        super().__init__(operands=[list(tokens)])

    def verify_(self) -> None:
        if not self.tokens:
            fail(self, D.IR_VERIFY, "tile.wait needs at least one token")

    @classmethod
    def parse(cls, parser: Parser):
        return cls(*parse_operands(parser))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_operands(printer, self.tokens)


@irdl_op_definition
class FragmentPackOp(AccessSyntax):
    """Load each warp's fragment from a shared (or register) tile at `offsets`."""

    name = "tile.fragment_pack"
    HAS_WARPS: ClassVar[bool] = True
    source = operand_def(TileType)
    offsets = var_operand_def(IndexType)
    warps = prop_def(ArrayAttr[IntAttr])
    result = result_def(FragmentType)

    def __init__(self, source: SSAValue, offsets, warps, result_type: FragmentType):
        w = warps if isinstance(warps, ArrayAttr) else ArrayAttr(IntAttr(x) for x in warps)
        super().__init__(operands=[source, list(offsets)], result_types=[result_type], properties={"warps": w})

    def verify_(self) -> None:
        s = expect_tile(self, "source", self.source.type, None)
        if s.space_name == "global":
            fail(self, D.TILE_SPACE_INVALID, f"tile.fragment_pack: source {s} must be in smem or reg, not global")
        f = expect_fragment(self, "result", self.result.type)
        grid = check_warps(self, self.warps)
        if len(self.offsets) != s.rank:
            fail(self, D.TILE_MEMREF_MISMATCH, f"tile.fragment_pack: {len(self.offsets)} offsets for a rank-{s.rank} tile")
        check_offsets(self, self.offsets)
        check_footprint(self, f, grid, s.get_shape())
        if s.element_type not in (f.elem, f.acc):
            fail(self, D.TILE_FRAGMENT_ELEM_MISMATCH,
                 f"tile.fragment_pack: tile element type {s.element_type} matches neither elem nor acc of {f}")


@irdl_op_definition
class FragmentZeroOp(ResultTypeSyntax):
    """`%z = tile.fragment_zero : F`: an all-zero fragment (an accumulator's start)."""

    name = "tile.fragment_zero"
    result = result_def(FragmentType)
    traits = traits_def(Pure())

    def __init__(self, result_type: FragmentType):
        super().__init__(result_types=[result_type])


@irdl_op_definition
class FragmentMmaOp(IRDLOperation):
    """Per warp: acc + a @ b. The three types must be the same contract with roles a, b, acc."""

    name = "tile.fragment_mma"
    a = operand_def(FragmentType)
    b = operand_def(FragmentType)
    acc = operand_def(FragmentType)
    result = result_def(FragmentType)
    traits = traits_def(Pure())

    def __init__(self, a: SSAValue, b: SSAValue, acc: SSAValue):
        super().__init__(operands=[a, b, acc], result_types=[acc.type])

    def verify_(self) -> None:
        c = expect_fragment(self, "acc (operand #2)", self.acc.type, "acc")
        a = expect_fragment(self, "a (operand #0)", self.a.type, "a")
        b = expect_fragment(self, "b (operand #1)", self.b.type, "b")
        for what, got in (("a (operand #0)", a), ("b (operand #1)", b)):
            want = c.replace(role=got.role.data, layout=got.layout.data)
            if (bad := fragment_mismatch(want, got)) is not None:
                code, phrase = bad
                fail(self, code, f"tile.fragment_mma: {what} has {phrase}: {got} does not match acc {c}")
        check_mma_dtypes(self, a.elem, b.elem, c.acc)
        if (bad := fragment_mismatch(c, self.result.type)) is not None:
            code, phrase = bad
            fail(self, code, f"tile.fragment_mma: result has {phrase}: {self.result.type} differs from acc {c}")

    @classmethod
    def parse(cls, parser: Parser):
        return cls(*parse_operands_then_types(parser, 3))

    def print(self, printer: Printer) -> None:
        print_operands_then_types(printer, (self.a, self.b, self.acc))


@irdl_op_definition
class FragmentUnpackOp(AccessSyntax):
    """Gather the warps' fragments back into one register tile (the warp grid's footprint)."""

    name = "tile.fragment_unpack"
    HAS_OFFSETS: ClassVar[bool] = False
    HAS_WARPS: ClassVar[bool] = True
    source = operand_def(FragmentType)
    warps = prop_def(ArrayAttr[IntAttr])
    result = result_def(TileType)

    def __init__(self, source: SSAValue, warps, result_type: TileType):
        w = warps if isinstance(warps, ArrayAttr) else ArrayAttr(IntAttr(x) for x in warps)
        super().__init__(operands=[source], result_types=[result_type], properties={"warps": w})

    def verify_(self) -> None:
        f = expect_fragment(self, "source", self.source.type)
        t = expect_tile(self, "result", self.result.type)
        grid = check_warps(self, self.warps)
        if footprint(f, grid) != t.get_shape():
            fail(self, D.TILE_FRAGMENT_FOOTPRINT,
                 f"tile.fragment_unpack: warps {list(grid)} of {f} cover {footprint(f, grid)}, but the result is {t}")
        want = f.acc if f.role.data == "acc" else f.elem
        if t.element_type != want:
            fail(self, D.TILE_FRAGMENT_ELEM_MISMATCH, f"tile.fragment_unpack: result element type must be {want}, got {t}")


@irdl_op_definition
class FragmentStoreOp(AccessSyntax):
    """Each warp writes its accumulator fragment to global memory; past-the-edge writes drop."""

    name = "tile.fragment_store"
    STORES: ClassVar[bool] = True
    HAS_WARPS: ClassVar[bool] = True
    value = operand_def(FragmentType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    warps = prop_def(ArrayAttr[IntAttr])

    def __init__(self, value: SSAValue, dest: SSAValue, offsets, warps):
        w = warps if isinstance(warps, ArrayAttr) else ArrayAttr(IntAttr(x) for x in warps)
        super().__init__(operands=[value, dest, list(offsets)], properties={"warps": w})

    def verify_(self) -> None:
        f = expect_fragment(self, "stored value", self.value.type, "acc")
        grid = check_warps(self, self.warps)
        check_offsets(self, self.offsets)
        check_memref_access(self, self.dest.type, len(self.offsets), tile_type(footprint(f, grid), f.acc))


FRAGMENT_OPS = (AllocOp, ViewOp, AsyncCopyOp, WaitOp, FragmentPackOp, FragmentZeroOp, FragmentMmaOp,
                FragmentUnpackOp, FragmentStoreOp)
