"""warp-specialize's dynamic tile scheduler (tiles=dynamic): a CTA's next tile comes from a launch-wide counter.

The static persistent walk gives CTA c the units c, c + P, c + 2P, ... Where units cost different amounts
(causal attention: query block i runs i + 1 key steps) the CTAs' totals differ by up to a tile's cost in every
wave; the last CTA to finish sets the kernel's time. Here each CTA runs its block index first and then whatever
`nv.tile_fetch` hands it (`ir/sched_ops.py`), so the CTAs that drew short tiles take more of them.

Only the producer's thread 0 fetches: as it starts unit n it fetches unit n + 1 and puts its number into word
n % RING of a ring in shared memory (wait `empty`, `nv.smem_put`, arrive `full`); each consumer thread reads
word n % RING once it has finished unit n (wait `full`, `nv.smem_get`, arrive `empty`). So the fetch's latency
hides under the producer's loads, and the consumers walk the producer's sequence exactly. Both roles loop with
scf.while while the unit is below the count; every role's loop carries its ordinal n (the shared-memory slots
of a tile's fixed operands go by it). Any loop body takes it: the ring, the barriers and the counter know
nothing of what a unit computes.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, SSAValue

from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir.sched_ops import SmemGetOp, SmemPutOp, TileFetchOp
from tessera.target.nvidia.passes.ws_common import binop, cmpi, index_const

from tessera.target.nvidia.knobs import TILES  # noqa: E402
RING = 4  # words of the producer -> consumer hand-over: the producer may run this many units ahead


class DynamicTiles:
    """The ring's place in shared memory and the loops of both roles (see the module docstring)."""

    BYTES = 4 * RING + 2 * 8 * RING  # the words, then the full and the empty barriers

    def __init__(self, base: int, consumer_threads: int):
        self.words = base
        self.full = base + 4 * RING
        self.empty = self.full + 8 * RING
        self.consumer_threads = consumer_threads

    @classmethod
    def place(cls, total: int, consumer_threads: int) -> "DynamicTiles":
        """The ring after `total` bytes of shared memory (8-byte aligned for the barriers)."""
        return cls(-(-total // 16) * 16, consumer_threads)

    @property
    def end(self) -> int:
        return self.words + self.BYTES

    def init(self) -> list[Operation]:
        return [H.MbarrierInitOp(self.full, RING, 1), H.MbarrierInitOp(self.empty, RING, self.consumer_threads)]

    def _slot(self, ops: list, n: SSAValue) -> tuple[SSAValue, SSAValue]:
        return (binop(ops, arith.RemSIOp, n, RING),
                binop(ops, arith.RemSIOp, binop(ops, arith.DivSIOp, n, RING), 2))

    def publish(self, ops: list, value: SSAValue, n: SSAValue) -> None:
        """Producer (one thread): the unit after unit n is `value`."""
        slot, phase = self._slot(ops, n)
        free = binop(ops, arith.SubiOp, index_const(ops, 1), phase)
        ops += [H.MbarrierWaitOp(slot, free, self.empty), SmemPutOp(value, slot, self.words),
                H.MbarrierArriveOp(slot, self.full, per="thread")]

    def receive(self, ops: list, n: SSAValue) -> SSAValue:
        """Consumer (every thread): the unit after unit n."""
        slot, phase = self._slot(ops, n)
        get = SmemGetOp(slot, self.words)
        ops += [H.MbarrierWaitOp(slot, phase, self.full), get, H.MbarrierArriveOp(slot, self.empty, per="thread")]
        return get.result

    def walk(self, ops: list, role: str, first: SSAValue, total: SSAValue, ctas: SSAValue, inits: list[SSAValue],
             body: Callable[[list, SSAValue, SSAValue, list], tuple[list, SSAValue | None]]) -> list[SSAValue]:
        """`while unit < total` from `first` with ordinal 0 and `inits`; `body(ops, unit, n, carried)` returns
        (the carried values for the next unit, the next unit or None: the producer fetches, a consumer receives
        it after the body). The loop's results: the carried values at exit."""
        types = [IndexType(), IndexType(), *(v.type for v in inits)]
        before = Block(arg_types=types)
        test: list[Operation] = []
        go = cmpi(test, before.args[0], total, "slt")
        before.add_ops([*test, scf.ConditionOp(go, *before.args)])
        after = Block(arg_types=types)
        t, n, *carried = after.args
        inner: list[Operation] = []
        nxt = None
        if role == "producer":
            fetch = TileFetchOp(total, ctas)
            inner.append(fetch)
            nxt = fetch.result
            self.publish(inner, nxt, n)
        outs, given = body(inner, t, n, list(carried))
        if nxt is None:
            nxt = given if given is not None else self.receive(inner, n)
        inner.append(scf.YieldOp(nxt, binop(inner, arith.AddiOp, n, 1), *outs))
        after.add_ops(inner)
        loop = scf.WhileOp([first, index_const(ops, 0), *inits], types, [before], [after])
        ops.append(loop)
        return list(loop.results[2:])
