"""warp-specialize for any loop body: several wgmmas, operands staged in the loop or once per tile, register A.

`ws_match.match_body` names the loop's wgmmas and the tiles they read: *ring* operands staged in the loop (K and
V of attention, A and B of a GEMM: a TMA ring of `stages` slots; operands waited for in one `tile.wait` share a
full/empty barrier pair), *fixed* ones staged before it (Q: loaded once per tile) and register A tiles (wgmma's
RS form: the softmax's P). Accumulators start at fragment_zero or at any register tile and may be carried by the
loop with any other tile values (row max, row sum); everything else is lowered on a consumer's registers by
`ws_regs` (the D layout and its row vectors), so softmax stays in registers.

`BodyBuilder` walks the tiles with `ws_walk.TileWalk`: the producer warpgroup's thread 0 issues, per tile, the
fixed operands' TMA (after the consumers freed the slot) and, per loop step, each ring group's; each consumer
warpgroup holds one 64-row block of the tile (two at BM = 256, all of them with whole-tile ping-pong: one `Regs`
per block), waits on a full barrier where the program waited for its copy, runs each mma as a wgmma per block
and frees a ring slot once the last mma that reads it is done. The loop runs one of three ways: a loop whose
wgmmas only accumulate (a GEMM K-loop) keeps each step's groups in flight across the back edge
(`_chained_loop`); otherwise, with overlap (the default), the loop is rotated by one step and each wgmma is
waited for at its result's first use (ws_overlap), so the softmax of step j+1 runs while step j's P V wgmma is in
flight; without it each wgmma is waited for where it is issued. With schedule=pingpong the consumers of a loop
that only accumulates take alternate whole tiles (`_whole_tiles`); on any other loop they take turns at issuing
a step's wgmmas (FlashAttention-3's warp-scheduler barriers, section 3.1). Around the loop:
2-CTA clusters (the operand both CTAs read is multicast), split-K and stream-K fixups (accumulate-only loops),
and the TMA-store epilogue (`ws_match.tma_store_of`). See NOTES for what is next.
"""
from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, SSAValue

from tessera.ir import diagnostics as D
from tessera.ir import tile_ops as T
from tessera.ir.fragment_ops import AllocOp, AsyncCopyOp, FragmentMmaOp, FragmentPackOp, ViewOp, WaitOp
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir import wgreg_ops as W
from tessera.target.nvidia.ir.types import SMEM_LIMIT
from tessera.target.nvidia.passes.ws_common import WG_ROWS, binop, index_const, is_scalar, refuse
from tessera.target.nvidia.knobs import PAIR_AXIS
from tessera.target.nvidia.passes.ws_walk import (LOCAL_TILE, REGS, TileWalk, multicast_halves, pid_axes, read_once,
                                                  refuse_dynamic, refuse_scatter, ring_slot)
from tessera.target.nvidia.passes.ws_match import (ELEM_BYTES, SLOT_ALIGN, Body, Staged, _plan_smem,
                                                   accumulates_only, check_registers, match_body, tma_store_of)
from tessera.target.nvidia.passes.ws_overlap import plan_rotation, wgmma_inputs
from tessera.target.nvidia.passes.ws_regs import Regs, lower_all
from tessera.target.nvidia.passes.ws_sched import DynamicTiles
from tessera.target.nvidia.passes.ws_loops import StepLoops
from tessera.target.nvidia.passes.ws_tile_overlap import TileOverlap
from tessera.target.nvidia.passes.ws_units import (FIRST_SLOT, HEAD, K_RANGE, PIECE, PIECES, REAL_TILE, SPLIT, TILE,
                                                   Units)

