"""Remove the barriers that separate no conflicting shared-memory accesses.

The op lowerings are simple and safe: a barrier before every write into a
shared buffer (another warp may still read it) and one between a write and
the reads that depend on it. Many of those separate nothing: two cp.async
copies into different buffers, or the first copy of the kernel. A barrier
is kept only if an access since the last kept barrier and an access before
the next barrier touch buffers that may alias, and at least one of the two
writes.

Aliasing is judged from the buffer value: two `nv.alloc_shared` results
alias when their byte ranges overlap (every scratch use shares one range);
a block argument (a rotating pipeline buffer) may be any buffer of its
type. An op with regions (an inner loop) counts as touching everything, and
so does the start of a loop body (the previous iteration). The emulator's
race check (`tessera.target.nvidia.emulate.nv_ir`) tests this reasoning on real runs.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import Rewriter

from tessera.target.nvidia.ir.ops import AllocSharedOp, BarrierOp, SmemType
from tessera.target.nvidia.ir.types import elem_bytes

EVERYTHING = ("*", None)


def _rotating_args(loop: scf.ForOp) -> dict[SSAValue, int]:
    """Shared-buffer iter_args that are provably distinct buffers in every iteration -> their group id.

    True when their init values are distinct allocations and the loop yields
    a permutation of them (pipeline-smem's rotating stage buffers).
    """
    body = loop.body.block
    args = [a for a in body.args[1:] if isinstance(a.type, SmemType)]
    inits = [loop.iter_args[a.index - 1] for a in args]
    yielded = body.last_op.operands if isinstance(body.last_op, scf.YieldOp) else ()
    outs = [yielded[a.index - 1] for a in args] if len(yielded) == len(loop.iter_args) else []
    ranges = [_buffer(v) for v in inits]
    distinct = all(r[0] == "range" for r in ranges) and not any(
        _may_alias(x, y) for i, x in enumerate(ranges) for y in ranges[i + 1:])
    if not distinct or sorted(id(v) for v in outs) != sorted(id(a) for a in args):
        return {}
    return {a: id(loop) for a in args}


def _buffer(value: SSAValue, rotating: dict[SSAValue, int] | None = None):
    owner = value.owner
    t = value.type
    if isinstance(owner, AllocSharedOp):

        start = owner.offset.value.data
        return ("range", (start, start + t.extent() * elem_bytes(t.element_type)), t)
    if rotating and value in rotating:
        return ("arg", (rotating[value], value), t)
    return ("type", None, t)


def _may_alias(x, y) -> bool:
    if x is None or y is None:
        return True
    if x[0] == y[0] == "range":
        return x[1][0] < y[1][1] and y[1][0] < x[1][1]
    if x[0] == y[0] == "arg" and x[1][0] == y[1][0]:
        return x[1][1] is y[1][1]  # distinct buffers of one rotation never alias
    return x[2] == y[2]  # otherwise a block argument may hold any buffer of its type


def _conflict(before: list, after: list) -> bool:
    for kb, bb in before:
        for ka, ba in after:
            if "*" in (kb, ka) or ("write" in (kb, ka) and _may_alias(bb, ba)):
                return True
    return False


def drop_redundant_barriers(block: Block, entry: bool, rotating: dict[SSAValue, int] | None = None
                            ) -> tuple[list, list]:
    """Apply the rule above to `block` (inner blocks first); return its (prefix, suffix) accesses.

    The prefix is what the block does before its first kept barrier, the
    suffix what it does after its last one: what an enclosing block sees of
    a loop at its start and at its end.
    """
    rotating = {} if rotating is None else rotating

    def _own(op: Operation) -> list:
        kind = getattr(op, "SMEM", "")
        return [(kind, _buffer(v, rotating)) for v in op.operands if isinstance(v.type, SmemType)] if kind else []

    ops = list(block.ops)
    head: dict[Operation, list] = {}
    tail: dict[Operation, list] = {}
    for op in ops:
        if isinstance(op, scf.ForOp):
            rotating.update(_rotating_args(op))
            head[op], tail[op] = drop_redundant_barriers(op.body.block, False, rotating)
        elif op.regions:
            for region in op.regions:
                for inner in region.blocks:
                    drop_redundant_barriers(inner, False, rotating)
            head[op] = tail[op] = [EVERYTHING]

    def seen_after(o):  # accesses of o as seen by what precedes it
        return head.get(o, _own(o))

    def seen_before(o):  # accesses of o as seen by what follows it
        return tail.get(o, _own(o))

    barriers = [i for i, op in enumerate(ops) if isinstance(op, BarrierOp)]
    before = [] if entry else [EVERYTHING]
    last, kept = 0, []
    for n, i in enumerate(barriers):
        before += [a for op in ops[last:i] for a in seen_before(op)]
        end = barriers[n + 1] if n + 1 < len(barriers) else len(ops)
        after = [a for op in ops[i + 1:end] for a in seen_after(op)]
        if end == len(ops) and not entry:  # a loop body: the next iteration runs up to its first kept barrier
            after += [a for op in ops[:kept[0] if kept else i] for a in seen_after(op)]
        if _conflict(before, after):
            before = []
            kept.append(i)
        else:
            Rewriter.erase_op(ops[i])
        last = i + 1
    if not kept:
        every = [a for op in ops for a in seen_after(op) + seen_before(op)]
        return every, every
    prefix = [a for op in ops[:kept[0]] for a in seen_after(op)]
    suffix = [a for op in ops[kept[-1] + 1:] for a in seen_before(op)]
    return prefix, suffix
