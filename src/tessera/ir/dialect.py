"""The Tile dialect, assembled once, and the context every Tessera tool parses with."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.ir import Dialect

from tessera.ir.fragment_ops import FRAGMENT_OPS
from tessera.ir.tile_ops import LOGICAL_OPS
from tessera.ir.types import AsyncTokenType, FragmentType, TileType

Tile = Dialect("tile", [*LOGICAL_OPS, *FRAGMENT_OPS], [TileType, FragmentType, AsyncTokenType])

_EXTRA_DIALECTS: list[Dialect] = []


def register_dialect(dialect: Dialect) -> None:
    """Later levels (e.g. the nv target dialect) add themselves here."""
    if dialect not in _EXTRA_DIALECTS:
        _EXTRA_DIALECTS.append(dialect)


def make_context() -> Context:
    import tessera.ir.nv_ops  # noqa: F401 - registers the nv target dialect, so nv IR parses everywhere

    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, scf.Scf, memref.MemRef, math.Math, Tile, *_EXTRA_DIALECTS):
        ctx.load_dialect(d)
    return ctx
