"""Tile overlap for the general warp-specialised body: the next tile's first wgmmas run under this tile's epilogue.

ws_overlap rotates a consumer's K-loop by one step, so inside a tile step j+1's leading wgmma (QK^T) is in
flight while step j's tail runs. Each tile still starts cold (its first QK^T waited for at once) and ends
cold (its epilogue, the O normalisation and stores, with the tensor cores idle). Here the consumer's tile
loop is rotated the same way, one level up: after tile t's loop, the `early` part of tile t+1's first step
(the fixed operands' wait, K's wait, the QK^T wgmma) is issued, then tile t's epilogue runs, then that wgmma
is waited for; tile t+1 starts from its result (FlashAttention-3's inter-tile overlap of the softmax warpgroups'
epilogue with the next tile's first GEMM). Results cross the tile loop's back edge only when complete (no
wgmma group is in flight at a yield: ptxas would serialise every wgmma of the kernel otherwise).

The next tile's fixed operands (Q) must have landed by then, so they are double-buffered by tile parity
(`Staged.slots` = 2, `nv.wgmma ... a_slot`): the producer loads tile t+1's Q while tile t runs. The overlap is
on where that fits in shared memory, the loop is rotated (overlap=True) and the consumers share each tile
(no schedule=pingpong turns), and the values the early part hands on are wgmma accumulators; a tile with no
loop step has no early part (it waits for its fixed operands where it frees them).
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, SSAValue

from tessera.ir.fragment_ops import FragmentMmaOp
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir import ops as nv
from tessera.target.nvidia.passes.ws_common import binop, cmpi, index_const
from tessera.target.nvidia.passes.ws_walk import LOCAL_TILE, ring_slot
from tessera.target.nvidia.passes.ws_overlap import InFlight, _unlowered
from tessera.target.nvidia.passes.ws_regs import lower_all


class TileOverlap:
    """BodyBuilder's consumer tile loop with tile overlap (see the module docstring)."""

    def _tile_overlap_carry(self) -> list[SSAValue] | None:
        """The values the first step's early part defines for the rest of the tile (QK^T's accumulator), or
        None where tile overlap does not apply."""
        bd, rot = self.body_, self.rotation
        if rot is None or self.scheduler or not bd.fixed:
            return None
        if any(m.b is st for st in bd.fixed for m in bd.mmas):
            return None  # a fixed B would need a slot index of its own beside the ring's stage
        walked = [inner for op in rot.early for inner in op.walk()]
        inside = set(walked)
        carry = []
        for op in walked:  # program order: the carried values, and so the emitted kernel, are deterministic
            for v in op.results:
                if _unlowered(v) or v in carry:
                    continue
                if any(use.operation not in inside for use in v.uses):
                    if not isinstance(op, FragmentMmaOp):
                        return None  # only accumulators cross the tile boundary (complete, as f32 registers)
                    carry.append(v)
        return carry

    def tiles(self, role: str, consumer: SSAValue | None) -> list[Operation]:
        if role != "consumer" or self.carry is None:
            return super().tiles(role, consumer)
        ops: list[Operation] = []
        grid = [H.LogicalGridOp(a) for a in range(self.grid_axes)]
        ops += grid
        units, sizes = self.units, [g.result for g in grid]
        total = units.count(ops, sizes)
        bid, ncta = nv.BlockIdOp(0), nv.GridDimOp(0)
        ops += [bid, ncta]
        start, total, step = units.walk(ops, total, bid.result, ncta.result)
        it0 = index_const(ops, 0)
        if self.sched is not None:  # tiles=dynamic: the next tile is the one the producer handed over
            first = self._next_head(ops, start, index_const(ops, 0), total, it0, consumer, None)

            def unit(inner: list, t: SSAValue, n: SSAValue, carried: list):
                it, *pre = carried
                mapping = units.setup(inner, t)
                mapping[LOCAL_TILE] = n
                it_out, regs = self._consume(inner, it, mapping, consumer, dict(zip(self.carry, pre)))
                nxt = self.sched.receive(inner, n)
                n1 = binop(inner, arith.AddiOp, n, 1)
                return [it_out, *self._next_head(inner, nxt, n1, total, it_out, consumer, regs)], nxt

            self.sched.walk(ops, "consumer", start, total, ncta.result, [it0, *first], unit)
            return ops
        first = self._next_head(ops, start, (start, start, step), total, it0, consumer, None)
        block = Block(arg_types=[IndexType(), IndexType(), *(v.type for v in first)])
        t, it, *pre = block.args
        inner: list[Operation] = []
        mapping = units.setup(inner, t)
        mapping[LOCAL_TILE] = (t, start, step)
        it_out, regs = self._consume(inner, it, mapping, consumer, dict(zip(self.carry, pre)))
        nxt = binop(inner, arith.AddiOp, t, step)
        carried = self._next_head(inner, nxt, (nxt, start, step), total, it_out, consumer, regs)
        inner.append(scf.YieldOp(it_out, *carried))
        block.add_ops(inner)
        ops.append(scf.ForOp(start, total, step, [it0, *first], block))
        return ops

    def _next_head(self, ops: list, t: SSAValue, local, total: SSAValue, it: SSAValue, consumer: SSAValue,
                   epilogue_regs) -> list[SSAValue]:
        """Step 0's early part of tile `t` (its ordinal, or (t, first, step) of the static walk: `local`; issued at
        ring step `it`), then the epilogue of the tile before it
        (`epilogue_regs`; None: no tile before), then the wait for the early wgmmas; their results, complete.

        Straight-line code, so the epilogue is emitted once: only the barrier waits and the ring-slot releases
        are conditional (`t` exists and its loop runs a step). Where it does not, the wgmmas still run, on
        whatever the slots hold, and their results go unused (no next tile, or one whose loop is skipped)."""
        bd, rot = self.body_, self.rotation
        loop = bd.loop
        mapping = self.units.setup(ops, t)
        mapping[LOCAL_TILE] = local
        runs = binop(ops, arith.AndIOp, cmpi(ops, t, total, "slt"),
                     cmpi(ops, self.units.trip(ops, mapping), index_const(ops, 0), "sgt"))
        regs, = self._tile_regs(ops, mapping, consumer)  # one block: tile overlap needs a rotated loop
        slot, phase = self._fixed_slot(ops, mapping)
        waits: list[Operation] = [H.MbarrierWaitOp(slot, phase, st.full) for st in bd.fixed]
        src = loop.body.block
        regs.map[src.args[0]] = mapping.get(loop.lb, loop.lb)
        regs.map.update(zip(src.args[1:], (regs.get(v) for v in loop.iter_args)))
        flight = InFlight()
        flight.maps = [regs.map]
        stage, ring_phase = ring_slot(ops, it, self.stages)
        issued: list[Operation] = []
        outer_slot, self.slot_now = self.slot_now, slot
        self._step([regs], issued, rot.early, stage, ring_phase, consumer, it, flight)
        self.slot_now = outer_slot
        waits += [op for op in issued if isinstance(op, H.MbarrierWaitOp)]
        ops.append(scf.IfOp(runs, [], [*waits, scf.YieldOp()]))
        ops += [op for op in issued if not isinstance(op, H.MbarrierWaitOp)]
        if epilogue_regs is not None:
            lower_all(epilogue_regs, ops, bd.epilogue)
        drained: list[Operation] = []
        flight.drain(drained)
        frees = [op for op in drained if isinstance(op, H.MbarrierArriveOp)]
        ops += [op for op in drained if not isinstance(op, H.MbarrierArriveOp)]
        if frees:
            ops.append(scf.IfOp(runs, [], [*frees, scf.YieldOp()]))
        return [regs.get(v) for v in self.carry]
