"""warp-specialize's epilogue: the tile ops after the K-loop, kept in the wgmma accumulator's registers.

Each consumer runs the epilogue on its 64-row blocks of the tile: every
[BM, BN] tile value becomes a `vector<BN/2 x T>` in wgmma's D layout, [1, BN]
rows (bias) are loaded already broadcast, and loads/stores become
`nv.wgacc_load`/`nv.wgacc_store` at the block's rows. Elementwise ops,
converts, splats and constants are slot-wise nv ops; the emitter fuses the
whole run into one loop over slots, so one slot is live at a time.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import i32
from xdsl.ir import Operation, SSAValue

from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir import ops as nv
from tessera.target.nvidia.ir import wgreg_ops as W
from tessera.ir import tile_ops as T
from tessera.ir.fragment_ops import FragmentStoreOp, FragmentUnpackOp
from tessera.ir.types import TileType
from tessera.target.nvidia.passes.wgmma_kloop import WG_ROWS, KLoop, binop, index_const, is_scalar, refuse


class Epilogue:
    """The ops after the K-loop on one 64 x BN row block (`row_block` * 64 rows into the tile)."""

    def __init__(self, kl: KLoop, row_block: SSAValue, mapping: dict, tma: tuple[int, SSAValue] | None = None):
        self.kl, self.row_block, self.map = kl, row_block, dict(mapping)
        self.tma = tma  # (staging offset, consumer index): the store goes through shared memory and TMA

    def slots(self, elem) -> object:
        return nv.vec(self.kl.bn // 2, elem)

    def tile_ok(self, op: Operation, t) -> None:
        """[BM, BN] tiles and [1, BN] rows (kept broadcast; [BN] before a reshape to one) are what the epilogue
        can hold."""
        if not isinstance(t, TileType):
            return
        shape = tuple(t.get_shape())
        if shape not in ((self.kl.bm, self.kl.bn), (1, self.kl.bn), (self.kl.bn,)):
            raise refuse(op, f"{op.name} on a {'x'.join(map(str, shape))} tile: the wgmma epilogue holds "
                             f"{self.kl.bm}x{self.kl.bn} tiles and 1x{self.kl.bn} rows")

    def slotwise(self, op: Operation, get) -> Operation | None:
        """The slot-wise nv op for an elementwise, compare, select, splat, constant or convert tile op (None for
        other ops): slot i of every operand is the same element of the tile, whatever the layout."""
        if not isinstance(op, (T.ElementwiseOp, T.SplatOp, T.ConstantOp, T.ConvertOp, T.CmpOp, T.SelectOp)):
            return None
        slots = self.slots(op.results[0].type.element_type)
        if isinstance(op, T.CmpOp):
            return nv.CmpOp(op.predicate.data, get(op.lhs), get(op.rhs), slots)
        if isinstance(op, T.SelectOp):
            return nv.SelectOp(get(op.cond), get(op.lhs), get(op.rhs), slots)
        if isinstance(op, T.ElementwiseOp):
            return nv.MapOp(op.name.split(".", 1)[1], *[get(a) for a in op.args], result_type=slots)
        if isinstance(op, T.SplatOp):
            return nv.SplatOp(get(op.scalar), slots)
        if isinstance(op, T.ConstantOp):
            return nv.FillOp(op.value.value.data, slots)
        return nv.ConvertOp(get(op.source), slots)

    def iota(self, ops: list, op: T.IotaOp) -> SSAValue:
        """An index tile in the D layout: columns of the tile (or of a [1, BN] row) along axis 1, its rows along
        axis 0 (this block's 0..63 plus 64 * the row block); a [1, BN] row's rows are all 0."""
        axis, bn = op.axis.data, self.kl.bn
        ivec = self.slots(i32)
        if axis == 0 and tuple(op.result.type.get_shape()) == (1, bn):
            new = nv.FillOp(0.0, ivec)
            ops.append(new)
            value = new.result
        else:
            new = W.WgaccIndexOp(axis, bn)
            ops.append(new)
            value = new.result
            if axis == 0:
                first = arith.IndexCastOp(binop(ops, arith.MuliOp, self.row_block, WG_ROWS), i32)
                splat = nv.SplatOp(first.result, ivec)
                add = nv.MapOp("add", value, splat.result, result_type=ivec)
                ops += [first, splat, add]
                value = add.result
        if op.result.type.element_type != i32:
            conv = nv.ConvertOp(value, self.slots(op.result.type.element_type))
            ops.append(conv)
            value = conv.result
        return value

    def lower(self, ops: list, acc: SSAValue) -> None:
        m = self.map
        m[self.kl.loop.results[0]] = acc
        row_off = None

        def rows(op, row: SSAValue, full: bool) -> SSAValue:
            nonlocal row_off
            if not full:
                return m.get(row, row)
            if row_off is None:
                row_off = binop(ops, arith.MuliOp, self.row_block, WG_ROWS)
            return binop(ops, arith.AddiOp, m.get(row, row), row_off)

        def get(v: SSAValue) -> SSAValue:
            return m.get(v, v)

        for op in self.kl.epilogue:
            for v in op.results:
                self.tile_ok(op, v.type)
            new = self.slotwise(op, get)
            if new is not None:
                ops.append(new)
                m[op.results[0]] = new.results[0]
            elif isinstance(op, FragmentUnpackOp):
                m[op.result] = get(op.source)
            elif isinstance(op, T.BroadcastOp):
                if tuple(op.source.type.get_shape()) != (1, self.kl.bn):
                    raise refuse(op, "the wgmma epilogue broadcasts only [1, BN] rows over the tile")
                m[op.result] = get(op.source)
            elif isinstance(op, T.IotaOp):
                m[op.result] = self.iota(ops, op)
            elif isinstance(op, (T.MaskedStoreOp, T.AtomicAddOp)):  # registers, never TMA: element by element
                if len(op.offsets) != 2 or tuple(op.value.type.get_shape()) != (self.kl.bm, self.kl.bn):
                    raise refuse(op, f"the wgmma epilogue stores whole {self.kl.bm}x{self.kl.bn} tiles of 2-D memrefs")
                r, c = op.offsets
                write = H.WgaccStoreOp if isinstance(op, T.MaskedStoreOp) else H.WgaccAtomicAddOp
                ops.append(write(get(op.value), op.dest, rows(op, r, True), get(c), self.kl.bn,
                                 mask=None if op.mask is None else get(op.mask)))
            elif isinstance(op, T.ReshapeOp):  # a [BN] row as [1, BN] (w[None, :]): the same broadcast registers
                if tuple(op.result.type.get_shape()) != (1, self.kl.bn):
                    raise refuse(op, f"the wgmma epilogue reshapes [{self.kl.bn}] rows to [1, {self.kl.bn}] only")
                m[op.result] = get(op.source)
            elif isinstance(op, T.LoadOp) and len(op.offsets) == 1:  # a rank-1 row (a bias vector)
                new = H.WgaccLoadOp(op.source, index_const(ops, 0), get(op.offsets[0]), self.kl.bn, broadcast_rows=True,
                                    pad=op.padding.value.data)
                ops.append(new)
                m[op.result] = new.result
            elif isinstance(op, T.LoadOp):
                if len(op.offsets) != 2:
                    raise refuse(op, "epilogue loads read 1-D (a row) or 2-D memrefs")
                r, c = op.offsets
                full = tuple(op.result.type.get_shape()) == (self.kl.bm, self.kl.bn)
                new = H.WgaccLoadOp(op.source, rows(op, r, full), get(c), self.kl.bn, broadcast_rows=not full,
                                    pad=op.padding.value.data)
                ops.append(new)
                m[op.result] = new.result
            elif isinstance(op, (T.StoreOp, FragmentStoreOp)):  # a fragment store holds the whole acc already
                if isinstance(op, T.StoreOp) and (len(op.offsets) != 2 or
                                                  tuple(op.value.type.get_shape()) != (self.kl.bm, self.kl.bn)):
                    raise refuse(op, f"the wgmma epilogue stores whole {self.kl.bm}x{self.kl.bn} tiles of 2-D memrefs")
                r, c = op.offsets
                at = (get(op.value), op.dest, rows(op, r, True), get(c))
                if self.tma is not None:
                    stage, consumer = self.tma
                    ops.append(H.WgaccStoreTmaOp(*at, consumer, self.kl.bn, stage))
                else:
                    ops.append(H.WgaccStoreOp(*at, self.kl.bn))
            elif is_scalar(op):
                ops.append(op.clone(value_mapper=m))
            else:
                raise refuse(op, f"{op.name} in the epilogue of a wgmma kernel: the register epilogue takes "
                                 "elementwise ops, compares, selects, iotas, converts, splats, constants, [1, N] "
                                 "broadcasts, loads, stores, masked stores and atomic adds")