class BodyBuilder(StepLoops, TileOverlap, TileWalk):
    """The persistent producer / consumer kernel of a matched loop body (see the module docstring)."""

    def __init__(self, body: Body, stages: int, group_m: int, pingpong: bool = False, overlap: bool = True,
                 tiles: str = "static", store: str = "registers", cluster: int = 1, multicast: str = "b",
                 splitk: int = 1, streamk: bool = False, fixup: str = "gather"):
        self.body_ = body
        self.stages = stages
        self.overlap = overlap
        self.feeds = wgmma_inputs([m.op for m in body.mmas])
        if pingpong and body.consumers < 2:
            raise refuse(body.mmas[0].op, f"schedule=pingpong passes turns between consumer warpgroups; a "
                                          f"{body.bm}-row tile has {body.consumers}",
                         "use BLOCK_M = 128 or 192, or schedule=cooperative")
        # accumulate-only wgmmas keep this step's groups in flight across the back edge (see _chained_loop);
        # rotating such a loop would overlap nothing more
        self.chained = accumulates_only(body)
        self.lag = 1 if stages > 1 else 0  # a one-slot ring is needed again next step: nothing stays in flight
        # schedule=pingpong: where the loop only accumulates, each consumer owns whole tiles, alternating, so one's
        # epilogue runs under the other's loop (`_whole_tiles`); otherwise the consumers share each tile and take
        # turns at issuing each step's wgmmas (see _turns), so one's softmax runs under another's GEMMs
        self.pingpong = pingpong and self.chained  # TileWalk.tiles deals the consumers alternate tiles
        self.scheduler = pingpong and not self.chained
        self.blocks = body.blocks  # 64-row blocks of a tile one consumer holds (row_blocks says which)
        if self.pingpong:
            self._whole_tiles(body, tiles)
        # a consumer of several blocks runs the loop as written (rotation would carry each block's values)
        self.rotation = plan_rotation(body.loop) if overlap and not self.chained and self.blocks == 1 else None
        self.carry = self._tile_overlap_carry()
        self.fixed_slots = 1
        if self.carry is not None:  # double-buffer the fixed operands where shared memory allows (tile overlap)
            for st in body.fixed:
                st.slots = 2
            if _plan_smem(body, body.mmas[0].op, stages) <= SMEM_LIMIT[(9, 0)]:
                self.fixed_slots = 2
            else:
                for st in body.fixed:
                    st.slots = 1
                self.carry = None
        self.tma_store = tma_store_of(body) if store == "tma" else None  # the epilogue's store through TMA
        if self.tma_store is not None:
            body.staging = body.consumers * H.WgaccStoreTmaOp.STAGE_BYTES
            if _plan_smem(body, body.mmas[0].op, stages) > SMEM_LIMIT[(9, 0)]:  # else it stores from registers
                body.staging, self.tma_store = 0, None
        self.slot_now: SSAValue | None = None  # the fixed operands' slot of the tile being lowered
        self.evict: dict = {}  # the producer's `evict_hints`, set where its tile walk starts
        self.total = _plan_smem(body, body.mmas[0].op, stages)
        self.splitk, self.streamk = splitk, streamk
        self.kpair = cluster > 1 and multicast == "k"  # the cluster's CTAs split each tile's K steps
        self._check_k_split(body, tiles)
        self.scatter = fixup == "scatter"  # each split sums and stores its own columns (see refuse_scatter)
        if self.scatter:
            refuse_scatter(body, self.tma_store, self.splitk, tiles, cluster, pingpong)
        self.word = self.total  # split-K / stream-K: one 4-byte verdict word per consumer, after the barriers
        if splitk > 1 or streamk:
            self.total += 4 * body.consumers
        if self.kpair:
            self._plan_kpair(body)
        self.sched = None
        if tiles == "dynamic":  # the hand-over ring of the dynamic tile scheduler follows the barriers
            self.sched = DynamicTiles.place(self.total, 128 * body.consumers)
            self.total = self.sched.end
        if self.total > SMEM_LIMIT[(9, 0)]:
            tiles = " and ".join(f"{st.view.source.name_hint or st.role.upper()} {st.rows}x{st.cols}" for st in body.ring)
            raise D.TesseraError(D.NV_SMEM_OVERFLOW, f"{stages} stages of {tiles} need {self.total} "
                                                     f"bytes of shared memory; sm_90a has {SMEM_LIMIT[(9, 0)]}",
                                 op=body.mmas[0].op, hint="use fewer stages or a smaller BK (or smaller blocks)")
        self.cluster = cluster
        self.pair_axis = PAIR_AXIS[multicast]  # the grid axis whose neighbouring tiles a cluster takes (-1: none)
        self.shared = self._shared_operands(body) if cluster > 1 and not self.kpair else []
        self.cluster_bars = {st.empty for st in self.shared}  # slots both CTAs' consumers release
        if cluster > 1 and tiles == "dynamic":
            refuse_dynamic(body.mmas[0].op, cluster=cluster)
        self.turn_ids: tuple[SSAValue, SSAValue] | None = None
        self.grid_axes = 1 + max([op.axis.data for op in body.prologue
                                  if isinstance(op, (T.ProgramIdOp, T.NumProgramsOp))] + [1])
        self.units = Units(body, group_m, cluster, splitk, self.pair_axis, streamk)
        self.consumers = body.consumers

    def _whole_tiles(self, body: Body, tiles: str) -> None:
        """Whole-tile ping-pong: two consumers take alternate tiles, each holding all of a tile's 64-row blocks,
        and hand the ring over in turn (two `turn` barriers: consumer c starts a loop when turn[c] completes)."""
        at = body.mmas[0].op
        if body.consumers != 2:
            raise refuse(at, f"schedule=pingpong on a loop that only accumulates: two consumer warpgroups take "
                             f"alternate whole tiles; a {body.bm}-row tile has {body.consumers}",
                         "use BLOCK_M = 128 for pingpong, or schedule=cooperative")
        if body.fixed:
            raise refuse(at, "schedule=pingpong on a loop that only accumulates, with an operand staged once per "
                             "tile: whole-tile consumers would free its slot in turn", "use schedule=cooperative")
        if tiles == "dynamic":
            refuse_dynamic(at, whole_tiles=True)
        self.blocks = body.bm // WG_ROWS
        check_registers(body.mmas, 2, self.blocks, body.bm)
        body.turns = 2

    def _check_k_split(self, body: Body, tiles: str) -> None:
        """Split-K and stream-K sum a tile's pieces of the K range, so the loop must only accumulate (one wgmma
        into the value it carries: `accumulates_only`), and stream-K lays every tile's steps end to end (the
        same K range for all)."""
        if self.splitk == 1 and not self.streamk and not self.kpair:
            return
        at = body.mmas[0].op
        what = f"splitk={self.splitk}" if self.splitk > 1 else "streamk=1" if self.streamk else "multicast=k"
        if self.streamk and self.splitk > 1:
            raise refuse(at, f"streamk with splitk={self.splitk}: stream-K already shares a tile's K steps among "
                             "CTAs", "use one of streamk=1 and splitk>1")
        if self.kpair and (self.splitk > 1 or self.streamk):
            raise refuse(at, f"multicast=k with {what}: the cluster pair already splits each tile's K steps",
                         "use one K decomposition: multicast=k (in the cluster), splitk or streamk")
        if not self.chained or len(body.mmas) != 1:
            raise refuse(at, f"{what} with a loop that does more than accumulate one wgmma: the pieces of a tile's "
                             "K range are summed, which only a loop of one accumulating wgmma (a GEMM K-loop) allows",
                         f"leave {what.split('=')[0]} at its default for this kernel")
        if self.streamk and pid_axes(body.loop.lb, body.loop.ub, body.loop.step):
            raise refuse(at, "streamk with a K-loop whose bounds depend on tile.program_id: stream-K lays every "
                             "tile's K steps end to end, so all tiles need the same K range",
                         "use splitk, or no K decomposition, for kernels whose K range varies by tile")
        if self.streamk and tiles == "dynamic":
            refuse_dynamic(at, streamk=True)

    def _plan_kpair(self, body: Body) -> None:
        """multicast=k: rank 0's receive slots (a 64 x n f32 block per consumer warpgroup and 64-row block it
        holds: whole-tile ping-pong consumers each hold every block) and their full / empty mbarriers, after the
        rest of shared memory."""
        blocks = body.bm // WG_ROWS
        self.kslots = blocks * (2 if self.pingpong else 1)
        self.kbuf = -(-self.total // 16) * 16
        self.kfull = self.kbuf + self.kslots * H.ClusterSplitkFixupOp.slot_bytes(body.mmas[0].n)
        self.kempty = self.kfull + 8 * self.kslots
        self.total = self.kempty + 8 * self.kslots

    def _ordinal(self, ops: list, mapping: dict) -> SSAValue:
        """The tile's count in this consumer's walk so far (the phase of barriers used once per tile)."""
        local = mapping[LOCAL_TILE]
        if isinstance(local, SSAValue):  # the loop carries it (tiles=dynamic)
            return local
        t, start, step = local
        return binop(ops, arith.DivSIOp, binop(ops, arith.SubiOp, t, start), step)

    def _fixup(self, regs: Regs, mapping: dict, consumer: SSAValue) -> tuple[list[Operation], SSAValue] | None:
        """Split-K / stream-K: meet the tile's other pieces in the runtime's scratch buffer (multicast=k: in rank
        0's shared memory); its ops and their i1 "this piece is the last, run the epilogue on the sum" (None
        without a K decomposition)."""
        if self.splitk == 1 and not self.streamk and not self.kpair:
            return None
        mm = self.body_.mmas[0]
        old = self.body_.loop.results[0]
        blocks = self.body_.bm // WG_ROWS  # a tile's 64-row blocks: its scratch record holds them all
        if self.kpair:
            pre: list[Operation] = []
            slot = regs.block
            if self.pingpong:  # each consumer holds every block of its own tiles: slots of its own
                slot = binop(pre, arith.AddiOp, regs.block, binop(pre, arith.MuliOp, consumer, blocks))
            fix = H.ClusterSplitkFixupOp(regs.get(old), self.units.rank, self._ordinal(pre, mapping), slot, consumer,
                                         n=mm.n, slots=self.kslots, buffer=self.kbuf, full=self.kfull,
                                         empty=self.kempty)
            regs.map[old] = fix.result
            return pre + [fix], fix.last
        if self.streamk:
            fix = H.StreamkFixupOp(regs.get(old), mapping[TILE], mapping[PIECE], mapping[PIECES],
                                   mapping[FIRST_SLOT], mapping[HEAD], regs.block, consumer, n=mm.n, blocks=blocks,
                                   slot_stride=2 * self.cluster, flag=self.word)
        else:
            fix = H.SplitkFixupOp(regs.get(old), mapping[TILE], mapping[SPLIT], regs.block, consumer, n=mm.n,
                                  splits=self.splitk, blocks=blocks, flag=self.word, scatter=self.scatter)
            if self.scatter:  # every split runs the epilogue; its TMA store writes only its own boxes
                regs.window = (mapping[SPLIT], self.splitk)
        regs.map[old] = fix.result
        return [fix], fix.last

    def _shared_operands(self, body: Body) -> list[Staged]:
        """With a 2-CTA cluster along `pair_axis`: the ring operands both CTAs read (their view does not follow
        that grid axis), each loaded half by each CTA and multicast to both (a GEMM's B with multicast=b); the
        operands waited for with them share their barriers, so those slots are released on both CTAs
        (`cluster_bars`: the empty barriers of the groups holding a shared operand)."""
        shared = [st for st in body.ring if self.pair_axis not in body.grid_axes_of(st)]
        at = body.mmas[0].op
        if body.fixed or not shared:
            raise refuse(at, f"cluster={self.cluster}: " + ("an operand staged once per tile (before the loop)"
                                                              if body.fixed else
                                                              f"no operand staged in the loop is the same for both "
                                                              f"CTAs of a pair along grid axis {self.pair_axis}"),
                         "leave cluster at 1 for this kernel, or pair the CTAs along the other axis (multicast=)")
        for st in shared:
            if st.rows % 2 or (st.rows // 2) % 8:
                raise refuse(at, f"cluster={self.cluster}: a shared {st.rows}-row tile splits into halves of "
                                 f"{st.rows / 2:g} rows; TMA multicast halves must be multiples of 8 rows")
        return shared

    def evict_hints(self, ops: list, sizes: list[SSAValue]) -> dict:
        """id(ring operand) -> its `read_once` predicate (or None): the loop's own offset aside, the program ids
        its view follows; boxes no other tile reads stream with an L2 evict-first hint."""
        return {id(st): read_once(ops, self.body_.grid_axes_of(st), sizes) for st in self.body_.ring}

    # -- the kernel body --------------------------------------------------------------
    def body(self) -> list[Operation]:
        bd = self.body_
        ops: list[Operation] = []
        for st in bd.fixed + [g[0] for g in bd.ring_groups]:
            count = self.stages if st.ring else st.slots
            # a fixed slot is released by every consumer thread: a warpgroup whose loop ran no step has no wgmma
            # to converge it, so one thread's arrival could let the next tile's load complete a second phase
            # before a slower warp of it has seen the first (its parity wait would then never return)
            readers = 1 if self.pingpong else self.consumers  # warpgroups that read a ring slot before it is free
            releases = readers * (self._reach(st.empty) or 1) if st.ring else 128 * self.consumers
            ops += [H.MbarrierInitOp(st.full, count, 1), H.MbarrierInitOp(st.empty, count, releases)]
        if self.pingpong:
            ops.append(H.MbarrierInitOp(bd.turn, 2, 1))
        if self.sched is not None:
            ops += self.sched.init()
        if self.kpair:  # rank 0's receive slots: full (rank 1's bytes arrive), empty (rank 0 has read them)
            ops += [H.MbarrierInitOp(self.kfull, self.kslots, 1), H.MbarrierInitOp(self.kempty, self.kslots, 1)]
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

    def _reach(self, bar: int) -> int | None:
        """The CTAs a release of ring barrier `bar` goes to: the cluster's for a group holding a shared operand
        (each CTA multicasts into the other's slot), else None (this CTA only)."""
        return self.cluster if bar in self.cluster_bars else None

    def arrive(self, slot: SSAValue, bar: int) -> Operation:
        """A consumer warpgroup frees `slot` of the ring barrier `bar` (on both CTAs of a cluster for a shared one)."""
        return H.MbarrierArriveOp(slot, bar, cluster=self._reach(bar))

    def producer(self, tid: SSAValue) -> list[Operation]:
        ops: list[Operation] = []
        if self.consumers > 1:
            ops.append(H.SetMaxNRegOp(REGS[self.consumers][0], "dec"))
        first = arith.CmpiOp(tid, index_const(ops, 0), "eq")
        ops.append(first)
        ops.append(scf.IfOp(first, [], [*self.tiles("producer", None), scf.YieldOp()]))
        return ops

    def consumer(self, wg: SSAValue) -> list[Operation]:
        ops: list[Operation] = []
        if self.consumers > 1:
            ops.append(H.SetMaxNRegOp(REGS[self.consumers][1], "inc"))
        c = binop(ops, arith.SubiOp, wg, 1)
        if self.scheduler:
            ops += self._first_turn(c)
        ops += self.tiles("consumer", c)
        if self.tma_store is not None:
            ops.append(H.TmaStoreDrainOp())
        return ops

    # -- turns at the tensor cores (schedule=pingpong) ------------------------------------
    TURN_BARRIER = 8  # consumer c's turn is hardware barrier 8 + c (1 to 3: the epilogues' warpgroup barriers)

    def _first_turn(self, c: SSAValue) -> list[Operation]:
        """The ids of this consumer's turn barrier and its successor's; consumer 0 opens its own first turn."""
        ops: list[Operation] = []
        base = index_const(ops, self.TURN_BARRIER)
        mine = binop(ops, arith.AddiOp, c, base)
        after = binop(ops, arith.RemSIOp, binop(ops, arith.AddiOp, c, 1), self.consumers)
        self.turn_ids = (mine, binop(ops, arith.AddiOp, after, base))
        first = arith.CmpiOp(c, index_const(ops, 0), "eq")
        ops += [first, scf.IfOp(first, [], [H.NamedBarrierOp(mine, 256, "arrive"), scf.YieldOp()])]
        return ops

    def _turns(self, ops: list[Operation], each: bool = False) -> None:
        """Bracket a loop step's wgmma issues: wait for this consumer's turn before the first, hand the turn on
        after the last (a barrier of 256 threads: this warpgroup's sync and its predecessor's arrival); `each`
        (a loop whose wgmmas are waited for where they are issued, so the softmax sits between them): every
        issue on its own. Every consumer of a tile runs the same steps, so the turns go round in order and no
        barrier is arrived on twice before its sync."""
        if not self.scheduler:
            return
        at = [i for i, op in enumerate(ops) if isinstance(op, (H.WgmmaOp, W.WgmmaRsOp))]
        if not at:
            return
        mine, after = self.turn_ids
        spans = [(i, i) for i in at] if each else [(at[0], at[-1])]
        for first, last in reversed(spans):  # from the back, so the indices ahead stay valid
            ops.insert(last + 1, H.NamedBarrierOp(after, 256, "arrive"))
            ops.insert(first, H.NamedBarrierOp(mine, 256, "sync"))

    # -- one tile ---------------------------------------------------------------------
    def _fixed_slot(self, ops: list, mapping: dict) -> tuple[SSAValue, SSAValue]:
        """(slot, phase parity) of this tile's fixed operands: with one slot, slot 0 in phase ordinal % 2; with
        two, slot ordinal % 2 in phase (ordinal / 2) % 2 (ordinal: the tile's count in this CTA so far)."""
        ordinal = self._ordinal(ops, mapping)
        if self.fixed_slots == 1:
            return index_const(ops, 0), binop(ops, arith.RemSIOp, ordinal, 2)
        return ring_slot(ops, ordinal, self.fixed_slots)

    def _load(self, ops: list, st: Staged, mapping: dict, stage: SSAValue, stage_bytes: int) -> None:
        """The TMA boxes of one staged tile: one per swizzle row across its contiguous dimension."""
        sw = self.body_.swizzle
        box_cols = sw // ELEM_BYTES
        *outer, row, col = (mapping.get(v, v) for v in st.view.offsets)
        for j in range(st.cols // box_cols):
            c = col if j == 0 else binop(ops, arith.AddiOp, col, j * box_cols)
            if st in self.shared:  # this CTA's half of the box, multicast to both
                multicast_halves(ops, self.units.rank, st.view.source, st.rows, row, c, stage,
                                 dst=st.base + j * st.rows * sw, stage_bytes=stage_bytes, bar=st.full, swizzle=sw,
                                 outer=outer)
                continue
            ops.append(H.TmaLoadOp(st.view.source, row, c, stage, dst=st.base + j * st.rows * sw,
                                   stage_bytes=stage_bytes, bar=st.full, box=(st.rows, box_cols), swizzle=sw,
                                   outer=outer, evict_first=self.evict.get(id(st)) if st.ring else None))

    def _slot_bytes(self, st: Staged) -> int:
        return -(-st.slot_bytes // SLOT_ALIGN) * SLOT_ALIGN

    def k_loop(self, ops: list, role: str, it: SSAValue, mapping: dict, consumer: SSAValue | None,
               turn: SSAValue | None = None) -> SSAValue:
        if role == "producer":
            return self._produce(ops, it, mapping)
        return self._consume(ops, it, mapping, consumer, turn=turn)

    def _produce(self, ops: list, it: SSAValue, mapping: dict) -> SSAValue:
        bd = self.body_
        if bd.fixed:
            slot, phase = self._fixed_slot(ops, mapping)
            free = binop(ops, arith.SubiOp, index_const(ops, 1), phase)
            for st in bd.fixed:
                ops += [H.MbarrierWaitOp(slot, free, st.empty), H.MbarrierExpectTxOp(slot, st.full, st.slot_bytes)]
                self._load(ops, st, mapping, slot, self._slot_bytes(st) if st.slots > 1 else 0)
        loop = bd.loop
        block = Block(arg_types=[IndexType(), IndexType()])
        k, step_it = block.args
        body_map = dict(mapping)
        body_map[loop.body.block.args[0]] = k
        inner: list[Operation] = []
        for op in loop.body.block.ops:
            if is_scalar(op):
                inner.append(op.clone(value_mapper=body_map))
        stage, phase = ring_slot(inner, step_it, self.stages)
        free = binop(inner, arith.SubiOp, index_const(inner, 1), phase)
        for group in bd.ring_groups:
            lead = group[0]
            inner += [H.MbarrierWaitOp(stage, free, lead.empty),
                      H.MbarrierExpectTxOp(stage, lead.full, sum(st.slot_bytes for st in group))]
            for st in group:
                self._load(inner, st, body_map, stage, self._slot_bytes(st))
        inner.append(scf.YieldOp(binop(inner, arith.AddiOp, step_it, 1)))
        block.add_ops(inner)
        lb, ub, st_ = (mapping.get(v, v) for v in (loop.lb, loop.ub, loop.step))
        lb, ub = mapping.get(K_RANGE, (lb, ub))  # split-K / stream-K: this unit's part of the K range
        new_loop = scf.ForOp(lb, ub, st_, [it], block)
        ops.append(new_loop)
        return new_loop.results[0]

    def _consume(self, ops: list, it: SSAValue, mapping: dict, consumer: SSAValue, pre: dict | None = None,
                 turn: SSAValue | None = None):
        """One tile on a consumer: its registers, the fixed operands' wait, the loop, their release, the epilogue.
        With `pre` (tile overlap, ws_tile_overlap) the first step's early part already ran: `pre` holds its
        results and its fixed-operand wait; the epilogue is left to the caller, which gets (it, regs). With `turn`
        (whole-tile ping-pong) the loop waits for this consumer's turn at the ring and hands it on after; the
        epilogue then runs under the partner's loop."""
        bd = self.body_
        if turn is not None:  # it may wait on the ring's barriers only once every earlier use has completed
            ops.append(H.MbarrierWaitOp(consumer, turn, bd.turn))
        rs = self._tile_regs(ops, mapping, consumer)
        rotation = self.rotation
        slot, phase = self._fixed_slot(ops, mapping) if bd.fixed else (index_const(ops, 0), None)
        self.slot_now = slot
        if pre is None:
            for st in bd.fixed:
                ops.append(H.MbarrierWaitOp(slot, phase, st.full))
        early = self._early_fixed(rotation)
        if self.chained:
            it_out = self._chained_loop(rs, ops, it, mapping, consumer)
        elif rotation is None:
            it_out = self._plain_loop(rs, ops, it, mapping, consumer)
        else:
            it_out = self._rotated_loop(rs[0], ops, it, mapping, consumer, rotation, early, pre,
                                        None if pre is None else phase)
        for st in bd.fixed:  # every mma reading it has completed (no group outlives its loop step); every thread
            if st not in early:
                ops.append(H.MbarrierArriveOp(slot, st.empty, per="thread"))
        if turn is not None:  # the partner's turn at the ring
            ops.append(H.MbarrierArriveOp(binop(ops, arith.SubiOp, index_const(ops, 1), consumer), bd.turn))
        if pre is not None:
            return it_out, rs[0]
        epilogue: list[Operation] = []
        for regs in rs:  # block after block, like the loop's values
            part: list[Operation] = []
            fixed_up = self._fixup(regs, mapping, consumer)
            lower_all(regs, part, bd.epilogue)
            if fixed_up is not None:  # the tile's last piece runs the epilogue on the sum (scatter: every split,
                fix_ops, last = fixed_up  # each storing its own columns of it)
                part = [*fix_ops, *(part if self.scatter else [scf.IfOp(last, [], [*part, scf.YieldOp()])])]
            epilogue += part
        if REAL_TILE in mapping:  # the spare CTA of a cluster (an odd count of tiles) stores nothing
            epilogue = [scf.IfOp(mapping[REAL_TILE], [], [*epilogue, scf.YieldOp()])]
        ops += epilogue
        return it_out

    def _tile_regs(self, ops: list, mapping: dict, consumer: SSAValue) -> list[Regs]:
        """A consumer's registers for the tile of `mapping`, one `Regs` per 64-row block it holds: masks, the
        block's first row, the prologue's register values (tile constants, iotas, zero accumulators; index math
        is in `mapping`)."""
        bd = self.body_
        rs = []
        for block in self.row_blocks(ops, consumer, self.blocks):
            regs = Regs(bd.bm, block, dict(mapping))
            if self.tma_store is not None:
                regs.tma = (self.tma_store, bd.stage_base, consumer)
            regs.guard_masks(bd.loop.body.block)  # per-step masks that pass whole skip their compares (ws_masks)
            regs.row0(ops)  # computed once, above the loop and its guarded regions, so every step and branch can use it
            rs.append(regs)
        staged = {st.alloc: st for st in bd.staged}
        for op in bd.prologue:
            if is_scalar(op) or isinstance(op, (T.ProgramIdOp, T.NumProgramsOp, AllocOp, ViewOp, AsyncCopyOp,
                                                WaitOp)):
                continue
            if isinstance(op, FragmentPackOp) and op.source.owner in staged:
                continue
            self._register_op(rs, ops, op)
        return rs

def lower_body(kernel: func.FuncOp, mmas: list[FragmentMmaOp], stages: int, group_m: int,
               pingpong: bool = False, overlap: bool = True, tiles: str = "static",
               store: str = "registers", cluster: int = 1, multicast: str = "b", splitk: int = 1,
               streamk: bool = False, fixup: str = "gather") -> BodyBuilder:
    body = match_body(kernel, mmas)
    return BodyBuilder(body, stages, group_m, pingpong, overlap, tiles, store, cluster, multicast, splitk, streamk,
                       fixup)
