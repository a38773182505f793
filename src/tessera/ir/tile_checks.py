"""The verifier rules the tile ops and the fragment ops share.

A fragment op checks its memref access and its mma dtypes exactly as the tile
op it comes from does, so both dialect modules raise the same coded
`TesseraError` with the same sentence from one definition.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.ir import Attribute, Operation

from tessera.ir import diagnostics as D
from tessera.ir.types import TileType, type_name


def fail(op: Operation, code: D.Code, message: str) -> None:
    raise D.TesseraError(code, message, op=op)


def expect_tile(op: Operation, what: str, t: Attribute, space: str | None = "reg") -> TileType:
    """The operand/result type as a TileType in `space`, or a coded error."""
    if not isinstance(t, TileType):
        fail(op, D.TILE_TYPE_MISMATCH, f"{op.name}: {what} must be a !tile.tile, got {t}")
    if space is not None and t.space_name != space:
        fail(op, D.TILE_SPACE_INVALID, f"{op.name}: {what} {t} must be in space '{space}', not '{t.space_name}'")
    return t  # type: ignore[return-value]


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


# a/b element type -> the accumulator types an mma (tile or fragment) takes with it
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
