"""A consumer's loop in warp-specialize's general body: one loop step's ops on each block's registers, and the
three ways the loop runs (`ws_body` has the kernel around it).

`_step` lowers a step's ops: a `tile.wait` on ring operands becomes full-barrier waits, each mma a wgmma per
64-row block the consumer holds (`_mma`: the ring slots it reads last are freed once every block's is done), the
rest register ops (`ws_regs`; index math once, shared by the blocks). The loop runs as written (`_plain_loop`: each
wgmma waited for where it is issued), chained (`_chained_loop`: a loop that only accumulates keeps each step's
groups in flight across the back edge) or rotated by one step (`_rotated_loop`, ws_overlap: each wgmma waited for
at its result's first use, so the next step's leading wgmmas run under this step's tail).
"""
from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, SSAValue

from tessera.ir.fragment_ops import AsyncCopyOp, FragmentMmaOp, FragmentPackOp, ViewOp, WaitOp
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir import wgreg_ops as W
from tessera.target.nvidia.passes.ws_common import WG_ROWS, binop, is_scalar, index_const, refuse
from tessera.target.nvidia.passes.ws_match import Mma, Staged
from tessera.target.nvidia.passes.ws_overlap import InFlight, Rotation
from tessera.target.nvidia.passes.ws_regs import Regs, lower_all
from tessera.target.nvidia.passes.ws_units import K_RANGE
from tessera.target.nvidia.passes.ws_walk import ring_slot


