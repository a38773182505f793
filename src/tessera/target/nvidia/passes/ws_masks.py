"""Masks built from iotas that a whole tile passes at run time: one scalar test, and a branch around the mask.

A loop step of flash attention masks its scores with `where(cols <= rows, s, -inf)` (causal) or
`where(cols < S_k, s, -inf)` (a ragged last block); both are true for every element of most steps, yet
the select, its compares and the index vectors behind them cost ALU work per score on every step. When a
mask is a compare of two *affine index tiles* -- iotas, integer constants, splats of scalars, their sums and
differences and broadcasts -- each side's least and greatest element are scalars (an iota over a dim of L runs 0..L-1,
a splat s is s..s), so "every element passes" is a scalar compare of those bounds: `hi(cols) <= lo(rows)`
for `cols <= rows`. Masks joined with `&` (select(a, b, false)) pass when both do.

`plan_guards(block)` finds the selects of a block whose mask is such an expression (`Guard`: the select,
the mask's ops that nothing else reads, which move into the branch that still needs them). The consumer
lowering (ws_regs) then emits `scf.if all_pass { yield x } else { mask ops; select; yield }`. The test is
uniform over the tile (so over the warpgroup: no divergence), and conservative: the bounds are those of
the whole tile, never a wrong pass. Nothing here depends on attention: any mask of that form is guarded.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, IntegerAttr, IntegerType, i1, i32
from xdsl.ir import Block, Operation, SSAValue

from tessera.ir import tile_ops as T
from tessera.target.nvidia.passes.ws_common import binop, cmpi

# predicate -> how the bounds decide "every element passes": (side of lhs, side of rhs, arith.cmpi predicate)
_ALL_PASS = {"lt": ("hi", "lo", "slt"), "le": ("hi", "lo", "sle"), "gt": ("lo", "hi", "sgt"),
             "ge": ("lo", "hi", "sge")}


@dataclass
class Guard:
    select: T.SelectOp
    moved: list[Operation]  # the mask's own ops, in block order: lowered only where the mask is needed


def _affine(v: SSAValue) -> bool:
    """An i32 tile built from iotas, constants and splats by add, sub and broadcast."""
    op = getattr(v, "op", None)
    if not isinstance(getattr(v.type, "element_type", None), IntegerType) or v.type.element_type.width.data != 32:
        return False
    if isinstance(op, T.IotaOp | T.ConstantOp):
        return True
    if isinstance(op, T.SplatOp):
        return isinstance(op.scalar.type, IntegerType) and op.scalar.type.width.data == 32
    if isinstance(op, T.BroadcastOp):
        return _affine(op.source)
    if isinstance(op, (T.AddOp, T.SubOp)):
        return all(_affine(a) for a in op.args)
    return False


def _is_false(v: SSAValue) -> bool:
    op = getattr(v, "op", None)
    return isinstance(op, T.ConstantOp) and op.result.type.element_type == i1 and op.value.value.data == 0


def _passable(v: SSAValue) -> bool:
    """A mask whose "every element is true" is a scalar test: a compare of affine tiles, broadcasts and &s."""
    op = getattr(v, "op", None)
    if isinstance(op, T.CmpOp):
        return op.predicate.data in _ALL_PASS and _affine(op.lhs) and _affine(op.rhs)
    if isinstance(op, T.BroadcastOp):
        return _passable(op.source)
    if isinstance(op, T.SelectOp):  # a & b
        return _is_false(op.rhs) and _passable(op.cond) and _passable(op.lhs)
    return False


def _tile_ops(v: SSAValue, block: Block, into: list) -> None:
    """The tile ops of `block` that compute v (scalars stay where they are: the bounds read them)."""
    op = getattr(v, "op", None)
    if op is None or op.parent_block() is not block or op in into or not _is_tile_op(op):
        return
    for a in op.operands:
        _tile_ops(a, block, into)
    into.append(op)


def _is_tile_op(op: Operation) -> bool:
    return any(hasattr(r.type, "element_type") and hasattr(r.type, "get_shape") for r in op.results)


def plan_guards(block: Block) -> list[Guard]:
    """Each select of `block` on float tiles whose mask passes by a scalar test, with the mask ops only it reads."""
    guards = []
    for op in block.ops:
        if not isinstance(op, T.SelectOp) or not _is_float_tile(op.result) or not _passable(op.cond):
            continue
        slice_: list[Operation] = []
        _tile_ops(op.cond, block, slice_)
        movable: set[Operation] = set()
        for m in reversed(slice_):  # readers come after what they read: decide them first
            if all(u.operation is op or u.operation in movable for r in m.results for u in r.uses):
                movable.add(m)
        guards.append(Guard(op, [m for m in slice_ if m in movable]))
    return guards


def _is_float_tile(v: SSAValue) -> bool:
    return isinstance(getattr(v.type, "element_type", None), AnyFloat)


# --- the scalar test, on lowered scalars -----------------------------------------------------------------

def all_pass(ops: list, mask: SSAValue, scalar) -> SSAValue | None:
    """An i1 that is true only when every element of `mask` is true; `scalar(v)` gives the lowered form of a
    scalar of the tile IR (None where it has none: then no test, None)."""
    op = mask.op
    if isinstance(op, T.BroadcastOp):
        return all_pass(ops, op.source, scalar)
    if isinstance(op, T.SelectOp):
        a, b = all_pass(ops, op.cond, scalar), all_pass(ops, op.lhs, scalar)
        if a is None or b is None:
            return None
        return binop(ops, arith.AndIOp, a, b)
    lhs, rhs = _bounds(ops, op.lhs, scalar), _bounds(ops, op.rhs, scalar)
    if lhs is None or rhs is None:
        return None
    side_l, side_r, pred = _ALL_PASS[op.predicate.data]
    return cmpi(ops, lhs[side_l == "hi"], rhs[side_r == "hi"], pred)


def _bounds(ops: list, v: SSAValue, scalar) -> tuple[SSAValue, SSAValue] | None:
    """(least, greatest) element of an affine i32 tile, as i32 scalars."""
    op = v.op
    if isinstance(op, T.IotaOp):
        return _const(ops, 0), _const(ops, op.result.type.get_shape()[op.axis.data] - 1)
    if isinstance(op, T.ConstantOp):
        c = _const(ops, int(op.value.value.data))
        return c, c
    if isinstance(op, T.SplatOp):
        s = scalar(op.scalar)
        return None if s is None else (s, s)
    if isinstance(op, T.BroadcastOp):
        return _bounds(ops, op.source, scalar)
    a, b = _bounds(ops, op.args[0], scalar), _bounds(ops, op.args[1], scalar)
    if a is None or b is None:
        return None
    if isinstance(op, T.AddOp):
        return binop(ops, arith.AddiOp, a[0], b[0]), binop(ops, arith.AddiOp, a[1], b[1])
    return binop(ops, arith.SubiOp, a[0], b[1]), binop(ops, arith.SubiOp, a[1], b[0])


def _const(ops: list, n: int) -> SSAValue:
    """An i32 constant (ws_common.index_const makes index ones; the bounds are i32 like the iotas)."""
    c = arith.ConstantOp(IntegerAttr(n, i32))
    ops.append(c)
    return c.result
