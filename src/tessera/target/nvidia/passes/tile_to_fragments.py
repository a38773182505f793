"""tile-to-fragments{arch=...}: logical `tile.mma` -> typed fragments staged through shared memory.

Lowering is op by op (DESIGN section 2): each `tile.mma` becomes
`view + async_copy -> wait -> fragment_pack x2 -> fragment_pack(acc) ->
fragment_mma -> fragment_unpack`, so every rewrite is local and the incoming
accumulator is always the value the mma read, never a synthesised zero
(DESIGN lesson 1). Small folds then remove the register round trips:

* `fragment_pack(fragment_unpack(f))` of the same type and warps -> `f`;
* an `scf.for` iter_arg whose yielded value is a `fragment_unpack` is
  retyped to the fragment (init packed, block argument, yield and result
  retyped, non-mma users fed by an unpack), so accumulators stay in
  fragments across iterations;
* `fragment_pack(tile.constant 0.0)` -> `fragment_zero`;
* `tile.store(fragment_unpack(f))` whose unpack has no other user ->
  `fragment_store`.

What `layout` means: the major-ness of the operand matrix in the tile it is
packed from. Tiles (smem or registers) are row-major arrays of their
logical shape, so A (m x k, k contiguous) and B (k x n, n contiguous) are
both "row"; "col" names a source holding the transpose: for wgmma, an operand
`tile.transpose(tile.load ...)` is staged as the load's tile (B as N x K,
K contiguous) with layout "col", since wgmma reads B only from smem. Target lowering picks ldmatrix / ldmatrix.trans (mma_sync) or
the wgmma descriptor's major-ness from it.

Staging: an operand produced directly by `tile.load` is staged through a
`tile.alloc` smem buffer hoisted before the outermost enclosing loop (view +
async_copy at the mma with the load's offsets and padding, one `tile.wait`
for the mma's copies, then the packs). A load from an enclosing block is
loop-invariant: it is copied, waited on and packed once, after the load.
Any other operand (e.g. after tile.convert or tile.transpose) is packed from
its register tile. The warp grid and fragment shape come from
`fragment_plan`. The accumulator is f32.

f32 inputs stay on CUDA cores: a `tile.mma` whose operands and accumulator
are all f32 (`on_cuda_cores`) is left as a tile-level op, untouched, for
lower-tile-to-nv to run as fp32 fma loops on register tiles (`nv.blocked_mma`).
Tensor cores would round f32 inputs to tf32 (10 mantissa bits, relative error
~1e-3), which an f32 GEMM must not do. Other mmas with no fragment (f16
accumulators, shapes the atom cannot tile) are refused with
TILE_FRAGMENT_UNSUPPORTED at the mma.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tessera.ir.fragment_ops import (
    AllocOp,
    AsyncCopyOp,
    FragmentMmaOp,
    FragmentPackOp,
    FragmentStoreOp,
    FragmentUnpackOp,
    FragmentZeroOp,
    ViewOp,
    WaitOp,
)
from tessera.ir.tile_ops import ConstantOp, LoadOp, MmaOp, StoreOp, TransposeOp
from tessera.ir.types import TileType, tile_type, type_name
from tessera.target.nvidia.passes.fragment_plan import FragmentPlan, family_for_arch, plan_mma, validate_warps
from tessera.passes.pipeline import register_pass


CUDA_CORE_TYPES = ("f32",)  # a tile.mma with these inputs and accumulator is exact fp32 fma, not tf32 fragments


def on_cuda_cores(op: MmaOp) -> bool:
    """True for a tile.mma that tile-to-fragments leaves alone: f32 operands and an f32 accumulator."""
    names = {type_name(v.type.element_type) for v in (op.a, op.b, op.acc)}  # type: ignore[attr-defined]
    return len(names) == 1 and names <= set(CUDA_CORE_TYPES)


def _at(where: Operation, *ops: Operation) -> None:
    """Give created ops the location of the op they stand for, so a later refusal names the tile program's line
    (the tile.dot, the operand's tile.load), not the enclosing loop."""
    for new in ops:
        new.location = where.location


def index_zero(op: Operation) -> SSAValue:
    """An `arith.constant 0 : index` that dominates `op`: reused from an enclosing block, else made at the top."""
    anc, entry = op, None
    while anc.parent is not None:
        block = anc.parent
        for prev in block.ops:
            if prev is anc:
                break
            if (isinstance(prev, arith.ConstantOp) and isinstance(prev.result.type, IndexType)
                    and isinstance(prev.value, IntegerAttr) and prev.value.value.data == 0):
                return prev.result
        entry = block
        if isinstance(block.parent_op(), (func.FuncOp, ModuleOp)):
            break
        anc = block.parent_op()
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    zero.result.name_hint = "c0"
    Rewriter.insert_op(zero, InsertPoint.at_start(entry))
    return zero.result


def hoist_point(op: Operation) -> InsertPoint:
    """Just before `op`'s outermost ancestor inside its function: buffers allocated there outlive every loop."""
    anc = op
    while (parent := anc.parent_op()) is not None and not isinstance(parent, (func.FuncOp, ModuleOp)):
        anc = parent
    return InsertPoint.before(anc)


@dataclass
class LowerMma(RewritePattern):
    """One `tile.mma` -> staged operands, fragment packs, `tile.fragment_mma` and an unpack of the result.

    An operand defined in an enclosing block (e.g. Q loaded before the K/V loop) is loop-invariant: it is
    staged, waited on and packed once, right after its definition, and the fragment is reused.
    """

    plans: dict[MmaOp, FragmentPlan]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MmaOp, rewriter: PatternRewriter) -> None:
        plan = self.plans.get(op)
        if plan is None:
            return
        packs: dict[str, FragmentPackOp] = {}
        local, tokens = [], []
        for value, role in ((op.a, "a"), (op.b, "b")):
            value, layout = self._operand(value, plan)
            owner = value.owner
            if isinstance(owner, Operation) and owner.parent is not op.parent:
                stage, src, token = self._stage(value, role, owner, rewriter)
                packs[role] = FragmentPackOp(src, [index_zero(owner)] * 2, plan.warps, plan.fragment(role, layout))
                waits = [WaitOp(token)] if token is not None else []
                _at(owner, packs[role], *waits)
                rewriter.insert([*stage, *waits, packs[role]], InsertPoint.after(owner))
            else:
                stage, src, token = self._stage(value, role, op, rewriter)
                rewriter.insert(stage)
                local.append((src, role, layout))
                tokens += [token] if token is not None else []
        if tokens:
            wait = WaitOp(*tokens)
            _at(op, wait)
            rewriter.insert(wait)
        zero = index_zero(op)
        for src, role, layout in local:
            packs[role] = FragmentPackOp(src, [zero, zero], plan.warps, plan.fragment(role, layout))
            _at(src.owner if isinstance(src.owner, Operation) and src.owner.location is not None else op, packs[role])
            rewriter.insert(packs[role])
        acc = FragmentPackOp(op.acc, [zero, zero], plan.warps, plan.fragment("acc"))
        for role, hint in (("a", "frag_a"), ("b", "frag_b")):
            packs[role].result.name_hint = hint
        acc.result.name_hint = "frag_acc"
        mma = FragmentMmaOp(packs["a"].result, packs["b"].result, acc.result)
        unpack = FragmentUnpackOp(mma.result, plan.warps, op.result.type)
        _at(op, acc, mma, unpack)
        rewriter.replace(op, [acc, mma, unpack], [unpack.result])
        for v in (op.a, op.b):
            if isinstance(v.owner, TransposeOp) and not v.uses:
                v, t = v.owner.source, v.owner
                rewriter.erase(t)
            if isinstance(v.owner, LoadOp) and not v.uses:
                rewriter.erase(v.owner)

    @staticmethod
    def _operand(value: SSAValue, plan: FragmentPlan) -> tuple[SSAValue, str]:
        """(value to stage, fragment layout): wgmma reads `transpose(load)` as the load's tile, layout "col".

        wgmma takes B only from shared memory, so a transposed operand cannot be
        packed from registers; the staged tile holds the operand's transpose.
        """
        t = value.owner
        if (plan.family == "wgmma" and isinstance(t, TransposeOp) and isinstance(t.source.owner, LoadOp)
                and t.source.owner.parent is t.parent):
            return t.source, "col"
        return value, "row"

    @staticmethod
    def _stage(value: SSAValue, role: str, anchor: Operation, rewriter: PatternRewriter):
        """(view + async_copy ops, tile to pack from, token) for an operand; a non-load is packed from registers."""
        load = value.owner
        if not isinstance(load, LoadOp):
            return [], value, None
        t: TileType = load.result.type  # type: ignore[assignment]
        buf = AllocOp(tile_type(t.get_shape(), t.element_type, "smem"))
        buf.result.name_hint = f"s{role}"
        rewriter.insert(buf, hoist_point(anchor))
        view = ViewOp(load.source, load.offsets, tile_type(t.get_shape(), t.element_type, "global"))
        view.result.name_hint = f"g{role}"
        copy = AsyncCopyOp(view.result, buf.result, load.padding.value.data)
        copy.token.name_hint = f"t{role}"
        _at(load, buf, view, copy)
        return [view, copy], buf.result, copy.token


