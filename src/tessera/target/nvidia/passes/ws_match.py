"""What warp-specialize's general loop body found in a kernel: its wgmmas, the tiles they read, and their room.

`match_body(kernel, mmas)` takes the top-level loop holding the wgmma mmas and names, per operand, a `Staged` tile
(a `tile.alloc` filled by one `tile.async_copy` of a kernel argument's view: in the loop a TMA ring of `stages`
slots, before it one slot loaded once per tile) or, for A, registers (wgmma's RS form); operands the program waits
for in one `tile.wait` share one barrier pair. `_plan_smem` lays out their slots, the TMA store staging and the
barriers. `accumulates_only` says whether the loop's only register work is its wgmmas accumulating into what it
carries (a GEMM K-loop), `tma_store_of` which epilogue store may go through TMA. ws_body builds the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation

from tessera.ir import tile_ops as T
from tessera.ir.fragment_ops import (AllocOp, AsyncCopyOp, FragmentMmaOp, FragmentPackOp, FragmentStoreOp, ViewOp,
                                     WaitOp)
from tessera.ir.types import type_name
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.passes.ws_common import MAJOR, WG_ROWS, StagedTile, is_scalar, refuse
from tessera.target.nvidia.passes.ws_walk import REGS, pid_axes

ELEM_BYTES = 2
SLOT_ALIGN = 1024  # a 128-byte swizzle repeats every 8 rows of 128 bytes: slots start on 1024-byte boundaries


@dataclass
class Staged(StagedTile):
    """A shared tile filled by one TMA copy: `ring` (in the loop, `stages` slots) or fixed (once per tile)."""

    ring: bool = False
    slots: int = 1  # a fixed operand's slots: 2 double-buffers it by tile parity (the next tile's loads early)
    base: int = 0  # byte offset of slot 0
    full: int = 0  # barrier arrays: `stages` of each for a ring operand, one for a fixed one
    empty: int = 0
    lead: "Staged | None" = None  # a ring operand waited for together with an earlier one shares its barriers
    role: str = "b"  # the wgmma operand it is ("a" or "b"; the first mma's, where several read it)

    @property
    def slot_bytes(self) -> int:
        return self.rows * self.cols * ELEM_BYTES


@dataclass
class Mma:
    """One wgmma of the body: A staged (SS form) or a register tile (RS form), B staged."""

    op: FragmentMmaOp
    a: Staged | None
    b: Staged
    n: int
    k: int
    last_reader_of: list = field(default_factory=list)  # ring operands freed once this mma is done


@dataclass
class Body:
    """What `match_body` found; `prologue`/`loop` are what `ws_units.Units` reads."""

    loop: scf.ForOp
    mmas: list[Mma]
    staged: list[Staged]
    prologue: list[Operation]
    epilogue: list[Operation]
    bm: int
    dtype: object
    wg_rows: int = WG_ROWS  # rows a consumer warpgroup's fragments cover: 64, or 128 (two m64 blocks, BM = 256)
    swizzle: int = 0
    staging: int = 0  # bytes of the TMA store epilogue's staging (16 KiB per consumer), after the slots
    stage_base: int = 0  # its offset
    turns: int = 0  # whole-tile ping-pong: two turn barriers after the ring's, at `turn`
    turn: int = 0

    @property
    def consumers(self) -> int:
        return self.bm // self.wg_rows

    @property
    def blocks(self) -> int:
        """64-row blocks (one m64 wgmma each) a consumer warpgroup holds of a tile it shares."""
        return self.wg_rows // WG_ROWS

    @property
    def ring(self) -> list[Staged]:
        return [s for s in self.staged if s.ring]

    def grid_axes_of(self, st: Staged) -> set[int]:
        """The program-id axes `st`'s view follows (its offsets but the loop's own index): two tiles that differ
        only along the other axes read the same boxes."""
        iv = self.loop.body.block.args[0]
        return pid_axes(*(v for v in st.view.offsets if v is not iv))

    @property
    def fixed(self) -> list[Staged]:
        return [s for s in self.staged if not s.ring]

    @property
    def ring_groups(self) -> list[list[Staged]]:
        """The ring operands by barrier: one full/empty pair per group of operands the program waits for in one
        `tile.wait` (a GEMM's A and B: one expect_tx of both, one wait, one release), each other alone (attention's
        K and V: QK^T starts once K has landed)."""
        return [[st] + [m for m in self.ring if m.lead is st] for st in self.ring if st.lead is None]


def _staged(kernel: func.FuncOp, loop: scf.ForOp, pack: FragmentPackOp, role: str, known: dict) -> Staged:
    alloc = pack.source.owner
    if alloc in known:
        return known[alloc]
    frag = pack.result.type
    major = MAJOR.get((role, frag.layout.data))
    if major is None:
        raise refuse(pack, f"the wgmma {role} operand has layout \"{frag.layout.data}\"; wgmma reads {role} "
                           "K-major or MN-major from shared memory (layout \"row\" or \"col\")")
    copies = [u.operation for u in alloc.result.uses if isinstance(u.operation, AsyncCopyOp)]
    entry = kernel.body.block
    if len(copies) != 1 or copies[0].parent not in (loop.body.block, entry):
        raise refuse(pack, f"the {role} tile must be filled by exactly one copy, in the loop or before it")
    copy = copies[0]
    view = copy.source.owner
    if (not isinstance(view, ViewOp) or not isinstance(view.source.type, MemRefType)
            or view.source not in entry.args):
        raise refuse(copy, f"the {role} copy does not read a view of a kernel argument")
    rank = len(view.source.type.get_shape())
    if not 2 <= rank <= H.TmaLoadOp.MAX_RANK:
        raise refuse(copy, f"the {role} operand comes from a rank-{rank} memref; TMA boxes take ranks 2 to "
                           f"{H.TmaLoadOp.MAX_RANK}")
    if copy.padding.value.data != 0.0:
        raise refuse(copy, f"the {role} load pads with {copy.padding.value.data}; TMA fills out-of-bounds with 0")
    if type_name(view.source.type.element_type) not in H.WGMMA_TYPES:
        raise refuse(copy, f"the {role} operand is {type_name(view.source.type.element_type)}; wgmma takes "
                           "bf16 or f16")
    st = Staged(alloc, copy, view, major, ring=copy.parent is loop.body.block, role=role)
    known[alloc] = st
    return st


def match_body(kernel: func.FuncOp, mmas: list[FragmentMmaOp]) -> Body:
    """The loop body's mmas and staged operands, or NV_WGMMA_UNSUPPORTED at the op that does not fit."""
    entry = kernel.body.block
    loop = mmas[0].parent_op()
    if not isinstance(loop, scf.ForOp) or loop.parent is not entry:
        raise refuse(mmas[0], "the wgmma mma is not in a loop at the top level of the kernel")
    for m in mmas[1:]:
        if m.parent_op() is not loop:
            raise refuse(m, "every wgmma mma must sit in the same top-level loop")
    if any(isinstance(op, scf.ForOp) for op in loop.body.block.walk() if op is not loop):
        raise refuse(loop, "a loop inside the wgmma loop: the warp-specialised body is one loop level")
    known: dict = {}
    found: list[Mma] = []
    bm = dtype = None
    for m in mmas:
        fa, fb = m.a.type, m.b.type
        pa, pb = m.a.owner, m.b.owner
        if not isinstance(pb, FragmentPackOp) or not isinstance(pb.source.owner, AllocOp):
            raise refuse(m, "the wgmma b operand is not packed from a staged shared tile")
        if not isinstance(pa, FragmentPackOp):
            raise refuse(m, "the wgmma a operand is not packed from a staged tile or a register tile")
        a = _staged(kernel, loop, pa, "a", known) if isinstance(pa.source.owner, AllocOp) else None
        b = _staged(kernel, loop, pb, "b", known)
        if a is None and (fa.layout.data != "row" or pa.source.type.get_shape()[1] != fa.k.data):
            raise refuse(pa, "a register A operand is a whole [BM, K] tile (layout \"row\"): wgmma's RS form "
                             "reads it from the accumulator layout")
        wm, wn = (v.data for v in pa.warps.data)
        rows = fa.m.data  # rows per consumer warpgroup: 64, or 128 (two m64 blocks of a 256-row tile)
        tile_m = pa.source.type.get_shape()[0] if a is None or a.major == "k" else a.cols
        if (rows not in (WG_ROWS, 2 * WG_ROWS) or wn != 1 or tile_m != wm * rows
                or tile_m not in (64, 128, 192, 256) or (rows == 2 * WG_ROWS) != (tile_m == 256)):
            raise refuse(m, f"BM={tile_m} on warpgroups [{wm}, {wn}] of {rows} rows: this lowering runs one "
                            "consumer warpgroup per 64 rows (BM = 64, 128 or 192), or two of 128 (BM = 256)",
                         "use BLOCK_M = 64, 128, 192 or 256 and the default warp grid")
        if bm is not None and tile_m != bm:
            raise refuse(m, f"mmas of {bm} and {tile_m} rows in one loop: every mma covers the same BM rows")
        bm, dtype = tile_m, fa.elem
        n, k = fb.n.data, fa.k.data
        b_n, b_k = (b.rows, b.cols) if b.major == "k" else (b.cols, b.rows)
        if (b_n, b_k) != (n, k) or n > 256 or n % 8 or k % 16:
            raise refuse(m, f"a B tile of {b_n}x{b_k} for an m64n{n}k{k} wgmma: B must be N x K (N <= 256, a "
                            "multiple of 8; K a multiple of 16)")
        if type_name(fa.elem) not in H.WGMMA_TYPES:
            raise refuse(m, f"wgmma takes bf16/f16, got {type_name(fa.elem)}")
        found.append(Mma(m, a, b, n, k))
    ring = {st.copy.token: st for st in known.values() if st.ring}
    for op in loop.body.block.ops:  # operands waited for in one tile.wait share barriers (the first one's)
        if isinstance(op, WaitOp):
            waited = [ring[t] for t in op.tokens if t in ring and ring[t].lead is None]
            for st in waited[1:]:
                if not any(w.lead is st for w in ring.values()):
                    st.lead = waited[0]
    for st in known.values():  # the last mma reading any operand of a ring group frees the group's slot
        if st.ring and st.lead is None:
            members = [m for m in known.values() if m is st or m.lead is st]
            last = [mm for mm in found if any(m in (mm.a, mm.b) for m in members)][-1]
            last.last_reader_of.append(st)
    wg_rows = mmas[0].a.type.m.data
    check_registers(found, bm // wg_rows, wg_rows // WG_ROWS, bm)
    ops = list(entry.ops)
    at = ops.index(loop)
    prologue, epilogue = ops[:at], [op for op in ops[at + 1:] if not isinstance(op, func.ReturnOp)]
    body = Body(loop, found, list(known.values()), prologue, epilogue, bm, dtype, wg_rows)
    _plan_smem(body, mmas[0])
    return body


ACC_BUDGET = {1: 192, 2: 160, 3: 96}  # f32 accumulator registers per consumer thread, by consumer warpgroups


def check_registers(mmas: list[Mma], consumers: int, blocks: int, bm: int) -> None:
    """The loop's wgmma accumulators (n / 2 registers per thread each, per 64-row block a consumer holds) must
    leave a consumer thread room for the loop body and the epilogue: at most ACC_BUDGET of the 255 registers of
    one consumer, the 232 of two or the 160 of three (setmaxnreg). Above it ptxas spills or serialises the
    wgmmas."""
    acc = blocks * sum(m.n // 2 for m in mmas)
    budget = ACC_BUDGET[consumers]
    if acc > budget:
        regs = {1: 255, 2: REGS[2][1], 3: REGS[3][1]}[consumers]
        held = f" ({blocks} blocks of 64 rows each)" if blocks > 1 else ""
        raise refuse(mmas[0].op, f"wgmma accumulators of {acc} registers per thread{held} on {consumers} "
                                 f"consumer warpgroup{'s' * (consumers > 1)} of {regs} registers ({bm}-row tiles): "
                                 f"at most {budget} leave room for the loop body and the epilogue",
                     "use narrower tiles (a smaller N per wgmma) or fewer rows per CTA")


def _swizzle(row_bytes: int) -> int:
    """The widest TMA/wgmma swizzle (128, 64 or 32 bytes) whose rows tile `row_bytes` exactly; 0 when none does."""
    for s in (128, 64, 32):
        if row_bytes % s == 0:
            return s
    return 0


def _plan_smem(body: Body, at: Operation, stages: int = 1) -> int:
    """Give each staged tile its slots and barriers; the total bytes. One swizzle for all (the narrowest)."""
    widths = []
    for st in body.staged:
        sw = _swizzle(st.cols * ELEM_BYTES)
        if sw == 0 and st.major == "k":
            raise refuse(at, f"a K-major {st.role} tile of {st.cols} columns: a K step must be at least 32 bytes and "
                             "TMA and wgmma read rows of 32, 64 or 128 bytes, so it must be a multiple of 16 "
                             "elements wide", "use a K step (BK) of 16, 32 or 64 elements")
        if sw == 0:
            name = "BM" if st.role == "a" else "BN"
            raise refuse(at, f"{name}={st.cols}: an MN-major {st.role} tile is read in rows of 32, 64 or 128 bytes, "
                             "so it must be a multiple of 16 elements wide",
                         f"use a multiple of 64 for {name} (128-byte rows), or store {st.role.upper()} K-major")
        widths.append(sw)
    body.swizzle = min(widths)
    offset = 0
    for st in body.fixed + body.ring:
        st.base = offset
        offset += (stages if st.ring else st.slots) * -(-st.slot_bytes // SLOT_ALIGN) * SLOT_ALIGN
    body.stage_base = offset
    offset += body.staging
    for st in body.fixed + body.ring:
        if st.lead is None:
            count = stages if st.ring else st.slots
            st.full, st.empty = offset, offset + 8 * count
            offset += 16 * count
    for st in body.ring:
        if st.lead is not None:
            st.full, st.empty = st.lead.full, st.lead.empty
    body.turn = offset
    return offset + 8 * body.turns


def accumulates_only(body: Body) -> bool:
    """True when the loop's only register work is its wgmmas accumulating into the values it carries: each
    loop-carried value is one SS wgmma's accumulator (read by nothing else) and that wgmma's result is read only
    by the yield that carries it; every other op is index math, a copy, a wait or a pack of a staged tile."""
    block = body.loop.body.block
    yld = block.last_op
    args = list(block.args[1:])
    mmas = {m.op: m for m in body.mmas}
    staged = {st.alloc for st in body.staged}
    if len(args) != len(mmas):
        return False
    for m in body.mmas:
        acc = m.op.acc
        if m.a is None or acc not in args or yld.operands[args.index(acc)] is not m.op.result:
            return False
        if any(u.operation is not m.op for u in acc.uses) or any(u.operation is not yld for u in m.op.result.uses):
            return False
    for op in block.ops:
        if op is yld or op in mmas or is_scalar(op) or isinstance(op, (ViewOp, AsyncCopyOp, WaitOp)):
            continue
        if isinstance(op, FragmentPackOp) and op.source.owner in staged:
            continue
        return False
    return True


def tma_store_of(body: Body) -> Operation | None:
    """The epilogue's store that can go through shared memory and TMA (store=tma), or None: the one store of a whole
    [BM, N] tile to a 2-D bf16/f16/f32 memref in whole 64- or 128-byte box rows. Not when the epilogue stores
    anything else (attention's row sums) or loads whole tiles (C, a residual: with the staged box's addressing they
    exceed the registers a thread is compiled for; the register store streams slot by slot)."""
    stores = [op for op in body.epilogue if isinstance(op, (T.StoreOp, T.MaskedStoreOp, T.AtomicAddOp,
                                                            FragmentStoreOp))]
    if len(stores) != 1 or not isinstance(stores[0], (T.StoreOp, FragmentStoreOp)) or len(stores[0].offsets) != 2:
        return None
    store = stores[0]
    shape = tuple(store.value.type.get_shape()) if isinstance(store, T.StoreOp) else (body.bm, store.value.type.n.data)
    elem = store.dest.type.element_type
    if shape[0] != body.bm or type_name(elem) not in H.WgaccStoreTmaOp.TYPES or not H.WgaccStoreTmaOp.box_cols(elem, shape[1]):
        return None
    if any(isinstance(op, T.LoadOp) and len(op.offsets) == 2 and op.result.type.get_shape()[0] == body.bm
           for op in body.epilogue):
        return None
    return store
