"""The Tile dialect, assembled once, and the context every Tessera tool parses with."""

from __future__ import annotations

import importlib

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.ir import Dialect

from tessera.ir.fragment_ops import FRAGMENT_OPS
from tessera.ir.tile_ops import LOGICAL_OPS
from tessera.ir.types import AsyncTokenType, FragmentType, TileType

Tile = Dialect("tile", [*LOGICAL_OPS, *FRAGMENT_OPS], [TileType, FragmentType, AsyncTokenType])

_EXTRA_DIALECTS: list[Dialect] = []


def register_dialect(dialect: Dialect) -> None:
    """Targets (e.g. `tessera.target.nvidia`'s nv dialect) add their dialects here when they are loaded."""
    if dialect not in _EXTRA_DIALECTS:
        _EXTRA_DIALECTS.append(dialect)


def make_context() -> Context:
    """A context with the upstream dialects, the tile dialect and every target's (so target IR parses anywhere).

    Targets are discovered by name (`tessera.target.load_all`), never imported here: the tile dialect knows no
    target.
    """
    importlib.import_module("tessera.target").load_all()
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, scf.Scf, memref.MemRef, math.Math, Tile, *_EXTRA_DIALECTS):
        ctx.load_dialect(d)
    return ctx
