"""Tile values of a warp-specialised kernel in a consumer warpgroup's registers, by layout.

A `Regs` lowers one 64-row block of every tile with the kernel's BM rows (a
consumer warpgroup holds one, or several, each with its own `Regs`). Each tile value becomes per-thread registers whose layout follows
from its shape (`Regs.kind`):

* `acc`  [BM, n]: wgmma's D layout, `vector<n/2 x T>` (tessera.target.nvidia.ir.wgreg_ops);
* `rows` [BM, 1]: the row vector of that layout, `vector<2 x T>` (the thread's two rows);
* `cols` [1, n]:  a row of n values, held as the D layout of its broadcast over the block (`vector<n/2 x T>`),
  so a broadcast to [BM, n] moves nothing;
* `rows_t` [1, BM]: a transposed row vector, kept as `rows` until it is stored (one lane per quad writes);
  known by where it comes from (a `tile.transpose` of a row vector), since a [1, n] row of n = BM has its shape.

Elementwise ops, compares, selects, converts, splats and constants are slot-wise on these vectors; a row
reduction is `nv.wgacc_reduce_rows` (quad shuffles), a [BM, 1] -> [BM, n] broadcast `nv.wgrows_broadcast`,
an iota `nv.wgacc_index` / `nv.wgrows_index` plus the block's first row. Nothing goes through shared memory.
Anything else is refused with NV_WGMMA_UNSUPPORTED naming the op and the shapes that are held.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import i32
from xdsl.ir import Block, Operation, SSAValue

from tessera.ir import tile_ops as T
from tessera.ir.fragment_ops import FragmentStoreOp, FragmentUnpackOp, FragmentZeroOp
from tessera.ir.types import FragmentType, type_name
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir import ops as nv
from tessera.target.nvidia.ir import wgreg_ops as W
from tessera.target.nvidia.passes.ws_common import WG_ROWS, binop, index_const, is_scalar, refuse
from tessera.target.nvidia.passes.ws_masks import Guard, all_pass, plan_guards

MAX_N = 256


class Regs:
    """Lowers tile ops on one consumer's 64-row block; `map` takes old values to their registers (or scalars)."""

    def __init__(self, bm: int, block: SSAValue, mapping: dict):
        self.bm, self.block, self.map = bm, block, mapping
        self._row0: SSAValue | None = None
        self.kinds: dict[SSAValue, str] = {}
        self.guards: dict[Operation, Guard] = {}  # selects whose mask may pass whole (ws_masks)
        self.deferred: set[Operation] = set()  # those masks' own ops: lowered inside the guard's else branch
        # (the store that goes through TMA, the staging offset, the consumer warpgroup whose staging it uses)
        self.tma: tuple[Operation, int, SSAValue] | None = None
        # split-K fixup=scatter: (this split, the splits): the TMA store writes only that split's boxes
        self.window: tuple[SSAValue, int] | None = None

    def guard_masks(self, block: Block) -> None:
        """Guard the selects of `block` whose masks pass by a scalar test (see ws_masks)."""
        for g in plan_guards(block):
            self.guards[g.select] = g
            self.deferred.update(g.moved)

    # -- layouts ------------------------------------------------------------------
    def kind(self, op: Operation, t) -> tuple[str, int]:
        """(layout kind, n) of a tile or fragment type; refuses shapes a consumer block cannot hold."""
        if isinstance(t, FragmentType):
            if t.role.data != "acc":
                raise refuse(op, f"a wgmma {t.role.data} fragment used as a value: only accumulators are registers")
            return "acc", t.n.data
        shape = tuple(t.get_shape())
        bm = self.bm
        if len(shape) == 2 and shape[0] == bm and shape[1] == 1:
            return "rows", 1
        if len(shape) == 2 and shape[0] == bm and shape[1] % 8 == 0 and shape[1] <= MAX_N:
            return "acc", shape[1]
        if len(shape) == 2 and shape[0] == 1 and shape[1] % 8 == 0 and shape[1] <= MAX_N:
            return "cols", shape[1]
        if len(shape) == 1 and shape[0] % 8 == 0 and shape[0] <= MAX_N:  # a rank-1 row (a bias vector)
            return "cols", shape[0]
        raise refuse(op, f"{op.name} on a {'x'.join(map(str, shape))} tile: a consumer warpgroup holds {bm}xN tiles "
                         f"(N a multiple of 8 up to {MAX_N}), {bm}x1 row vectors and 1xN (or rank-1 N) rows in registers")

    def vec_type(self, op: Operation, t, elem=None):
        kind, n = self.kind(op, t)
        if isinstance(op, T.ElementwiseOp) and any(self.kinds.get(a) == "rows_t" for a in op.operands):
            raise refuse(op, f"{op.name} on a transposed row vector: a consumer only stores those")
        if elem is None:
            elem = t.acc if isinstance(t, FragmentType) else t.element_type
        return nv.vec(W.ROW_SLOTS if kind in ("rows", "rows_t") else n // 2, elem)

    def get(self, v: SSAValue) -> SSAValue:
        return self.map.get(v, v)

    def fork(self) -> "Regs":
        """The same block and layouts with a copy of the map: one loop step's values beside another's."""
        other = Regs(self.bm, self.block, dict(self.map))
        other._row0, other.kinds = self._row0, self.kinds
        other.guards, other.deferred, other.tma, other.window = self.guards, self.deferred, self.tma, self.window
        return other

    def row0(self, ops: list) -> SSAValue:
        """The block's first row within the tile (index): block * 64."""
        if self._row0 is None:
            self._row0 = binop(ops, arith.MuliOp, self.block, WG_ROWS)
        return self._row0

    def _add_rows(self, ops: list, idx: SSAValue, vtype) -> SSAValue:
        """idx (i32 slots) + the block's first row, as i32 slots."""
        cast = arith.IndexCastOp(self.row0(ops), i32)
        splat = nv.SplatOp(cast.result, vtype)
        add = nv.MapOp("add", idx, splat.result)
        ops += [cast, splat, add]
        return add.result

    # -- one op ---------------------------------------------------------------------
    def lower(self, ops: list, op: Operation) -> bool:
        """Append the register form of `op`; False when it is not a register op (the caller's to handle)."""
        m, get = self.map, self.get
        if op in self.deferred:  # a guarded mask's op: lowered with its select (see `_guarded`)
            return True
        if is_scalar(op):
            new = op.clone(value_mapper=m)
            ops.append(new)
            for a, b in zip(op.results, new.results):
                m[a] = b
            return True
        if isinstance(op, FragmentZeroOp):
            new = nv.FillOp(0.0, self.vec_type(op, op.result.type))
        elif isinstance(op, FragmentUnpackOp):
            m[op.result] = get(op.source)
            return True
        elif isinstance(op, T.ElementwiseOp):
            new = nv.MapOp(op.name.split(".", 1)[1], *[get(a) for a in op.args],
                           result_type=self.vec_type(op, op.result.type))
        elif isinstance(op, T.CmpOp):
            new = nv.CmpOp(op.predicate.data, get(op.lhs), get(op.rhs))
        elif isinstance(op, T.SelectOp):
            if op in self.guards:
                return self._guarded(ops, self.guards[op])
            new = nv.SelectOp(get(op.cond), get(op.lhs), get(op.rhs))
        elif isinstance(op, T.ConvertOp):
            new = nv.ConvertOp(get(op.source), self.vec_type(op, op.result.type))
        elif isinstance(op, T.SplatOp):
            new = nv.SplatOp(get(op.scalar), self.vec_type(op, op.result.type))
        elif isinstance(op, T.ConstantOp):
            new = nv.FillOp(op.value.value.data, self.vec_type(op, op.result.type))
        elif isinstance(op, T.IotaOp):
            return self._iota(ops, op)
        elif isinstance(op, T.BroadcastOp):
            return self._broadcast(ops, op)
        elif isinstance(op, T.ReduceOp):
            kind, n = self.kind(op, op.source.type)
            if kind != "acc" or op.axis.data != 1:
                raise refuse(op, f"tile.reduce along axis {op.axis.data} of a {kind} value: a consumer reduces "
                                 f"{self.bm}xN tiles along their columns (axis 1)")
            new = W.WgaccReduceRowsOp(op.kind.data, get(op.source), n)
        elif isinstance(op, T.ReshapeOp):  # a rank-1 row as [1, n] (bias[None, :]): the same broadcast registers
            (src, n), shape = self.kind(op, op.source.type), tuple(op.result.type.get_shape())
            if src != "cols" or shape not in ((n,), (1, n)):
                raise refuse(op, f"tile.reshape of a {src} value to {'x'.join(map(str, shape))}: a consumer reshapes "
                                 "rank-1 rows to [1, N] only",
                             "use the row as x[None, :]; a [BM, 1] column comes from a row reduction")
            m[op.result] = get(op.source)
            return True
        elif isinstance(op, T.TransposeOp):
            kind, _ = self.kind(op, op.source.type)
            if kind != "rows":
                raise refuse(op, f"tile.transpose of a {kind} value: a consumer transposes {self.bm}x1 row vectors "
                                 "only (to store them as a row)",
                             "store the tile at swapped offsets of a transposed view of the output instead")
            m[op.result] = get(op.source)
            self.kinds[op.result] = "rows_t"
            return True
        else:
            return False
        ops.append(new)
        m[op.results[0]] = new.results[0]
        return True

    def _guarded(self, ops: list, g: Guard) -> bool:
        """`scf.if every element passes { x } else { the mask's ops; select }` (ws_masks), or the plain select
        after its mask's ops when a bound has no lowered scalar."""
        op = g.select
        self.row0(ops)  # outside the branch, should a mask op be its first user: later ops read it too
        bounds: list = []
        test = all_pass(bounds, op.cond, self.map.get)  # its ops are kept only when there is a test
        inner: list = []
        for m in g.moved:
            self._lower_now(inner, m)
        select = nv.SelectOp(self.get(op.cond), self.get(op.lhs), self.get(op.rhs))
        inner.append(select)
        if test is None:
            ops += inner
            self.map[op.result] = select.result
            return True
        ops += bounds
        branch = scf.IfOp(test, [select.result.type], [scf.YieldOp(self.get(op.lhs))], [*inner, scf.YieldOp(select)])
        ops.append(branch)
        self.map[op.result] = branch.results[0]
        return True

    def _lower_now(self, ops: list, op: Operation) -> None:
        self.deferred.discard(op)
        try:
            if not self.lower(ops, op):
                raise refuse(op, f"{op.name} in a mask: a consumer lowers iotas, splats, adds, compares and selects")
        finally:
            self.deferred.add(op)

    def _iota(self, ops: list, op: T.IotaOp) -> bool:
        kind, n = self.kind(op, op.result.type)
        axis = op.axis.data
        if kind == "rows" and axis == 0:
            idx = W.WgrowsIndexOp()
            ops.append(idx)
            value = self._add_rows(ops, idx.result, idx.result.type)
        elif kind in ("acc", "cols") and (axis == 1 or kind == "acc"):
            idx = W.WgaccIndexOp(axis, n)
            ops.append(idx)
            value = self._add_rows(ops, idx.result, idx.result.type) if axis == 0 else idx.result
        else:  # a [BM, 1] iota along axis 1, or [1, n] along axis 0: all zeros
            zero = nv.FillOp(0.0, self.vec_type(op, op.result.type, i32))
            ops.append(zero)
            value = zero.result
        if type_name(op.result.type.element_type) != "i32":
            conv = nv.ConvertOp(value, self.vec_type(op, op.result.type))
            ops.append(conv)
            value = conv.result
        self.map[op.result] = value
        return True

    def _broadcast(self, ops: list, op: T.BroadcastOp) -> bool:
        src, dst = self.kind(op, op.source.type), self.kind(op, op.result.type)
        if src == dst or (src[0] == "cols" and dst[0] == "acc" and src[1] == dst[1]):
            self.map[op.result] = self.get(op.source)
            return True
        if src[0] == "rows" and dst[0] == "acc":
            new = W.WgrowsBroadcastOp(self.get(op.source), dst[1])
            ops.append(new)
            self.map[op.result] = new.result
            return True
        raise refuse(op, f"tile.broadcast of a {src[0]} value to a {dst[0]} one: a consumer broadcasts {self.bm}x1 "
                         "row vectors and 1xN rows over its tile")

    # -- memory -----------------------------------------------------------------------
    def store(self, ops: list, op: Operation) -> None:
        """A tile.store (or fragment_store) of a held value: D-layout windows or a transposed row vector; a
        tile.masked_store or tile.atomic_add of a D-layout window, element by element (under its mask)."""
        value = op.value
        masked = isinstance(op, (T.MaskedStoreOp, T.AtomicAddOp))
        if self.kinds.get(value) == "rows_t" and op.offsets and not masked:
            last = binop(ops, arith.AddiOp, self.get(op.offsets[-1]), self.row0(ops))
            ops.append(W.WgrowsStoreOp(self.get(value), op.dest, [*(self.get(v) for v in op.offsets[:-1]), last]))
            return
        kind, n = self.kind(op, value.type)
        offsets = [self.get(v) for v in op.offsets]
        if kind == "acc" and len(offsets) >= 2:
            *outer, row, col = offsets
            at = binop(ops, arith.AddiOp, row, self.row0(ops))
            mask = self.get(op.mask) if masked and op.mask is not None else None
            if mask is not None and self.kind(op, op.mask.type)[0] != "acc":
                raise refuse(op, f"a masked store whose mask is not a {self.bm}xN tile: broadcast it first")
            if self.tma is not None and op is self.tma[0] and not outer:  # staged in shared memory, TMA boxes
                ops.append(H.WgaccStoreTmaOp(self.get(value), op.dest, at, col, self.tma[2], n, self.tma[1],
                                             window=self.window))
                return
            write = H.WgaccAtomicAddOp if isinstance(op, T.AtomicAddOp) else H.WgaccStoreOp
            ops.append(write(self.get(value), op.dest, at, col, n, outer=outer, mask=mask))
            return
        raise refuse(op, f"a {'masked ' * masked}store of a {kind} value: a consumer stores {self.bm}xN tiles and "
                         f"transposed {self.bm}x1 row vectors",
                     "transpose a [BM, 1] row vector (x.T) to store it as a row, or broadcast it to [BM, N]")

    def load(self, ops: list, op: T.LoadOp) -> None:
        """A [BM, n] tile or [1, n] row (broadcast) of a 2-D memref, or a rank-1 row of a 1-D one, read into the D
        layout."""
        kind, n = self.kind(op, op.result.type)
        if kind == "cols" and len(op.offsets) == 1:
            new = H.WgaccLoadOp(op.source, index_const(ops, 0), self.get(op.offsets[0]), n, broadcast_rows=True,
                                pad=op.padding.value.data)
            ops.append(new)
            self.map[op.result] = new.result
            return
        if kind not in ("acc", "cols") or len(op.offsets) != 2:
            raise refuse(op, f"a load of a {kind} value from a rank-{len(op.offsets)} memref: a consumer loads "
                             f"{self.bm}xN tiles and 1xN rows of 2-D memrefs")
        r, c = (self.get(v) for v in op.offsets)
        row = binop(ops, arith.AddiOp, r, self.row0(ops)) if kind == "acc" else r
        new = H.WgaccLoadOp(op.source, row, c, n, broadcast_rows=kind == "cols", pad=op.padding.value.data)
        ops.append(new)
        self.map[op.result] = new.result


def lower_all(regs: Regs, ops: list, todo: list[Operation]) -> None:
    """Lower `todo` in order: register ops, loads and stores; refuse the rest."""
    for op in todo:
        if regs.lower(ops, op):
            continue
        if isinstance(op, T.LoadOp):
            regs.load(ops, op)
        elif isinstance(op, (T.StoreOp, T.MaskedStoreOp, T.AtomicAddOp, FragmentStoreOp)):
            regs.store(ops, op)
        else:
            raise refuse(op, f"{op.name} in a warp-specialised consumer: it runs elementwise ops, compares, selects, "
                             "converts, row reductions, broadcasts, iotas, loads and stores on register tiles")

