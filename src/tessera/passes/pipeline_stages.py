"""pipeline-smem{stages=N}: N-stage software pipelining of the shared-memory copies of K-loops.

Input (what tile-to-fragments makes): an `scf.for` whose body async-copies
views of global memory into `tile.alloc` buffers allocated outside the loop,
waits on the copies, and packs fragments from the buffers:

    for k: %g = tile.view %A[.., k]; %t = tile.async_copy %g, %s; tile.wait %t; fragment_pack %s ...

Output: each buffer gets N copies (N separate allocs) that rotate through
loop-carried values, so no buffer index is computed at run time:

    prologue:   copies for iterations 0 .. N-2 into buffers 0 .. N-2
    for k, iter_args(.., %s_s0 .. %s_s{N-1}, %t_s0 .. %t_s{N-2}):
        tile.wait %t_s0                      (the copy of iteration k; the oldest in flight)
        %t_new = copy for k + (N-1)*step into %s_s{N-1}
        fragment_pack %s_s0 ...
        yield .., %s_s1 .. %s_s{N-1}, %s_s0, %t_s1 .. %t_s{N-2}, %t_new
    epilogue:   tile.wait on the tokens still in flight

The new copy goes into the buffer that iteration k-1 read, and is issued
after the wait, which also synchronises the CTA, so every warp is done with
that buffer (no write-after-read race). Copies for iterations past the end of
the loop are issued too: views are bounds-checked (padding past the memref
edge), the data is never read, and the epilogue drains them.

The view offsets of a copy may depend only on the induction variable and on
loop-invariant values through pure ops (they are re-computed for k+N-1 and
for the prologue). A loop that copies but does not fit this shape gets
TILE_PIPELINE_UNSUPPORTED naming why; it is never pipelined partially.
stages=1 returns at once: the module stays byte-identical (DESIGN lesson 6).
Loops feeding wgmma fragments (sm_90a) are skipped: `warp-specialize` gives
them a TMA + mbarrier pipeline of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import Pure

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import AllocOp, AsyncCopyOp, FragmentPackOp, WaitOp
from tessera.ir.types import async_token
from tessera.passes.pipeline import register_pass

MAX_STAGES = 12  # one `stages` knob feeds this pass and the sm_90a ring: the same bound (target.nvidia.knobs)


@dataclass
class StagedCopy:
    """One async copy of the loop body, its wait, its buffer and the body ops its source view needs."""

    copy: AsyncCopyOp
    wait: WaitOp
    buffer: AllocOp
    slice: list[Operation]


def _top_level(op: Operation, block: Block) -> Operation | None:
    while op is not None and op.parent is not block:
        op = op.parent_op()
    return op


def analyse(loop: scf.ForOp, stages: int) -> list[StagedCopy]:
    """The copies to pipeline in `loop` ([] when it copies nothing), or TILE_PIPELINE_UNSUPPORTED."""
    body = loop.body.block
    copies = [op for op in body.ops if isinstance(op, AsyncCopyOp)]
    if not copies:
        return []

    def refuse(reason: str, at: Operation) -> D.TesseraError:
        return D.TesseraError(D.TILE_PIPELINE_UNSUPPORTED,
                              f"pipeline-smem{{stages={stages}}}: cannot pipeline the scf.for at "
                              f"{D.op_location(loop)}: {reason}", op=at)

    if not isinstance(body.args[0].type, IndexType):
        raise refuse(f"its induction variable is {body.args[0].type}, not index", loop)
    order = {op: i for i, op in enumerate(body.ops)}
    copy_tokens = {c.token for c in copies}
    staged = []
    for copy in copies:
        if isinstance(copy.dest, BlockArgument) and copy.dest.block is body:
            raise refuse("the copy's destination is a loop-carried buffer (is the loop pipelined already?)", copy)
        uses = list(copy.token.uses)
        wait = uses[0].operation if len(uses) == 1 else None
        if not isinstance(wait, WaitOp) or wait.parent is not body:
            raise refuse("the token of this tile.async_copy is not consumed by exactly one tile.wait "
                         "at the top level of the loop body", copy)
        if any(t not in copy_tokens for t in wait.tokens):
            raise refuse("this tile.wait also waits on copies issued outside the loop body", wait)
        buf = copy.dest.owner
        if not isinstance(buf, AllocOp) or loop.is_ancestor(buf):
            raise refuse("the copy's destination is not a tile.alloc buffer allocated before the loop", copy)
        for use in buf.result.uses:
            user = use.operation
            if user is copy:
                continue
            if not isinstance(user, FragmentPackOp) or not loop.is_ancestor(user):
                raise refuse(f"buffer {buf.result.type} is also used by {user.name} at {D.op_location(user)}; "
                             "a pipelined buffer may only be filled by one copy and read by fragment_pack "
                             "in this loop", copy)
            if order[_top_level(user, body)] < order[wait]:
                raise refuse(f"buffer {buf.result.type} is read before the tile.wait on its copy", user)
        staged.append(StagedCopy(copy, wait, buf, _source_slice(loop, copy, refuse)))
    return staged


def _source_slice(loop: scf.ForOp, copy: AsyncCopyOp, refuse) -> list[Operation]:
    """Body ops the copy's source depends on; they may read only the induction variable and invariants."""
    body = loop.body.block
    iv = body.args[0]
    found: set[Operation] = set()
    stack: list[SSAValue] = [copy.source]
    while stack:
        value = stack.pop()
        if isinstance(value, BlockArgument):
            if value is iv or not loop.is_ancestor(value.block):
                continue
            raise refuse("the copy's source depends on a loop-carried value; only the induction variable "
                         "and loop invariants can be re-computed for later iterations", copy)
        owner = value.owner
        if not loop.is_ancestor(owner) or owner in found:
            continue
        if owner.parent is not body or owner.regions or not owner.has_trait(Pure):
            raise refuse(f"the copy's source depends on {owner.name} at {D.op_location(owner)}, "
                         "which is not a pure op at the top level of the loop body", copy)
        found.add(owner)
        stack.extend(owner.operands)
    order = {op: i for i, op in enumerate(body.ops)}
    return sorted(found, key=order.__getitem__)


