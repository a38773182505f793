"""warp-specialize's builder for a GEMM-shaped K-loop: the persistent producer / consumer kernel body.

`Builder(kl, ...)` takes what `wgmma_kloop.match` found (one mma, two staged operands) and builds the new
kernel body: the barrier setup, the producer's TMA ring, the consumers' wgmma loop and epilogue, the
persistent tile loop (`tiles`, shared with `ws_body` for any other loop body). See `warp_specialize` for
the whole picture and the options.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, SSAValue

from tessera.ir import diagnostics as D
from tessera.ir import tile_ops as T
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir import ops as nv
from tessera.target.nvidia.ir.types import SMEM_LIMIT
from tessera.target.nvidia.passes.wgmma_epilogue import Epilogue
from tessera.target.nvidia.passes.ws_layout import plan_layout
from tessera.target.nvidia.passes.ws_sched import DynamicTiles
from tessera.target.nvidia.passes.ws_units import (FIRST_SLOT, HEAD, K_RANGE, PIECE, PIECES, REAL_TILE, SPLIT, TILE,
                                                   Units)
from tessera.target.nvidia.passes.wgmma_kloop import WG_ROWS, KLoop, binop, cmpi, index_const, refuse, is_scalar

LOCAL_TILE = object()  # mapping key: a tile's ordinal in this CTA, or (t, first, step) of a static loop to compute it
from tessera.target.nvidia.knobs import MULTICASTS  # noqa: E402 - the operand a 2-CTA cluster shares
# setmaxnreg per consumer count: 128 * producer + 128 * consumers * consumer <= 64K registers (multiples of 8)
REGS = {2: (40, 232), 3: (32, 160)}  # one consumer keeps the even share (no setmaxnreg); 3: as FlashAttention-3


class Builder:
    """Builds the new kernel body from a matched K-loop (see the module docstring)."""

    def __init__(self, kl: KLoop, stages: int, group_m: int, schedule: str = "cooperative", cluster: int = 1,
                 store: str = "tma", splitk: int = 1, multicast: str = "b", streamk: bool = False,
                 tiles: str = "static"):
        self.kl, self.cluster, self.splitk, self.streamk = kl, cluster, splitk, streamk
        if streamk and splitk > 1:
            raise refuse(kl.mma, f"streamk with splitk={splitk}: stream-K already shares a tile's K steps among "
                                 "CTAs", "use one of streamk=1 and splitk>1")
        if streamk:
            _uniform_k(kl)
        self.pair_axis = MULTICASTS.index(multicast)  # the grid axis whose neighbouring tiles a cluster takes
        self.shared = kl.b if multicast == "b" else kl.a
        self.pingpong = schedule == "pingpong"
        if self.pingpong and (kl.bm != 128 or kl.consumers != 2 or kl.bn > 128):
            raise refuse(kl.mma, f"schedule=pingpong with a {kl.bm}x{kl.bn} tile: each consumer warpgroup keeps a "
                                 "whole 128 x BN tile in registers, so BM must be 128 and BN at most 128",
                         "use BM=128, BN<=128 for pingpong, or schedule=cooperative")
        self.lay = plan_layout(kl, stages, self.pingpong, store, splitk > 1 or streamk)
        self.lag = 1 if stages > 1 else 0  # wgmma groups a consumer leaves in flight across a K step
        self.grid_axes = 1 + max([op.axis.data for op in kl.prologue
                                  if isinstance(op, (T.ProgramIdOp, T.NumProgramsOp))] + [1])
        self.units = Units(kl, group_m, cluster, splitk, self.pair_axis, streamk)
        self.sched = None
        if tiles == "dynamic":
            refuse_dynamic(kl.mma, cluster=cluster, streamk=streamk, whole_tiles=self.pingpong)
            self.sched = DynamicTiles.place(self.lay.total, 128 * kl.consumers)
            self.lay.extra = self.sched.end - self.lay.total
            if self.lay.total > SMEM_LIMIT[(9, 0)]:
                raise D.TesseraError(D.NV_SMEM_OVERFLOW, f"tiles=dynamic's hand-over ring needs {DynamicTiles.BYTES} "
                                                         f"bytes more shared memory than the {self.lay.total - self.lay.extra} "
                                                         f"this kernel has; sm_90a has {SMEM_LIMIT[(9, 0)]}",
                                     op=kl.mma, hint="use fewer stages, or tiles=static")

    # -- the kernel body --------------------------------------------------------------
    def body(self) -> list[Operation]:
        lay, kl = self.lay, self.kl
        readers = 1 if self.pingpong else kl.consumers  # warpgroups that read each slot before it is free
        # With a cluster, a slot is free once the consumers of every CTA in it are done (B lands in all of them).
        ops: list[Operation] = [H.MbarrierInitOp(lay.full, lay.stages, 1),
                                H.MbarrierInitOp(lay.empty, lay.stages, readers * self.cluster)]
        if self.pingpong:
            ops.append(H.MbarrierInitOp(lay.turn, 2, 1))
        if self.sched is not None:
            ops += self.sched.init()
        if self.cluster > 1:  # peers signal these barriers: they must exist first
            ops.append(H.ClusterSyncOp())
        tid = H.ThreadIdOp()
        ops.append(tid)
        wg = binop(ops, arith.DivSIOp, tid.result, 128)
        is_producer = arith.CmpiOp(wg, index_const(ops, 0), "eq")
        ops.append(is_producer)
        ops.append(scf.IfOp(is_producer, [], [*self.producer(tid.result), scf.YieldOp()],
                            [*self.consumer(wg), scf.YieldOp()]))
        if self.cluster > 1:  # no CTA leaves while a peer may still multicast into it or arrive on its barriers
            ops.append(H.ClusterSyncOp())
        return ops

    def producer(self, tid: SSAValue) -> list[Operation]:
        ops: list[Operation] = []
        if self.kl.consumers > 1:
            ops.append(H.SetMaxNRegOp(REGS[self.kl.consumers][0], "dec"))
        first = arith.CmpiOp(tid, index_const(ops, 0), "eq")
        ops.append(first)
        ops.append(scf.IfOp(first, [], [*self.tiles("producer", None), scf.YieldOp()]))
        return ops

    def consumer(self, wg: SSAValue) -> list[Operation]:
        ops: list[Operation] = []
        if self.kl.consumers > 1:
            ops.append(H.SetMaxNRegOp(REGS[self.kl.consumers][1], "inc"))
        c = binop(ops, arith.SubiOp, wg, 1)
        ops += self.tiles("consumer", c)
        if self.lay.staging:
            ops.append(H.TmaStoreDrainOp())
        return ops

    def tiles(self, role: str, consumer: SSAValue | None) -> list[Operation]:
        """The persistent loop over logical tiles, in grouped order, carrying the K-step counter.

        The producer and (cooperative) consumers visit every tile of the CTA; with
        schedule=pingpong consumer c takes every other one (c, c+2, ...) and skips
        the K steps of its partner's tiles in the counter, so both walk one ring.
        """
        ops: list[Operation] = []
        grid = [H.LogicalGridOp(a) for a in range(self.grid_axes)]
        ops += grid
        units, sizes = self.units, [g.result for g in grid]
        total = units.count(ops, sizes)
        if role == "producer":
            self.evict = self.evict_hints(ops, sizes)
        bid, ncta = nv.BlockIdOp(0), nv.GridDimOp(0)
        ops += [bid, ncta]
        bid, ncta = bid.result, ncta.result
        if self.cluster > 1:
            rank = H.ClusterRankOp()
            ops.append(rank)
            units.rank = rank.result
            bid = binop(ops, arith.DivSIOp, bid, self.cluster)
            ncta = binop(ops, arith.DivSIOp, ncta, self.cluster)
        first_unit, total, stride = units.walk(ops, total, bid, ncta)
        start, step, it0 = first_unit, stride, index_const(ops, 0)
        if self.sched is not None:
            def unit(inner: list, t: SSAValue, n: SSAValue, carried: list):
                mapping = units.setup(inner, t)
                mapping[LOCAL_TILE] = n
                return [self.k_loop(inner, role, carried[0], mapping, consumer)], None

            self.sched.walk(ops, role, start, total, ncta, [it0], unit)
            return ops
        alternate = role == "consumer" and self.pingpong
        if alternate:
            start = binop(ops, arith.AddiOp, first_unit, binop(ops, arith.MuliOp, consumer, stride))
            step = binop(ops, arith.MuliOp, stride, 2)
            first = units.trip(ops, units.setup(ops, first_unit))  # consumer 1 starts after unit 0's steps
            it0 = binop(ops, arith.MuliOp, consumer, first)
        block = Block(arg_types=[IndexType(), IndexType()])
        t, it = block.args
        inner: list[Operation] = []
        mapping = units.setup(inner, t)
        mapping[LOCAL_TILE] = (t, start, step)
        turn = None
        if alternate:  # this consumer's n-th tile (n = (t - bid - c*ncta) / (2*ncta)) waits for turn phase n + 1 - c
            mine = binop(inner, arith.DivSIOp, binop(inner, arith.SubiOp, t, start), step)
            turn = binop(inner, arith.RemSIOp, binop(inner, arith.SubiOp, binop(inner, arith.AddiOp, mine, 1),
                                                     consumer), 2)
        it_out = self.k_loop(inner, role, it, mapping, consumer, turn)
        if alternate:
            other = binop(inner, arith.AddiOp, t, stride)
            steps = units.trip(inner, units.setup(inner, other))
            real = arith.CmpiOp(other, total, "slt")
            skip = arith.SelectOp(real, steps, index_const(inner, 0))
            inner += [real, skip]
            it_out = binop(inner, arith.AddiOp, it_out, skip.result)
        inner.append(scf.YieldOp(it_out))
        block.add_ops(inner)
        ops.append(scf.ForOp(start, total, step, [it0], block))
        return ops

    def k_loop(self, ops: list, role: str, it: SSAValue, mapping: dict, consumer: SSAValue | None,
               turn: SSAValue | None = None) -> SSAValue:
        """One tile's K-loop for `role`; with `turn` (pingpong), the main loops of the consumers alternate.

        The order matters for correctness, not only speed: a consumer waits on
        slot barriers by phase parity, so it may start waiting only when every
        earlier use of the ring (its partner's tile) has completed; otherwise a
        barrier two phases behind would look complete.
        """
        if turn is not None:
            ops.append(H.MbarrierWaitOp(consumer, turn, self.lay.turn))
        kl, lay = self.kl, self.lay
        loop = kl.loop
        acc_t = nv.vec(kl.bn // 2, nv.f32)
        carried = [it]
        blocks = 2 if self.pingpong else kl.blocks  # 64-row blocks of the tile this warpgroup accumulates
        if role == "consumer":
            for _ in range(blocks):
                zero = nv.FillOp(0.0, acc_t)
                ops.append(zero)
                carried.append(zero.result)
        block = Block(arg_types=[IndexType()] + [v.type for v in carried])
        k, step_it = block.args[0], block.args[1]
        body_map = dict(mapping)
        body_map[loop.body.block.args[0]] = k
        inner: list[Operation] = []
        for op in loop.body.block.ops:
            if is_scalar(op):
                inner.append(op.clone(value_mapper=body_map))
        stage, phase = ring_slot(inner, step_it, lay.stages)
        if role == "producer":
            free = binop(inner, arith.SubiOp, index_const(inner, 1), phase)
            inner.append(H.MbarrierWaitOp(stage, free, lay.empty))
            inner.append(H.MbarrierExpectTxOp(stage, lay.full, lay.a_stage + lay.b_stage))
            for opnd, base, stage_bytes in ((kl.a, lay.a_base, lay.a_stage), (kl.b, lay.b_base, lay.b_stage)):
                row, col = (body_map.get(v, v) for v in opnd.view.offsets)
                shared = opnd is self.shared and self.cluster > 1
                for j in range(opnd.cols // lay.box_cols):  # boxes across the contiguous dimension
                    c = col if j == 0 else binop(inner, arith.AddiOp, col, j * lay.box_cols)
                    dst = base + j * opnd.rows * lay.swizzle
                    if not shared:
                        inner.append(H.TmaLoadOp(opnd.memref, row, c, stage, dst=dst, stage_bytes=stage_bytes,
                                                 bar=lay.full, box=(opnd.rows, lay.box_cols), swizzle=lay.swizzle,
                                                 evict_first=self.evict.get(id(opnd))))
                    else:
                        multicast_halves(inner, self.units.rank, opnd.memref, opnd.rows, row, c, stage, dst=dst,
                                         stage_bytes=stage_bytes, bar=lay.full, swizzle=lay.swizzle)
            results = [binop(inner, arith.AddiOp, step_it, 1)]
        else:
            # With a ring of two or more slots one wgmma group stays in flight across K steps: after issuing step
            # i, wait until step i-1's group is done and only then hand its slot back to the producer (the first
            # step of a tile has none). A one-slot ring cannot keep a group in flight (the producer needs that
            # very slot for step i+1), so there each step waits for its own group and frees its own slot.
            inner.append(H.MbarrierWaitOp(stage, phase, lay.full))
            rows = self.row_blocks(inner, consumer, blocks)
            mmas = [H.WgmmaOp(acc, stage, r, n=kl.bn, k=kl.bk, dtype=kl.dtype,
                              a=(lay.a_base, lay.a_stage, kl.bm, lay.warpgroup_bytes(kl)),
                              b=(lay.b_base, lay.b_stage, kl.bn), swizzle=lay.swizzle, a_major=kl.a.major,
                              b_major=kl.b.major)
                    for acc, r in zip(block.args[2:], rows)]
            dones = [H.WgmmaWaitOp(m.result, blocks * self.lag) for m in mmas]  # lag: this step's groups in flight
            inner += [*mmas, *dones]
            if self.lag:
                self.release_previous(inner, step_it, it)
            else:
                self.release(inner, stage)
            results = [binop(inner, arith.AddiOp, step_it, 1), *(d.result for d in dones)]
        inner.append(scf.YieldOp(*results))
        block.add_ops(inner)
        lb, ub, st = (body_map.get(v, v) for v in (loop.lb, loop.ub, loop.step))
        lb, ub = mapping.get(K_RANGE, (lb, ub))
        new_loop = scf.ForOp(lb, ub, st, carried, block)
        ops.append(new_loop)
        if role == "consumer":
            drained = [H.WgmmaWaitOp(r, 0) for r in new_loop.results[1:]]
            ops += drained
            if self.lag:
                self.release_previous(ops, new_loop.results[0], it)
            if turn is not None:  # hand the ring to the partner, then run this tile's epilogue
                ops.append(H.MbarrierArriveOp(binop(ops, arith.SubiOp, index_const(ops, 1), consumer), self.lay.turn))
            blocks_at = self.row_blocks(ops, consumer, blocks)
            tma = (self.lay.stage_base, consumer) if self.lay.staging else None
            epilogue: list[Operation] = []
            for d, r in zip(drained, blocks_at):
                if self.splitk == 1 and not self.streamk:
                    Epilogue(kl, r, mapping, tma).lower(epilogue, d.result)
                    continue
                if self.streamk:
                    fix = H.StreamkFixupOp(d.result, mapping[TILE], mapping[PIECE], mapping[PIECES],
                                           mapping[FIRST_SLOT], mapping[HEAD], r, consumer, n=kl.bn,
                                           blocks=kl.bm // WG_ROWS, slot_stride=2 * self.cluster, flag=self.lay.word)
                else:
                    fix = H.SplitkFixupOp(d.result, mapping[TILE], mapping[SPLIT], r, consumer, n=kl.bn,
                                          splits=self.splitk, blocks=kl.bm // WG_ROWS, flag=self.lay.word)
                last: list[Operation] = []
                Epilogue(kl, r, mapping, tma).lower(last, fix.result)
                epilogue += [fix, scf.IfOp(fix.last, [], [*last, scf.YieldOp()])]
            if REAL_TILE in mapping:  # the spare CTA of a cluster stores nothing: its rows may be another's
                epilogue = [scf.IfOp(mapping[REAL_TILE], [], [*epilogue, scf.YieldOp()])]
            ops += epilogue
        return new_loop.results[0]

    def evict_hints(self, ops: list, sizes: list[SSAValue]) -> dict:
        """id(operand) -> its `read_once` predicate (or None), for the producer's TMA loads."""
        return {id(o): read_once(ops, pid_axes(o.mn_offset), sizes) for o in (self.kl.a, self.kl.b)}

    def row_blocks(self, ops: list, consumer: SSAValue, blocks: int) -> list[SSAValue]:
        """The tile's 64-row blocks a consumer accumulates: all of them (pingpong: it owns whole tiles), else
        its own `blocks` consecutive ones (blocks * c + b; one block, c itself, for 64-row warpgroups)."""
        if self.pingpong:
            return [index_const(ops, b) for b in range(blocks)]
        if blocks == 1:
            return [consumer]
        first = binop(ops, arith.MuliOp, consumer, blocks)
        return [first] + [binop(ops, arith.AddiOp, first, b) for b in range(1, blocks)]

    def release_previous(self, ops: list, step: SSAValue, first: SSAValue) -> None:
        """Hand slot (step - 1) % stages back to the producer, unless `step` is this tile's `first` (no step yet).
        In a cluster the slot is handed back to every CTA's producer (each multicast into this CTA's slot)."""
        started = arith.CmpiOp(step, first, "ne")
        release: list[Operation] = []
        self.release(release, binop(release, arith.RemSIOp, binop(release, arith.SubiOp, step, 1), self.lay.stages))
        ops += [started, scf.IfOp(started, [], [*release, scf.YieldOp()])]

    def release(self, ops: list, slot: SSAValue) -> None:
        """Hand `slot` back to the producer (in a cluster, to every CTA's producer: each multicast into it)."""
        ops.append(H.MbarrierArriveOp(slot, self.lay.empty, cluster=self.cluster if self.cluster > 1 else None))


def refuse_dynamic(at, cluster: int = 1, streamk: bool = False, whole_tiles: bool = False) -> None:
    """tiles=dynamic hands out single units to single CTAs, in one sequence that every consumer follows."""
    for bad, what, hint in ((cluster > 1, f"cluster={cluster}: a cluster's CTAs take neighbouring tiles together",
                             "use cluster=1"),
                            (streamk, "streamk=1: stream-K deals every CTA a fixed share of the K steps",
                             "use tiles=static with streamk"),
                            (whole_tiles, "schedule=pingpong on a GEMM K-loop: its consumers take alternate "
                                          "tiles of a static walk", "use schedule=cooperative")):
        if bad:
            raise refuse(at, f"tiles=dynamic with {what}", hint)


def pid_axes(*values: SSAValue) -> set[int]:
    """The program-id axes that `values` depend on, through every op that computes them."""
    axes, seen, todo = set(), set(), list(values)
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = getattr(v, "op", None)
        if isinstance(owner, T.ProgramIdOp):
            axes.add(owner.axis.data)
        elif owner is not None:
            todo += list(owner.operands)
    return axes


def multicast_halves(ops: list, rank: SSAValue, memref: SSAValue, rows: int, row: SSAValue, col: SSAValue,
                     stage: SSAValue, *, dst: int, stage_bytes: int, bar: int, swizzle: int,
                     outer: list | tuple = ()) -> None:
    """A box both CTAs of a 2-CTA cluster read (a GEMM's B, or A with multicast=a), split between them: rank r
    loads rows [r R/2, (r+1) R/2) and multicasts them to both, so each CTA reads half of it from L2 and receives
    all of it. Boxes of one swizzle row of 16-bit elements across."""
    half = rows // 2
    is_first = arith.CmpiOp(rank, index_const(ops, 0), "eq")
    branches = []
    for r in range(2):
        body: list[Operation] = []
        at = row if r == 0 else binop(body, arith.AddiOp, row, half)
        body += [H.TmaLoadOp(memref, at, col, stage, dst=dst + r * half * swizzle, stage_bytes=stage_bytes, bar=bar,
                             box=(half, swizzle // 2), swizzle=swizzle, multicast=0b11, outer=outer), scf.YieldOp()]
        branches.append(body)
    ops += [is_first, scf.IfOp(is_first, [], branches[0], branches[1])]


def read_once(ops: list, follows: set[int], sizes: list[SSAValue]) -> SSAValue | None:
    """i1: no other tile reads an operand's boxes, i.e. every grid axis its offsets do not follow (`follows`)
    has size 1 (a GEMM's B when there is one row of tiles: M <= BM). Such boxes are loaded with an L2
    evict-first hint, so streaming them does not evict what every CTA shares (measured: 128 x 8192 x 8192 4%
    faster). None when every axis matters or none does (nothing to decide)."""
    others = [g for axis, g in enumerate(sizes) if axis not in follows]
    if not others or len(follows) == 0:
        return None
    one = index_const(ops, 1)
    pred = cmpi(ops, others[0], one, "eq")
    for g in others[1:]:
        pred = binop(ops, arith.AndIOp, pred, cmpi(ops, g, one, "eq"))
    return pred


def _uniform_k(kl: KLoop) -> None:
    """Stream-K lays the tiles' K steps end to end, so every tile must have the same K-loop: refuse bounds that
    depend on the tile (a program id)."""
    if pid_axes(kl.loop.lb, kl.loop.ub, kl.loop.step):
        raise refuse(kl.mma, "streamk with a K-loop whose bounds depend on tile.program_id: stream-K lays every "
                             "tile's K steps end to end, so all tiles need the same K range",
                     "use splitk, or no K decomposition, for kernels whose K range varies by tile")


def ring_slot(ops: list, step: SSAValue, stages: int) -> tuple[SSAValue, SSAValue]:
    """The ring slot of the `step`-th load (step % stages) and the phase parity of that slot's use."""
    return (binop(ops, arith.RemSIOp, step, stages),
            binop(ops, arith.RemSIOp, binop(ops, arith.DivSIOp, step, stages), 2))
