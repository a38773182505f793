"""Overlap inside a consumer warpgroup: wgmma results waited for at their first use, and the loop rotated by one
step so the next step's leading wgmmas are in flight while this step's tail runs (FlashAttention-3, 3.2).

Two pieces, both independent of what the loop computes:

* `InFlight`: the wgmma groups a consumer issued and has not waited for, oldest first. A lowered op that reads
  a result still in flight first waits with `wgmma.wait_group N`, N the number of groups issued after it (groups
  finish in order, so the older ones are done too); each finished group frees the ring slots whose last
  reader it was. `drain` waits for all, so no group crosses a loop back edge.
* `plan_rotation(loop)`: a loop body `P; M; Q` (M its last mma) runs as `P(0)`, then for each step j but the
  last `early(j+1); M(j); Q(j); rest(j+1)`, then `M(last); Q(last)`, where `early` are the ops of P up to its last
  mma that read nothing (even indirectly) the previous step's M or Q produced, moved ahead of the ops that do
  (a body with stores keeps program order: then `early` is a prefix). For attention: S(j+1) = Q K(j+1)^T
  is issued, then O += P(j) V(j), and the softmax of step j+1 runs while O's wgmma is on the tensor cores (its
  wait sits at the rescale, O's first use). `live` are the values P defines that M, Q or the yield read: the
  rotated loop carries them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from tessera.ir import tile_ops as T
from tessera.ir.fragment_ops import (AllocOp, AsyncCopyOp, FragmentMmaOp, FragmentPackOp, FragmentStoreOp,
                                     FragmentUnpackOp, ViewOp)
from tessera.target.nvidia.ir import hopper_ops as H


@dataclass
class Group:
    value: SSAValue  # the issued wgmma's (not yet readable) result
    frees: list  # (stage, empty barrier, cluster or None) to arrive on once it is done
    hold: SSAValue | None = None  # an RS wgmma's A registers, read by the hardware until the group is done


@dataclass
class InFlight:
    """Issued, unwaited wgmma groups of one consumer, and the register maps that may name their results."""

    groups: list[Group] = field(default_factory=list)
    maps: list[dict] = field(default_factory=list)

    def issue(self, value: SSAValue, frees: list, hold: SSAValue | None = None) -> None:
        self.groups.append(Group(value, frees, hold))

    def settle(self, ops: list, new_ops: list[Operation]) -> None:
        """Append `new_ops` (one source op's lowering), each preceded by the waits for what it reads in flight.
        Ops that only rename registers lower to nothing, so they wait for nothing."""
        for op in new_ops:
            for inner in op.walk():
                for v in inner.operands:
                    self.need(ops, v)
            ops.append(op)

    def need(self, ops: list, value: SSAValue) -> None:
        at = next((i for i, g in enumerate(self.groups) if g.value is value), None)
        if at is not None:
            self._wait(ops, at)

    def retire(self, ops: list, bar: int) -> None:
        """Wait for every group (and the older ones) that frees a slot of the ring barrier `bar` on completion."""
        at = [i for i, g in enumerate(self.groups) if any(f[1] == bar for f in g.frees)]
        if at:
            self._wait(ops, at[-1])

    def drain(self, ops: list) -> None:
        if self.groups:
            self._wait(ops, len(self.groups) - 1)

    def keep(self, ops: list, pending: int) -> list:
        """Wait for every group with `pending` groups left in flight (a loop that carries its own groups across
        its back edge: `pending` is how many it issued per step, or 0) and forget them; their frees, not done here
        (the slots go back a step later)."""
        frees = [f for g in self.groups for f in g.frees]
        for g in self.groups:
            self._waited(ops, g, pending)
        self.groups = []
        return frees

    def _wait(self, ops: list, at: int) -> None:
        pending = len(self.groups) - at - 1
        done, self.groups = self.groups[:at + 1], self.groups[at + 1:]
        for g in done:
            self._waited(ops, g, pending)
            for stage, bar, cluster in g.frees:
                ops.append(H.MbarrierArriveOp(stage, bar, cluster=cluster))

    def _waited(self, ops: list, g: Group, pending: int) -> None:
        """`wgmma.wait_group pending` for `g`; its result's users and the maps now name the waited value."""
        wait = H.WgmmaWaitOp(g.value, pending, g.hold)
        ops.append(wait)
        g.value.replace_uses_with_if(wait.result, lambda use, w=wait: use.operation is not w)
        for m in self.maps:
            for k, v in m.items():
                if v is g.value:
                    m[k] = wait.result


@dataclass
class Rotation:
    """A loop body split for rotation (see the module docstring)."""

    early: list[Operation]
    rest: list[Operation]
    last: FragmentMmaOp
    tail: list[Operation]
    live: list[SSAValue]
    late: list[int]  # iter-arg positions whose next value M or Q produces
    uses_iv: bool  # M or Q reads the induction variable


def wgmma_inputs(mmas: list[FragmentMmaOp]) -> set[Operation]:
    """The ops that compute an mma's register inputs (its accumulator, a register A), looking through packs
    and unpacks, which only rename registers. ptxas serialises every wgmma of a kernel when a register that
    feeds a wgmma is written while another wgmma group is in flight, so these run with none in flight
    (FlashAttention-3 converts P and rescales O after its wait for the same reason)."""
    found = set()
    for m in mmas:
        for v in (m.acc, m.a):
            owner = getattr(v, "op", None)
            while isinstance(owner, (FragmentPackOp, FragmentUnpackOp)):
                owner = getattr(owner.source, "op", None)
            if owner is not None and not isinstance(owner, AllocOp):
                found.add(owner)
    return found


def _unlowered(v: SSAValue) -> bool:
    """Values that have no register form: shared tiles, their views, copies and packs of them."""
    owner = getattr(v, "op", None)
    if isinstance(owner, (AllocOp, ViewOp, AsyncCopyOp)):
        return True
    return isinstance(owner, FragmentPackOp) and isinstance(getattr(owner.source, "op", None), AllocOp)


def plan_rotation(loop: scf.ForOp) -> Rotation | None:
    """The split of `loop`'s body, or None when rotating would overlap nothing (no mma before the last one can
    be issued ahead of it)."""
    block = loop.body.block
    ops = list(block.ops)
    yld = ops.pop()
    at = [i for i, op in enumerate(ops) if isinstance(op, FragmentMmaOp)]
    if len(at) < 2:
        return None
    head, last, tail = ops[:at[-1]], ops[at[-1]], ops[at[-1] + 1:]
    made = {r for op in [last, *tail] for inner in op.walk() for r in inner.results}
    late = [i for i, v in enumerate(yld.operands) if v in made]
    tainted = {block.args[1 + i] for i in late}
    marks = []
    for op in head:  # transitively reads the previous step's M or Q
        hit = any(v in tainted for inner in op.walk() for v in inner.operands)
        if hit:
            tainted.update(r for inner in op.walk() for r in inner.results)
        marks.append(hit)
    if any(isinstance(op, (T.StoreOp, T.MaskedStoreOp, T.AtomicAddOp, FragmentStoreOp)) for op in head):  # stores keep their order: a prefix
        marks = [any(marks[:i + 1]) for i in range(len(marks))]
    mmas = [i for i, op in enumerate(head) if isinstance(op, FragmentMmaOp) and not marks[i]]
    if not mmas:
        return None
    early = [op for i, op in enumerate(head[:mmas[-1] + 1]) if not marks[i]]
    ahead = {id(op) for op in early}
    rest = [op for op in head if id(op) not in ahead]
    defined = {r for op in head for inner in op.walk() for r in inner.results} | set(block.args[1:])
    live: list[SSAValue] = []
    for op in [last, *tail, yld]:
        for inner in op.walk():
            for v in inner.operands:
                if v in defined and v not in live and not _unlowered(v):
                    live.append(v)
    uses_iv = any(v is block.args[0] for op in [last, *tail] for inner in op.walk() for v in inner.operands)
    return Rotation(early, rest, last, tail, live, late, uses_iv)
