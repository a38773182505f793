"""What every warp-specialize module shares: the wgmma row block, the coded refusal, how a packed operand is stored
(`MAJOR`, `StagedTile`) and the small builders of index math (`binop`, `cmpi`, `select`, `index_const`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import AllocOp, AsyncCopyOp, ViewOp

WG_ROWS = 64  # rows of the tile one wgmma (m64) covers: one consumer warpgroup's row block


def refuse(op: Operation, message: str, hint: str | None = None) -> D.TesseraError:
    return D.TesseraError(D.NV_WGMMA_UNSUPPORTED, message, op=op,
                          hint=hint or "write the kernel as one loop of tile.load + tile.dot (and register tile math) "
                                       "followed by an elementwise epilogue, or target sm_90")


# The fragment layout a wgmma operand is packed with -> how its shared tile is stored. A "row" A is [M, K] and a
# "col" B is [N, K] (B transposed in the program): K-major. A "col" A ([K, M], transposed) and a "row" B ([K, N],
# a plain a@b) are MN-major: the tile stays as it is in memory and the wgmma reads it with imm-trans 1.
MAJOR = {("a", "row"): "k", ("a", "col"): "mn", ("b", "col"): "k", ("b", "row"): "mn"}


@dataclass
class StagedTile:
    """A shared tile, the copy of a global view that fills it, and how it is stored: `major` "k" (rows are M or N,
    columns K) or "mn" (rows are K, columns M or N). `ws_match.Staged` adds its slots and barriers."""

    alloc: AllocOp
    copy: AsyncCopyOp
    view: ViewOp
    major: str = "k"

    @property
    def rows(self) -> int:
        """Rows of the staged tile as stored (and as TMA boxes cover it): M/N when K-major, K when MN-major."""
        return self.alloc.result.type.get_shape()[0]

    @property
    def cols(self) -> int:
        """Columns of the staged tile as stored: the contiguous dimension, cut into boxes of one swizzle row."""
        return self.alloc.result.type.get_shape()[1]


def is_scalar(op: Operation) -> bool:
    return (op.dialect_name() in ("arith", "math") or isinstance(op, memref.DimOp)) and not op.regions


def index_const(ops: list, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    ops.append(c)
    return c.result


def binop(ops: list, cls, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
    if isinstance(rhs, int):
        rhs = index_const(ops, rhs)
    op = cls(lhs, rhs)
    ops.append(op)
    return op.result


def cmpi(ops: list, lhs: SSAValue, rhs: SSAValue, predicate: str) -> SSAValue:
    op = arith.CmpiOp(lhs, rhs, predicate)
    ops.append(op)
    return op.result


def select(ops: list, cond: SSAValue, if_true: SSAValue, if_false: SSAValue) -> SSAValue:
    op = arith.SelectOp(cond, if_true, if_false)
    ops.append(op)
    return op.result