def _index_const(value: int, at: InsertPoint) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    c.result.name_hint = f"c{value}"
    Rewriter.insert_op(c, at)
    return c.result


def _iteration(iv: SSAValue, step: SSAValue, distance: int, at: InsertPoint, invariant_at: InsertPoint,
               hint: str) -> SSAValue:
    """iv + distance * step (the multiplier is computed at `invariant_at`, before the loop)."""
    if distance == 0:
        return iv
    if distance > 1:
        mul = arith.MuliOp(step, _index_const(distance, invariant_at))
        Rewriter.insert_op(mul, invariant_at)
        step = mul.result
    add = arith.AddiOp(iv, step)
    add.result.name_hint = hint
    Rewriter.insert_op(add, at)
    return add.result


def _issue(copies: list[StagedCopy], iv: SSAValue, k: SSAValue, dests: list[SSAValue],
           at: InsertPoint) -> list[SSAValue]:
    """Clone the copies' source slices with iv -> k and issue the copies into `dests`; return their tokens."""
    mapping: dict[SSAValue, SSAValue] = {iv: k}
    ops = {op: None for c in copies for op in c.slice}  # ordered union (slices are in body order)
    order = {op: i for i, op in enumerate(copies[0].copy.parent.ops)}
    for op in sorted(ops, key=order.__getitem__):
        Rewriter.insert_op(op.clone(value_mapper=mapping), at)
    tokens = []
    for c, dest in zip(copies, dests):
        new = AsyncCopyOp(mapping.get(c.copy.source, c.copy.source), dest, c.copy.padding.value.data)
        new.token.name_hint = c.copy.token.name_hint
        Rewriter.insert_op(new, at)
        tokens.append(new.token)
    return tokens


