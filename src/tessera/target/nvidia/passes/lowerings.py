"""One lowering per Tile/Fragment IR op: the table `LOWERINGS` that lower-tile-to-nv applies op by op.

Each function replaces one op by nv ops, reading the types of its own
operands and results (still the original tile/fragment types: the driver
goes consumers-first). Results get the converted types directly.

Supported: program_id, num_programs; alloc, view (read by async_copy only),
async_copy (cp.async, one group each), wait (cp.async.wait_group + barrier);
fragment_zero, fragment_pack (from smem; from a register tile through the
scratch buffer, converting the element type if needed), fragment_mma
(mma.sync m16n8k16 bf16/f16 -> f32), fragment_unpack and fragment_store
(family mma_sync, layout "row"); load, store, every elementwise op, cmp,
select, convert, constant, splat, iota, reshape, masked_store, atomic_add on blocked register tiles; reduce, scan,
broadcast (in registers when every thread already holds what it needs, e.g. a
1 x N row over N threads: `nv.slots`) and transpose through the scratch buffer.

tile.mma with f32 operands and accumulator (what tile-to-fragments leaves):
A and B through the scratch buffer, then `nv.blocked_mma`, fp32 fma loops on
CUDA cores (f32 inputs must not round to tf32).

Refused with NV_LOWER_UNSUPPORTED: any other tile.mma (run tile-to-fragments first),
fragments of layout "col" (a transposed source, which no op produces yet),
f16 accumulators, views read by anything but async_copy, and any tile op
not in the table.

Layout changes (register tile <-> fragment, reduce, broadcast, transpose)
go through shared memory: barrier, write, barrier, read. The first barrier
keeps the scratch buffer from being overwritten while another warp still
reads the previous use; `drop_redundant_barriers` removes those with no
shared-memory access since the last barrier.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from tessera.ir import diagnostics as D
from tessera.ir import fragment_ops as F
from tessera.target.nvidia.ir import ops as nv
from tessera.ir import tile_ops as T
from tessera.ir.types import FragmentType, TileType, type_name
from tessera.target.nvidia.ir.types import SMEM_ALIGN, elem_bytes


def refuse(op: Operation, why: str) -> None:
    raise D.TesseraError(D.NV_LOWER_UNSUPPORTED, f"lower-tile-to-nv cannot lower {op.name}: {why}", op=op)


def _replace(op: Operation, new_ops: list[Operation], results=None) -> None:
    """Put `new_ops` before `op` (same location), move name hints over, and erase `op`."""
    for new in new_ops:
        new.location = op.location
    results = list(results if results is not None else (new_ops[-1].results if new_ops else []))
    for old, new in zip(op.results, results):
        if new is not None and old.name_hint and not new.name_hint:
            new.name_hint = old.name_hint
    Rewriter.replace_op(op, new_ops, results)


def _zero(ops: list[Operation]) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(0, IndexType()))
    c.result.name_hint = "i0"
    ops.append(c)
    return c.result


def _check_frag(t: FragmentType, op: Operation) -> None:
    if t.layout.data != "row":
        refuse(op, f"fragment {t} has layout \"{t.layout.data}\" (a transposed source); only \"row\" is lowered")
    if type_name(t.acc) != "f32":
        refuse(op, f"fragment {t} has a {type_name(t.acc)} accumulator; mma.sync lowering accumulates in f32")


def _frag(t: FragmentType, op: Operation, warps) -> dict:
    _check_frag(t, op)
    return dict(family=t.family.data, role=t.role.data, mnk=(t.m.data, t.n.data, t.k.data), dtype=t.elem,
                warps=tuple(v.data for v in warps.data))


def _relayout(k, value: SSAValue, tile: TileType, ops: list[Operation]) -> SSAValue:
    """Barrier; write the blocked register tile `value` into the scratch buffer; barrier. Returns the buffer."""
    t, offset = k.scratch(tile.get_shape(), tile.element_type)
    buf = nv.AllocSharedOp(t, offset)
    buf.result.name_hint = "scratch"
    ops += [buf, nv.BarrierOp(), nv.StoreSharedOp(value, buf.result, k.threads), nv.BarrierOp()]
    return buf.result


# --- grid and shared memory ---------------------------------------------------------


def lower_grid(op, k) -> None:
    cls = nv.BlockIdOp if isinstance(op, T.ProgramIdOp) else nv.GridDimOp
    _replace(op, [cls(op.axis.data)])


def lower_alloc(op: F.AllocOp, k) -> None:
    _replace(op, [nv.AllocSharedOp(k.convert(op.result.type), k.offsets[op])])


def lower_view(op: F.ViewOp, k) -> None:
    if op.result.uses:
        user = next(iter(op.result.uses)).operation
        refuse(op, f"its window is read by {user.name}; only tile.async_copy reads views")
    Rewriter.erase_op(op)


def lower_async_copy(op: F.AsyncCopyOp, k) -> None:
    view = op.source.owner
    if not isinstance(view, F.ViewOp):
        refuse(op, "its source must be a tile.view in the same kernel")
    copy = nv.CpAsyncTileOp(view.source, list(view.offsets), op.dest, op.padding.value.data)
    _replace(op, [nv.BarrierOp(), copy])


def lower_wait(op: F.WaitOp, k) -> None:
    _replace(op, [nv.CpAsyncWaitOp(*op.tokens), nv.BarrierOp()])


# --- fragments ------------------------------------------------------------------------


def lower_fragment_zero(op: F.FragmentZeroOp, k) -> None:
    _check_frag(op.result.type, op)
    _replace(op, [nv.FillOp(0.0, k.convert(op.result.type))])


def lower_fragment_pack(op: F.FragmentPackOp, k) -> None:
    f: FragmentType = op.result.type
    props, reg_t = _frag(f, op, op.warps), k.convert(f)
    src: TileType = op.source.type
    ops: list[Operation] = []
    source = op.source
    if src.space_name == "reg":
        value = op.source
        if src.element_type != reg_t.element_type:
            conv = nv.ConvertOp(value, nv.vec(nv.blocked_len(src.get_shape(), k.threads), reg_t.element_type))
            ops.append(conv)
            value = conv.result
        source = _relayout(k, value, src.with_element(reg_t.element_type), ops)
    elif src.element_type != reg_t.element_type:
        refuse(op, f"shared tile {src} holds {type_name(src.element_type)} but {f} registers hold "
                   f"{type_name(reg_t.element_type)}")
    ops.append(nv.LdFragSharedOp(source, list(op.offsets), reg_t, **props))
    _replace(op, ops)


def lower_fragment_mma(op: F.FragmentMmaOp, k) -> None:
    f: FragmentType = op.result.type
    _check_frag(f, op)
    _replace(op, [nv.MmaSyncOp(op.a, op.b, op.acc, (f.m.data, f.n.data, f.k.data), f.elem, k.convert(f))])


def lower_fragment_unpack(op: F.FragmentUnpackOp, k) -> None:
    f: FragmentType = op.source.type
    props, res = _frag(f, op, op.warps), op.result.type
    t, offset = k.scratch(res.get_shape(), res.element_type)
    ops: list[Operation] = [buf := nv.AllocSharedOp(t, offset), nv.BarrierOp()]
    buf.result.name_hint = "scratch"
    zero = _zero(ops)
    ops += [nv.StFragSharedOp(op.source, buf.result, [zero, zero], **props), nv.BarrierOp(),
            nv.LoadSharedOp(buf.result, k.convert(res), res.get_shape(), k.threads, t.strides())]
    _replace(op, ops)


def lower_fragment_store(op: F.FragmentStoreOp, k) -> None:
    props = _frag(op.value.type, op, op.warps)
    _replace(op, [nv.StFragGlobalOp(op.value, op.dest, list(op.offsets), **props)])


# --- register tiles (blocked) -----------------------------------------------------------


def lower_load(op: T.LoadOp, k) -> None:
    t: TileType = op.result.type
    _replace(op, [nv.LoadGlobalOp(op.source, list(op.offsets), k.convert(t), t.get_shape(), k.threads,
                                  op.padding.value.data)])


def lower_store(op: T.StoreOp, k) -> None:
    t: TileType = op.value.type
    _replace(op, [nv.StoreGlobalOp(op.value, op.dest, list(op.offsets), t.get_shape(), k.threads)])


def lower_masked_store(op: T.MaskedStoreOp, k) -> None:
    t: TileType = op.value.type
    _replace(op, [nv.StoreGlobalOp(op.value, op.dest, list(op.offsets), t.get_shape(), k.threads, mask=op.mask)])


def lower_atomic_add(op: T.AtomicAddOp, k) -> None:
    t: TileType = op.value.type
    _replace(op, [nv.AtomicAddGlobalOp(op.value, op.dest, list(op.offsets), t.get_shape(), k.threads, mask=op.mask)])


def lower_elementwise(op: T.ElementwiseOp, k) -> None:
    _replace(op, [nv.MapOp(op.name.split(".", 1)[1], *op.args, result_type=k.convert(op.result.type))])


def lower_cmp(op: T.CmpOp, k) -> None:
    _replace(op, [nv.CmpOp(op.predicate.data, op.lhs, op.rhs, k.convert(op.result.type))])


def lower_select(op: T.SelectOp, k) -> None:
    _replace(op, [nv.SelectOp(op.cond, op.lhs, op.rhs, k.convert(op.result.type))])


def lower_convert(op: T.ConvertOp, k) -> None:
    if op.source.type == op.result.type:
        _replace(op, [], [op.source])
        return
    _replace(op, [nv.ConvertOp(op.source, k.convert(op.result.type))])


def lower_constant(op: T.ConstantOp, k) -> None:
    _replace(op, [nv.FillOp(op.value.value.data, k.convert(op.result.type))])


def lower_splat(op: T.SplatOp, k) -> None:
    _replace(op, [nv.SplatOp(op.scalar, k.convert(op.result.type))])


def lower_iota(op: T.IotaOp, k) -> None:
    t: TileType = op.result.type
    _replace(op, [nv.IotaOp(k.convert(t), t.get_shape(), k.threads, op.axis.data)])


def lower_reduce(op: T.ReduceOp, k) -> None:
    ops: list[Operation] = []
    buf = _relayout(k, op.source, op.source.type, ops)
    ops.append(nv.ReduceSharedOp(buf, k.convert(op.result.type), k.threads, op.kind.data, op.axis.data))
    _replace(op, ops)


def lower_scan(op: T.ScanOp, k) -> None:
    ops: list[Operation] = []
    buf = _relayout(k, op.source, op.source.type, ops)
    ops.append(nv.ScanSharedOp(buf, k.convert(op.result.type), k.threads, op.kind.data, op.axis.data))
    _replace(op, ops)


def _read_back(op, k, strides_of) -> None:
    """Relayout through the scratch buffer, reading element i of the result at sum(i[d] * strides[d])."""
    src, res = op.source.type, op.result.type
    ops: list[Operation] = []
    buf = _relayout(k, op.source, src, ops)
    strides = strides_of(src.get_shape(), res.get_shape(), buf.type.strides())
    ops.append(nv.LoadSharedOp(buf, k.convert(res), res.get_shape(), k.threads, strides))
    _replace(op, ops)


def thread_local_slots(src_shape, res_shape, threads: int) -> tuple[int, int] | None:
    """(scale, offset) when every thread holds the source of each of its broadcast slots, slot-affinely.

    Blocked slot i of thread t is element t + i*threads; its broadcast source
    element (size-1 dims pinned to 0) must live on thread t, at a slot that is
    the same affine function of i for every thread. Else None: go through shared memory.
    """
    n = -(-math.prod(res_shape) // threads)
    flat = np.arange(threads)[:, None] + np.arange(n)[None, :] * threads
    valid = flat < math.prod(res_shape)
    coords = np.unravel_index(np.minimum(flat, math.prod(res_shape) - 1), res_shape)
    src = np.ravel_multi_index(tuple(c if d > 1 else 0 * c for c, d in zip(coords, src_shape)), src_shape)
    if not (src % threads == np.arange(threads)[:, None])[valid].all():
        return None
    slot = np.where(valid, src // threads, -1)
    col = slot.max(axis=0)
    if not ((slot == col) | ~valid).all():
        return None
    scale = int(col[1] - col[0]) if n > 1 else 0
    return (scale, int(col[0])) if np.array_equal(col, scale * np.arange(n) + col[0]) else None


def lower_broadcast(op: T.BroadcastOp, k) -> None:
    if op.source.type == op.result.type:
        _replace(op, [], [op.source])
        return
    local = thread_local_slots(op.source.type.get_shape(), op.result.type.get_shape(), k.threads)
    if local is not None:
        _replace(op, [nv.SlotsOp(op.source, k.convert(op.result.type), *local)])
        return
    _read_back(op, k, lambda s, r, st: [0 if a != b else x for a, b, x in zip(s, r, st)])


def lower_transpose(op: T.TransposeOp, k) -> None:
    _read_back(op, k, lambda s, r, st: list(st[::-1]))


def lower_reshape(op: T.ReshapeOp, k) -> None:
    """A blocked tile's slot i of thread t is element t + i * threads in row-major order, for every shape: a
    reshape keeps that order and the count (its verifier), so it is the same registers."""
    _replace(op, [], [op.source])


def _scratch_pair(k, a: TileType, b: TileType) -> tuple[nv.AllocSharedOp, nv.AllocSharedOp]:
    """Two shared tiles side by side in the scratch region: `a` at its start, `b` at the next aligned byte."""

    ta, base = k.scratch(a.get_shape(), a.element_type)
    gap = -(-ta.extent() * elem_bytes(a.element_type) // SMEM_ALIGN) * SMEM_ALIGN
    tb, _ = k.scratch(b.get_shape(), b.element_type)
    k.scratch_bytes = max(k.scratch_bytes, gap + tb.extent() * elem_bytes(b.element_type))
    bufs = nv.AllocSharedOp(ta, base), nv.AllocSharedOp(tb, base + gap)
    for buf, hint in zip(bufs, ("scratch_a", "scratch_b")):
        buf.result.name_hint = hint
    return bufs


def lower_mma(op: T.MmaOp, k) -> None:
    """An all-f32 tile.mma (left by tile-to-fragments) -> fp32 fma loops on CUDA cores (`nv.blocked_mma`).

    Barrier; each thread writes its blocked slots of A (M x K) and B (K x N)
    into the scratch region; barrier; each thread computes its blocked slots
    of acc + A @ B from shared memory. The incoming accumulator is the op's
    own `acc` operand (a loop-carried register tile stays one loop-carried
    vector). The next scratch user's leading barrier fences these reads.
    """
    from tessera.target.nvidia.passes.tile_to_fragments import on_cuda_cores

    if not on_cuda_cores(op):
        elem = type_name(op.a.type.element_type)
        refuse(op, f"{elem} inputs run on tensor-core fragments; run tile-to-fragments{{arch=...}} first "
                   "(only an all-f32 mma lowers here, to CUDA-core fma loops)")
    ops: list[Operation] = list(_scratch_pair(k, op.a.type, op.b.type))
    sa, sb = (buf.result for buf in ops)
    ops += [nv.BarrierOp(), nv.StoreSharedOp(op.a, sa, k.threads), nv.StoreSharedOp(op.b, sb, k.threads),
            nv.BarrierOp(), nv.BlockedMmaOp(sa, sb, op.acc, k.threads, k.convert(op.result.type))]
    _replace(op, ops)


LOWERINGS = {
    T.ProgramIdOp: lower_grid, T.NumProgramsOp: lower_grid, F.AllocOp: lower_alloc, F.ViewOp: lower_view,
    F.AsyncCopyOp: lower_async_copy, F.WaitOp: lower_wait, F.FragmentZeroOp: lower_fragment_zero,
    F.FragmentPackOp: lower_fragment_pack, F.FragmentMmaOp: lower_fragment_mma,
    F.FragmentUnpackOp: lower_fragment_unpack, F.FragmentStoreOp: lower_fragment_store, T.LoadOp: lower_load,
    T.StoreOp: lower_store, T.MaskedStoreOp: lower_masked_store, T.AtomicAddOp: lower_atomic_add, T.CmpOp: lower_cmp, T.SelectOp: lower_select, T.ConvertOp: lower_convert,
    T.ConstantOp: lower_constant, T.SplatOp: lower_splat, T.IotaOp: lower_iota, T.ReduceOp: lower_reduce, T.ScanOp: lower_scan,
    T.BroadcastOp: lower_broadcast, T.TransposeOp: lower_transpose, T.ReshapeOp: lower_reshape, T.MmaOp: lower_mma,
    **{cls: lower_elementwise for cls in (*T.BINARY_OPS, *T.UNARY_OPS)},
}