def _zero_offsets(op: FragmentPackOp) -> bool:
    return all(isinstance(v.owner, arith.ConstantOp) and isinstance(v.owner.value, IntegerAttr)
               and v.owner.value.value.data == 0 for v in op.offsets)


class FoldPackOfUnpack(RewritePattern):
    """`fragment_pack(fragment_unpack(f))` at offset 0 with f's type and warps is `f` itself."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: FragmentPackOp, rewriter: PatternRewriter) -> None:
        unpack = op.source.owner
        if not (isinstance(unpack, FragmentUnpackOp) and unpack.source.type == op.result.type
                and unpack.warps == op.warps and _zero_offsets(op)):
            return
        rewriter.replace(op, [], [unpack.source])
        if not unpack.result.uses:
            rewriter.erase(unpack)


class ZeroFromConstant(RewritePattern):
    """`fragment_pack(tile.constant 0.0)` is `fragment_zero`: the one place a zero accumulator may appear."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: FragmentPackOp, rewriter: PatternRewriter) -> None:
        const = op.source.owner
        if not (isinstance(const, ConstantOp) and const.value.value.data == 0.0):
            return
        zero = FragmentZeroOp(op.result.type)  # type: ignore[arg-type]
        zero.result.name_hint = op.result.name_hint
        rewriter.replace(op, zero)
        if not const.result.uses:
            rewriter.erase(const)