def pipeline(loop: scf.ForOp, copies: list[StagedCopy], n: int) -> scf.ForOp:
    """Rewrite `loop` as described in the module docstring; returns the new loop."""
    body = loop.body.block
    iv, before = body.args[0], InsertPoint.before(loop)
    # N rotating buffers per copy: the original alloc and N-1 clones right after it.
    bufs = []
    for c in copies:
        extra = [AllocOp(c.buffer.result.type) for _ in range(n - 1)]
        for s, a in enumerate(extra, 1):
            a.result.name_hint = f"{c.buffer.result.name_hint or 's'}{s}"
        Rewriter.insert_op(extra, InsertPoint.after(c.buffer))
        bufs.append([c.buffer.result, *(a.result for a in extra)])
    # Prologue: iterations 0 .. N-2.
    in_flight = [[] for _ in copies]
    for s in range(n - 1):
        k = _iteration(loop.lb, loop.step, s, before, before, f"k{s}")
        for j, t in enumerate(_issue(copies, iv, k, [b[s] for b in bufs], before)):
            in_flight[j].append(t)
    # Loop-carried buffers and tokens.
    n_orig = len(loop.iter_args)
    buf_args, tok_args = [], []
    for j, c in enumerate(copies):
        hint = c.buffer.result.name_hint or "s"
        buf_args.append([body.insert_arg(c.buffer.result.type, len(body.args)) for _ in range(n)])
        for s, a in enumerate(buf_args[j]):
            a.name_hint = f"{hint}_s{s}"
    for j, c in enumerate(copies):
        tok_args.append([body.insert_arg(async_token, len(body.args)) for _ in range(n - 1)])
        for s, a in enumerate(tok_args[j]):
            a.name_hint = f"{c.copy.token.name_hint or 't'}_s{s}"
    # Steady state: wait for iteration k (stage 0), then issue iteration k+N-1 into the stage N-1 buffer.
    new_tokens = [None] * len(copies)
    for wait in dict.fromkeys(c.wait for c in copies):
        group = [j for j, c in enumerate(copies) if c.wait is wait]
        for j in group:
            idx = list(wait.tokens).index(copies[j].copy.token)
            wait.operands[idx] = tok_args[j][0]
        after = InsertPoint.after(wait)
        k_next = _iteration(iv, loop.step, n - 1, after, before, "k_next")
        after = InsertPoint.after(k_next.owner)
        issued = _issue([copies[j] for j in group], iv, k_next, [buf_args[j][n - 1] for j in group], after)
        for j, t in zip(group, issued):
            new_tokens[j] = t
    for j, c in enumerate(copies):
        c.buffer.result.replace_uses_with_if(buf_args[j][0], lambda use: loop.is_ancestor(use.operation))
    for c in copies:
        Rewriter.erase_op(c.copy)
    for c in copies:
        for op in reversed(c.slice):
            if op.parent is not None and not any(r.uses for r in op.results):
                Rewriter.erase_op(op)
    yield_op = body.last_op
    yield_op.operands = [*yield_op.operands,
                         *(a for b in buf_args for a in (*b[1:], b[0])),
                         *(x for j, t in enumerate(tok_args) for x in (*t[1:], new_tokens[j]))]
    inits = [*loop.iter_args, *(b for bs in bufs for b in bs), *(t for ts in in_flight for t in ts)]
    new_loop = scf.ForOp(loop.lb, loop.ub, loop.step, inits, loop.detach_region(loop.body))
    Rewriter.insert_op(new_loop, before)
    for old, new in zip(loop.results, new_loop.results[:n_orig]):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    Rewriter.erase_op(loop)
    # Epilogue: drain the copies still in flight (issued for iterations past the end).
    pending = new_loop.results[n_orig + n * len(copies):]
    for j, c in enumerate(copies):
        for s, token in enumerate(pending[j * (n - 1):(j + 1) * (n - 1)]):
            token.name_hint = f"{c.copy.token.name_hint or 't'}_pending{s}"
    Rewriter.insert_op(WaitOp(*pending), InsertPoint.after(new_loop))
    return new_loop


def _feeds_wgmma(loop: scf.ForOp) -> bool:
    """wgmma K-loops are left to warp-specialize, which pipelines them with TMA and mbarriers instead."""
    return any(isinstance(p, FragmentPackOp) and p.result.type.family.data == "wgmma" for p in loop.walk())


@register_pass
@dataclass(frozen=True)
class PipelineSmem(ModulePass):
    """Software-pipeline the shared-memory copies of K-loops over `stages` rotating buffers (1: no change)."""

    name = "pipeline-smem"

    stages: int

    def __post_init__(self) -> None:
        if not isinstance(self.stages, int) or isinstance(self.stages, bool) or not 1 <= self.stages <= MAX_STAGES:
            raise ValueError(f"pipeline-smem: stages={self.stages} must be an integer from 1 to {MAX_STAGES}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.stages == 1:
            return
        plans = [(loop, analyse(loop, self.stages)) for loop in op.walk()
                 if isinstance(loop, scf.ForOp) and not _feeds_wgmma(loop)]
        for loop, copies in plans:
            if copies:
                pipeline(loop, copies, self.stages)