class StepLoops:
    """BodyBuilder's consumer loop (see the module docstring); it provides `body_`, `stages`, `lag`, `feeds`,
    `slot_now`, `arrive`, `_reach`, `_turns` and `_slot_bytes`."""

    def _early_fixed(self, rot: Rotation | None) -> list[Staged]:
        """Fixed operands that no mma of the rotated loop's final step (its last mma and tail) reads: their slot
        is free once the rotated loop ends, so the producer loads the next tile's (Q) under this tile's last
        mma and epilogue instead of after them."""
        if rot is None:
            return []
        final = {inner for top in [rot.last, *rot.tail] for inner in top.walk()}
        return [st for st in self.body_.fixed
                if not any(m.op in final and st in (m.a, m.b) for m in self.body_.mmas)]

    def _release(self, ops: list, fixed: list[Staged]) -> list[Operation]:
        """Every consumer thread frees the tile's slot of `fixed`."""
        ops += [H.MbarrierArriveOp(self.slot_now, st.empty, per="thread") for st in fixed]
        return ops

    def _step_block(self, rs: list[Regs]) -> tuple[Block, list, list[Operation], tuple[SSAValue, SSAValue]]:
        """The new loop's block (K index, step counter, then each block's carried values) with the source loop's
        arguments mapped onto it, the carried inits, the list its ops go in and this step's (ring slot, phase)."""
        loop = self.body_.loop
        n = len(loop.iter_args)
        inits = [regs.get(v) for regs in rs for v in loop.iter_args]
        block = Block(arg_types=[IndexType(), IndexType()] + [v.type for v in inits])
        for i, regs in enumerate(rs):
            regs.map[loop.body.block.args[0]] = block.args[0]
            for old, new in zip(loop.body.block.args[1:], block.args[2 + i * n:2 + (i + 1) * n]):
                regs.map[old] = new
        inner: list[Operation] = []
        return block, inits, inner, ring_slot(inner, block.args[1], self.stages)

    def _close_loop(self, rs: list[Regs], ops: list, block: Block, inner: list, inits: list, it: SSAValue,
                    bounds: tuple) -> scf.ForOp:
        """Yield the next step counter and each block's carried values, build the loop; map its results."""
        loop = self.body_.loop
        n = len(loop.iter_args)
        step_it = block.args[1]
        yld = loop.body.block.last_op
        inner.append(scf.YieldOp(binop(inner, arith.AddiOp, step_it, 1),
                                 *(regs.get(v) for regs in rs for v in yld.operands)))
        block.add_ops(inner)
        new_loop = scf.ForOp(*bounds, [it, *inits], block)
        ops.append(new_loop)
        for i, regs in enumerate(rs):
            for old, new in zip(loop.results, new_loop.results[1 + i * n:1 + (i + 1) * n]):
                regs.map[old] = new
        return new_loop

    def _plain_loop(self, rs: list[Regs], ops: list, it: SSAValue, mapping: dict, consumer: SSAValue) -> SSAValue:
        """The loop as written: each wgmma waited for where it is issued."""
        loop = self.body_.loop
        block, inits, inner, (stage, phase) = self._step_block(rs)
        *body_ops, _ = loop.body.block.ops
        self._step(rs, inner, body_ops, stage, phase, consumer, block.args[1], None)
        self._turns(inner, each=True)
        new_loop = self._close_loop(rs, ops, block, inner, inits, it,
                                    tuple(mapping.get(v, v) for v in (loop.lb, loop.ub, loop.step)))
        return new_loop.results[0]

    def _chained_loop(self, rs: list[Regs], ops: list, it: SSAValue, mapping: dict, consumer: SSAValue) -> SSAValue:
        """A loop whose wgmmas only accumulate (`accumulates_only`: a GEMM's K-loop, or several accumulators
        of one loop): step j issues its wgmmas (every block's) on the previous step's accumulators still in flight
        (wgmma chains on its own accumulator registers), then waits until only its own groups are pending, so step
        j-1's are done and their ring slots go back to the producer (none before a tile's first step). The tensor
        cores never wait for a K step's barrier round trip. A one-slot ring (stages = 1) is needed again by the
        next step: there each step waits for all its groups and frees its own slot. After the loop: wait for all,
        free the last step's slots."""
        loop = self.body_.loop
        block, inits, inner, (stage, phase) = self._step_block(rs)
        step_it = block.args[1]
        *body_ops, _ = loop.body.block.ops
        flight = InFlight(maps=[regs.map for regs in rs])
        self._step(rs, inner, body_ops, stage, phase, consumer, step_it, flight)
        self._turns(inner)
        # this step's groups stay in flight (lag); every earlier one is done
        frees = [f[1] for f in flight.keep(inner, len(flight.groups) * self.lag)]
        if self.lag:
            self._free_previous(inner, step_it, it, frees)
        else:
            inner += [self.arrive(stage, bar) for bar in frees]
        lb, ub, st_ = (mapping.get(v, v) for v in (loop.lb, loop.ub, loop.step))
        lb, ub = mapping.get(K_RANGE, (lb, ub))
        new_loop = self._close_loop(rs, ops, block, inner, inits, it, (lb, ub, st_))
        for regs in rs:
            for old in loop.results:
                drained = H.WgmmaWaitOp(regs.map[old], 0)
                ops.append(drained)
                regs.map[old] = drained.result
        if self.lag:
            self._free_previous(ops, new_loop.results[0], it, frees)
        return new_loop.results[0]

    def _free_previous(self, ops: list, step: SSAValue, first: SSAValue, bars: list[int]) -> None:
        """Arrive on `bars` (empty barriers) for slot (step - 1) % stages, unless `step` is the tile's `first`."""
        if not bars:
            return
        started = arith.CmpiOp(step, first, "ne")
        free: list[Operation] = []
        slot = binop(free, arith.RemSIOp, binop(free, arith.SubiOp, step, 1), self.stages)
        free += [self.arrive(slot, bar) for bar in bars]
        ops += [started, scf.IfOp(started, [], [*free, scf.YieldOp()])]

    def _rotated_loop(self, regs: Regs, ops: list, it: SSAValue, mapping: dict, consumer: SSAValue,
                      rot: Rotation, early: list[Staged] = (), pre: dict | None = None,
                      fixed_phase: SSAValue | None = None) -> SSAValue:
        """The loop rotated by one step (ws_overlap): head(0); {early(j+1), last mma(j), tail(j), rest(j+1)};
        last mma and tail of the final step; all inside `if lb < ub` (no step: the results are the inits).
        The `early` fixed operands are released where the rotated loop ends (every wgmma reading them is done:
        no group crosses its back edge), in either branch. With `pre` (tile overlap) step 0's early part ran
        before the tile (its results in `pre`); a tile with no step waits for its fixed operands (`phase`)
        before it frees them (`fixed_phase`)."""
        loop = self.body_.loop
        src = loop.body.block
        iv, args, yld = src.args[0], src.args[1:], src.last_op
        lb, ub, step = (mapping.get(v, v) for v in (loop.lb, loop.ub, loop.step))
        inits = [regs.get(v) for v in loop.iter_args]
        flight = InFlight()
        region: list[Operation] = []
        first = regs.fork()
        flight.maps = [first.map]
        first.map[iv] = lb
        first.map.update(zip(args, inits))
        stage, ring_phase = ring_slot(region, it, self.stages)
        if pre is None:
            self._step([first], region, rot.early + rot.rest, stage, ring_phase, consumer, it, flight)
        else:
            first.map.update(pre)
            self._step([first], region, rot.rest, stage, ring_phase, consumer, it, flight)
        flight.drain(region)
        live0 = [first.get(v) for v in rot.live]

        block = Block(arg_types=[IndexType(), IndexType()] + [v.type for v in live0])
        k, step_it = block.args[0], block.args[1]
        cur, nxt = regs.fork(), regs.fork()
        flight.maps = [cur.map, nxt.map]
        cur.map[iv] = k
        cur.map.update(zip(rot.live, block.args[2:]))
        inner: list[Operation] = []
        nxt.map[iv] = binop(inner, arith.AddiOp, k, step)
        it1 = binop(inner, arith.AddiOp, step_it, 1)
        for i, (a, y) in enumerate(zip(args, yld.operands)):
            if i not in rot.late:
                nxt.map[a] = cur.get(y)
        s_cur, p_cur = ring_slot(inner, step_it, self.stages)
        s_nxt, p_nxt = ring_slot(inner, it1, self.stages)
        self._step([nxt], inner, rot.early, s_nxt, p_nxt, consumer, it1, flight)
        self._step([cur], inner, [rot.last, *rot.tail], s_cur, p_cur, consumer, step_it, flight)
        for i in rot.late:
            nxt.map[args[i]] = cur.get(yld.operands[i])
        self._step([nxt], inner, rot.rest, s_nxt, p_nxt, consumer, it1, flight)
        flight.drain(inner)
        self._turns(inner)
        inner.append(scf.YieldOp(it1, *(nxt.get(v) for v in rot.live)))
        block.add_ops(inner)
        rotated = scf.ForOp(lb, binop(region, arith.SubiOp, ub, step), step, [it, *live0], block)
        region.append(rotated)
        self._release(region, list(early))

        end = regs.fork()
        flight.maps = [end.map]
        end.map.update(zip(rot.live, rotated.results[1:]))
        if rot.uses_iv:  # the final step's index: lb + ((ub - lb - 1) / step) * step
            span = binop(region, arith.SubiOp, binop(region, arith.SubiOp, ub, lb), 1)
            end.map[iv] = binop(region, arith.AddiOp, lb,
                                binop(region, arith.MuliOp, binop(region, arith.DivSIOp, span, step), step))
        it_last = rotated.results[0]
        stage, phase = ring_slot(region, it_last, self.stages)
        self._step([end], region, [rot.last, *rot.tail], stage, phase, consumer, it_last, flight)
        flight.drain(region)
        outs = [end.get(y) for y in yld.operands]
        region.append(scf.YieldOp(binop(region, arith.AddiOp, it_last, 1), *outs))
        any_step = arith.CmpiOp(lb, ub, "slt")
        no_step: list[Operation] = []
        if pre is not None:  # tile overlap: no head waited for this tile's fixed operands; wait before any frees them
            no_step += [H.MbarrierWaitOp(self.slot_now, fixed_phase, st.full) for st in self.body_.fixed]
        guarded = scf.IfOp(any_step, [IndexType(), *(v.type for v in inits)], region,
                           [*self._release(no_step, list(early)), scf.YieldOp(it, *inits)])
        ops += [any_step, guarded]
        for old, new in zip(loop.results, guarded.results[1:]):
            regs.map[old] = new
        return guarded.results[0]

    def _step(self, rs: list[Regs], ops: list, todo: list[Operation], stage: SSAValue, phase: SSAValue,
              consumer: SSAValue, step_it: SSAValue, flight: InFlight | None) -> None:
        """Ops of one loop step on each block's registers `rs`: copies become full-barrier waits, mmas wgmmas
        (waited at once, or at their first use through `flight`), the rest register ops."""
        bd = self.body_
        copies = {st.copy.token: st for st in bd.ring}
        staged = {st.alloc for st in bd.staged}
        mmas = {m.op: m for m in bd.mmas}
        for op in todo:
            if isinstance(op, (ViewOp, AsyncCopyOp)):
                continue
            if isinstance(op, WaitOp):
                for st in {copies[tok].full: copies[tok] for tok in op.tokens if tok in copies}.values():
                    if flight is not None and self.stages == 1:
                        # one slot: the step before this one still holds it until its wgmmas reading it are done
                        # (a rotated loop issues them after this step's early part), so retire those first
                        flight.retire(ops, st.empty)
                    ops.append(H.MbarrierWaitOp(stage, phase, st.full))
                continue
            if isinstance(op, FragmentPackOp) and op.source.owner in staged:
                continue
            if flight is not None and op in self.feeds:
                flight.drain(ops)
            out = [] if flight is not None else ops
            if isinstance(op, FragmentMmaOp):
                self._mma(rs, out, mmas[op], stage, consumer, flight)
            else:
                self._register_op(rs, out, op)
            if flight is not None:
                flight.settle(ops, out)

    def _register_op(self, rs: list[Regs], ops: list, op: Operation) -> None:
        """A tile op on each block's registers (index math once, shared); a register tile packed as a wgmma
        operand is the same registers."""
        first = rs[0]
        if len(rs) > 1 and is_scalar(op) and op not in first.deferred:
            first.lower(ops, op)
            for regs in rs[1:]:
                regs.map.update((r, first.map[r]) for r in op.results)
            return
        for regs in rs:
            if isinstance(op, FragmentPackOp):
                if any(not _is_zero(v) for v in op.offsets):
                    raise refuse(op, "a register tile packed at a nonzero offset: a wgmma operand from registers is "
                                     "the whole tile")
                if op.result.type.role.data == "b":
                    raise refuse(op, "a wgmma b operand from registers: wgmma reads B from shared memory")
                regs.map[op.result] = regs.get(op.source)
                continue
            lower_all(regs, ops, [op])

    def _mma(self, rs: list[Regs], ops: list, mm: Mma, stage: SSAValue, consumer: SSAValue,
             flight: InFlight | None = None) -> None:
        """One mma as a wgmma per block of `rs`, waited for (or left in `flight`, waited at its result's first
        use); the ring slots it is the last reader of are freed once every block's is done."""
        bd = self.body_
        b = mm.b
        b_stage = self._slot_bytes(b) if b.ring else 0
        b_rows = mm.n
        # one slot index addresses both operands; a fixed operand's stage_bytes is 0, so any index does
        at = stage if b.ring or (mm.a is not None and mm.a.ring) else index_const(ops, 0)
        issued = []
        for regs in rs:
            acc = regs.get(mm.op.acc)
            if mm.a is None:
                wg = W.WgmmaRsOp(acc, regs.get(mm.op.a), at, n=mm.n, k=mm.k, dtype=bd.dtype,
                                 b=(b.base, b_stage, b_rows), swizzle=bd.swizzle, b_major=b.major)
            else:
                a = mm.a
                own = not a.ring and a.slots > 1  # a double-buffered fixed A: its own slot beside B's ring stage
                a_stage = self._slot_bytes(a) if a.ring or own else 0
                wg_bytes = WG_ROWS * (bd.swizzle if a.major == "k" else 2 * mm.k)
                wg = H.WgmmaOp(acc, at, regs.block, n=mm.n, k=mm.k, dtype=bd.dtype,
                               a=(a.base, a_stage, bd.bm, wg_bytes), b=(b.base, b_stage, b_rows),
                               swizzle=bd.swizzle, a_major=a.major, b_major=b.major,
                               a_slot=self.slot_now if own else None)
            ops.append(wg)
            issued.append((regs, wg))
        for i, (regs, wg) in enumerate(issued):
            hold = wg.a if mm.a is None else None
            frees = mm.last_reader_of if i == len(issued) - 1 else []
            if flight is not None:
                regs.map[mm.op.result] = wg.result
                flight.issue(wg.result, [(stage, st.empty, self._reach(st.empty)) for st in frees], hold)
                continue
            done = H.WgmmaWaitOp(wg.result, 0, hold)
            ops.append(done)
            regs.map[mm.op.result] = done.result
            for st in frees:
                ops.append(self.arrive(stage, st.empty))


def _is_zero(v: SSAValue) -> bool:
    owner = getattr(v, "op", None)
    return isinstance(owner, arith.ConstantOp) and getattr(owner.value, "value", None) is not None and \
        owner.value.value.data == 0