class StoreFromUnpack(RewritePattern):
    """`tile.store(fragment_unpack(acc))`, the unpack's only use, -> `fragment_store`: each warp writes its part."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: StoreOp, rewriter: PatternRewriter) -> None:
        unpack = op.value.owner
        if not (isinstance(unpack, FragmentUnpackOp) and unpack.source.type.role.data == "acc"
                and unpack.result.has_one_use()):
            return
        rewriter.replace(op, FragmentStoreOp(unpack.source, op.dest, op.offsets, unpack.warps))
        rewriter.erase(unpack)


def _unpack_users(value: SSAValue, warps, tile_t: TileType, at: InsertPoint) -> None:
    """Give the non-fragment users of a (just retyped) fragment value a register tile via one unpack."""
    if not value.uses:
        return
    unpack = FragmentUnpackOp(value, warps, tile_t)
    if isinstance(value.owner, Operation):
        _at(value.owner, unpack)
    Rewriter.insert_op(unpack, at)
    value.replace_uses_with_if(unpack.result, lambda use: use.operation is not unpack)


class CarryFragments(RewritePattern):
    """Retype an scf.for iter_arg to the fragment its yielded unpack came from (DESIGN section 8).

    The accumulator is threaded: the init is packed from the incoming value
    (a zero constant folds to fragment_zero later), never replaced.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        block = op.body.block
        yield_op = block.last_op
        if not isinstance(yield_op, scf.YieldOp):
            return
        for i, y in enumerate(yield_op.operands):
            unpack = y.owner
            arg = block.args[i + 1]
            if not (isinstance(unpack, FragmentUnpackOp) and isinstance(arg.type, TileType)):
                continue
            frag, warps, tile_t = unpack.source.type, unpack.warps, arg.type
            init = FragmentPackOp(op.iter_args[i], [index_zero(op)] * 2, warps, frag)
            init.result.name_hint = "acc_init"
            owner = op.iter_args[i].owner
            _at(owner if isinstance(owner, Operation) and owner.location is not None else op, init)
            rewriter.insert(init, InsertPoint.before(op))
            op.operands[3 + i] = init.result
            yield_op.operands[i] = unpack.source
            if not unpack.result.uses:
                rewriter.erase(unpack)
            new_arg = rewriter.replace_value_with_new_type(arg, frag)
            _unpack_users(new_arg, warps, tile_t, InsertPoint.at_start(block))
            new_res = rewriter.replace_value_with_new_type(op.results[i], frag)
            _unpack_users(new_res, warps, tile_t, InsertPoint.after(op))
            return


@register_pass
@dataclass(frozen=True)
class TileToFragments(ModulePass):
    """Lower Tile IR mma to Fragment IR for `arch` (required: sm_80, sm_86, sm_89, sm_90, sm_90a).

    An all-f32 mma is left as it is (`on_cuda_cores`): lower-tile-to-nv runs it as fp32 fma loops.

    Options:
        arch: the target; sm_8x/sm_90 use family mma_sync (m16n8k16), sm_90a wgmma (m64nNk16).
        warps: `warps=WM,WN` overrides the warp grid (warpgroup grid for wgmma) of every mma.
    """

    name = "tile-to-fragments"

    arch: str
    warps: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        family_for_arch(self.name, self.arch)
        validate_warps(self.name, self.warps)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        family = family_for_arch(self.name, self.arch)
        plans = {mma: plan_mma(mma, family, self.warps) for mma in op.walk()
                 if isinstance(mma, MmaOp) and not on_cuda_cores(mma)}
        if not plans:
            return  # nothing to lower: leave the module byte-identical (DESIGN lesson 6)
        lower = PatternRewriteWalker(GreedyRewritePatternApplier([LowerMma(plans)], dce_enabled=False),
                                     apply_recursively=False)
        lower.rewrite_module(op)
        fold = PatternRewriteWalker(GreedyRewritePatternApplier(
            [CarryFragments(), FoldPackOfUnpack(), ZeroFromConstant(), StoreFromUnpack()], dce_enabled=False))
        fold.rewrite_module(op)

