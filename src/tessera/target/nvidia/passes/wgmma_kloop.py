"""What warp-specialize lowers: recognising a wgmma K-loop kernel in Fragment IR, and refusing anything else.

`match(kernel, mma)` returns a `KLoop` (the loop, its mma, the two staged
operands with the copies that fill them, the ops before and after the loop
and the tile sizes) or raises NV_WGMMA_UNSUPPORTED at the op that does not
fit, with a hint naming what would. Kept apart from the rewrite so that the
accepted shape of program is one readable function.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import Operation, SSAValue

from tessera.ir import diagnostics as D
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.ir import tile_ops as T
from tessera.ir.fragment_ops import (AllocOp, AsyncCopyOp, FragmentMmaOp, FragmentPackOp, FragmentZeroOp, ViewOp,
                                     WaitOp)
from tessera.ir.types import type_name

WG_ROWS = 64  # rows of the tile one wgmma (m64) covers: one consumer warpgroup's row block


def refuse(op: Operation, message: str, hint: str | None = None) -> D.TesseraError:
    return D.TesseraError(D.NV_WGMMA_UNSUPPORTED, message, op=op,
                          hint=hint or "write the kernel as one K-loop of tile.load + tile.dot followed by an "
                                       "elementwise epilogue, or target sm_90")


# The fragment layout a wgmma operand is packed with -> how its shared tile is stored. A "row" A is [M, K] and a
# "col" B is [N, K] (B transposed in the program): K-major. A "col" A ([K, M], transposed) and a "row" B ([K, N],
# a plain a@b) are MN-major: the tile stays as it is in memory and the wgmma reads it with imm-trans 1.
MAJOR = {("a", "row"): "k", ("a", "col"): "mn", ("b", "col"): "k", ("b", "row"): "mn"}


@dataclass
class StagedTile:
    """A shared tile, the copy of a global view that fills it, and how it is stored: `major` "k" (rows are M or N,
    columns K) or "mn" (rows are K, columns M or N). The GEMM builder's `Operand` and the general body's
    `ws_match.Staged` are both."""

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


@dataclass
class Operand(StagedTile):
    """One operand of the GEMM K-loop, refilled every K step."""

    @property
    def mn(self) -> int:
        """The operand's M (A) or N (B) extent."""
        return self.rows if self.major == "k" else self.cols

    @property
    def k(self) -> int:
        return self.cols if self.major == "k" else self.rows

    @property
    def mn_offset(self) -> SSAValue:
        """The view offset along M or N: the one that follows the tile's program ids."""
        return self.view.offsets[0 if self.major == "k" else 1]

    @property
    def memref(self) -> SSAValue:
        return self.view.source


@dataclass
class KLoop:
    """What `match` found: the K-loop, its mma and operands, and the ops before and after it."""

    loop: scf.ForOp
    mma: FragmentMmaOp
    a: Operand
    b: Operand
    prologue: list[Operation]
    epilogue: list[Operation]
    bm: int
    bn: int
    bk: int
    dtype: object
    wg_rows: int = WG_ROWS  # rows of the tile each consumer warpgroup owns (the fragment's m): 64 or 128

    @property
    def consumers(self) -> int:
        return self.bm // self.wg_rows

    @property
    def blocks(self) -> int:
        """64-row blocks (one m64 wgmma each) per consumer warpgroup."""
        return self.wg_rows // WG_ROWS


def _operand(pack: Operation, loop: scf.ForOp, role: str) -> Operand:
    if not isinstance(pack, FragmentPackOp):
        raise refuse(loop, f"the wgmma {role} operand is not packed from a staged shared tile")
    frag = pack.result.type
    major = MAJOR.get((role, frag.layout.data))
    if major is None:
        raise refuse(pack, f"the wgmma {role} operand has layout \"{frag.layout.data}\"; wgmma reads {role} "
                           "K-major or MN-major from shared memory (layout \"row\" or \"col\")")
    alloc = pack.source.owner
    if not isinstance(alloc, AllocOp):
        raise refuse(pack, f"the wgmma {role} operand is packed from registers; wgmma reads shared memory")
    copies = [u.operation for u in alloc.result.uses if isinstance(u.operation, AsyncCopyOp)]
    if len(copies) != 1 or copies[0].parent is not loop.body.block:
        raise refuse(pack, f"the {role} tile must be filled by exactly one copy inside the K-loop")
    copy = copies[0]
    view = copy.source.owner
    if not isinstance(view, ViewOp) or not isinstance(view.source.type, MemRefType):
        raise refuse(copy, f"the {role} copy does not read a view of a kernel argument")
    if len(view.source.type.get_shape()) != 2 or len(view.offsets) != 2:
        raise refuse(copy, f"the {role} operand comes from a rank-{len(view.source.type.get_shape())} memref; TMA "
                           "boxes here are 2-D")
    if copy.padding.value.data != 0.0:
        raise refuse(copy, f"the {role} load pads with {copy.padding.value.data}; TMA fills out-of-bounds with 0")
    return Operand(alloc, copy, view, major)


KLOOP_OPS = (  # what the GEMM K-loop holds besides index math
    ViewOp, AsyncCopyOp, WaitOp, FragmentPackOp, FragmentMmaOp, scf.YieldOp)


def match(kernel: func.FuncOp, mma: FragmentMmaOp) -> KLoop:
    loop = mma.parent_op()
    entry = kernel.body.block
    if not isinstance(loop, scf.ForOp) or loop.parent is not entry:
        raise refuse(mma, "the wgmma mma is not in a K-loop at the top level of the kernel")
    body = loop.body.block
    if len(loop.iter_args) != 1 or mma.acc is not body.args[1] or body.last_op.operands[0] is not mma.result:
        raise refuse(loop, "the K-loop must carry exactly the mma's accumulator (other loop-carried values are "
                           "not supported here)")
    if not isinstance(loop.iter_args[0].owner, FragmentZeroOp):
        raise refuse(loop, "the accumulator must start at zero (tl.zeros); an incoming accumulator is not "
                           "supported by this lowering")
    for op in body.ops:
        if not isinstance(op, KLOOP_OPS) and not is_scalar(op):
            raise refuse(op, f"{op.name} in the K-loop: the warp-specialised loop takes copies, packs, one mma "
                             "and index math")
    a = _operand(mma.a.owner, loop, "a")
    b = _operand(mma.b.owner, loop, "b")
    fa, fb = mma.a.type, mma.b.type
    bm, bk = a.mn, a.k
    bn, bk_b = b.mn, b.k
    dtype = fa.elem
    wm, wn = (v.data for v in mma.a.owner.warps.data)
    rows = fa.m.data  # rows per consumer warpgroup: 64, or 128 (two m64 blocks, a 256-row tile)
    if bm not in (64, 128, 192, 256):
        raise refuse(mma, f"BM={bm}: this lowering runs one to three consumer warpgroups of 64 rows, or two of "
                          "128 (BM = 64, 128, 192 or 256)")
    if bk != bk_b or fb.n.data != bn or wn != 1 or bm != rows * wm or rows not in (WG_ROWS, 2 * WG_ROWS):
        raise refuse(mma, f"tiles A {bm}x{bk}, B {bn}x{bk_b} on warpgroups [{wm}, {wn}]: this lowering needs one "
                          "warpgroup per 64 or 128 rows of A and the whole N (<= 256) in each",
                     "use BN <= 256 and the default warp grid (no warps= option)")
    if rows // WG_ROWS * bn // 2 > 128:
        raise refuse(mma, f"a {bm}x{bn} tile gives each consumer warpgroup {rows} x {bn} accumulators, "
                          f"{rows // WG_ROWS * bn // 2} registers per thread: at most 128 fit",
                     "use BN <= 128 with BM = 256")
    if type_name(dtype) not in H.WGMMA_TYPES or bk % 16:
        raise refuse(mma, f"wgmma takes bf16/f16 with K a multiple of 16, got {type_name(dtype)} and BK={bk}")
    ops = list(entry.ops)
    at = ops.index(loop)
    prologue, epilogue = ops[:at], [op for op in ops[at + 1:] if not isinstance(op, func.ReturnOp)]
    # Tile constants and splats traced before the loop (the tracer shares one 0.0 between tl.zeros and a relu)
    # feed only the epilogue once the accumulator starts at fragment_zero: they move there.
    early = [op for op in prologue if isinstance(op, (T.ConstantOp, T.SplatOp))
             and all(not loop.is_ancestor(u.operation) for r in op.results for u in r.uses)]
    prologue = [op for op in prologue if op not in early]
    epilogue = early + epilogue
    for op in prologue:
        if not (is_scalar(op) or isinstance(op, (AllocOp, FragmentZeroOp, T.ProgramIdOp, T.NumProgramsOp))):
            raise refuse(op, f"{op.name} before the K-loop: only index math, program ids and allocations may "
                             "come first")
    return KLoop(loop, mma, a, b, prologue, epilogue, bm, bn, bk, dtype, rows)


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
