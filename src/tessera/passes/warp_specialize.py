"""warp-specialize{arch stages group_m}: a wgmma K-loop kernel -> a persistent, warp-specialised sm_90a nv kernel.

Input: what tile-to-fragments{arch=sm_90a} makes of a GEMM-shaped tile
program (DESIGN section 2): one `scf.for` K-loop whose body copies two
global windows into shared tiles (`tile.view` + `tile.async_copy`), packs a
and b wgmma fragments from them (b with layout "col": B staged as N x K) and
accumulates with `tile.fragment_mma` into a loop-carried accumulator that
starts at `fragment_zero`; scalar index math before the loop; after it, an
epilogue of elementwise tile ops, loads, broadcasts of [1, N] rows and
stores on the accumulator's tile.

Output (nv IR, one thread's view; see `tessera.ir.nv_hopper_ops`):

* shared memory: `stages` slots of A (BM x BK) and B (BN x BK) in the
  canonical K-major swizzled layout, then two mbarrier arrays: `full`
  (TMA bytes landed) and `empty` (consumers done with the slot);
* warpgroup 0 is the producer: it gives registers back (setmaxnreg.dec) and
  its thread 0 walks the tiles issuing, per K step, wait(empty) ->
  expect_tx(full) -> TMA loads;
* warpgroups 1..BM/64 are consumers, 64 rows of the tile each: they take
  registers (setmaxnreg.inc) and per K step wait(full) -> wgmma over BK ->
  wait for the previous step's wgmma group -> arrive(empty) for the previous
  step's slot (one group stays in flight); then run the epilogue straight
  from the accumulator registers (`nv.wgacc_load` / `nv.wgacc_store`);
* persistence: both roles loop over the logical grid (`nv.logical_grid`)
  from blockIdx.x in steps of gridDim.x, in grouped order (`group_m` rows of
  tiles at a time, so a wave reuses A and B tiles from L2); `tile.program_id`
  becomes the tile's coordinates. A running step counter gives every K step
  its slot (counter % stages) and barrier phase ((counter / stages) % 2),
  the same sequence in both roles.

Anything else with wgmma fragments is refused with NV_WGMMA_UNSUPPORTED
naming the op and what would work; a wgmma fragment on a target other than
sm_90a is NV_ARCH_UNSUPPORTED. A kernel without wgmma fragments is left
byte-identical (the pass is a no-op on sm_80 / sm_90 pipelines).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, math, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from tessera.ir import diagnostics as D
from tessera.ir import nv_hopper_ops as H
from tessera.ir import nv_ops as nv
from tessera.ir import tile_ops as T
from tessera.ir.fragment_ops import (AllocOp, AsyncCopyOp, FragmentMmaOp, FragmentPackOp, FragmentStoreOp,
                                     FragmentUnpackOp, FragmentZeroOp, ViewOp, WaitOp)
from tessera.ir.types import TileType, type_name
from tessera.passes.arch import parse_arch
from tessera.passes.pipeline import register_pass

MAX_STAGES = 8
SMEM_LIMIT = 227 * 1024
PRODUCER_REGS, CONSUMER_REGS = 40, 232  # 128*40 + 256*232 <= 64K registers (two consumer warpgroups)
WG_ROWS = 64  # rows of the tile one consumer warpgroup owns (wgmma's m64)


def refuse(op: Operation, message: str, hint: str | None = None) -> D.TesseraError:
    return D.TesseraError(D.NV_WGMMA_UNSUPPORTED, message, op=op,
                          hint=hint or "write the kernel as one K-loop of tile.load + tile.dot (B loaded as [N, K] "
                                       "and transposed) followed by an elementwise epilogue, or target sm_90")


@dataclass
class Operand:
    """One staged operand: its shared tile and the copy (global view) that fills it every K step."""

    alloc: AllocOp
    copy: AsyncCopyOp
    view: ViewOp

    @property
    def rows(self) -> int:
        return self.alloc.result.type.get_shape()[0]

    @property
    def memref(self) -> SSAValue:
        return self.view.source


@dataclass
class KLoop:
    """What `match` found: the K-loop, its mma and operands, and the ops before and after it."""

    loop: scf.ForOp
    mma: FragmentMmaOp
    a: Operand
    b: Operand
    prologue: list[Operation]
    epilogue: list[Operation]
    bm: int
    bn: int
    bk: int
    dtype: object

    @property
    def consumers(self) -> int:
        return self.bm // WG_ROWS


def _operand(pack: Operation, loop: scf.ForOp, role: str, layout: str) -> Operand:
    if not isinstance(pack, FragmentPackOp):
        raise refuse(loop, f"the wgmma {role} operand is not packed from a staged shared tile")
    frag = pack.result.type
    if frag.layout.data != layout:
        raise refuse(pack, f"the wgmma {role} operand has layout \"{frag.layout.data}\"; this lowering reads {role} "
                           f"K-major (layout \"{layout}\")",
                     "load B as [N, K] and transpose it in the tile program (TRANS_B=True): MN-major B "
                     "descriptors are not implemented" if role == "b" else None)
    alloc = pack.source.owner
    if not isinstance(alloc, AllocOp):
        raise refuse(pack, f"the wgmma {role} operand is packed from registers; wgmma reads shared memory")
    copies = [u.operation for u in alloc.result.uses if isinstance(u.operation, AsyncCopyOp)]
    if len(copies) != 1 or copies[0].parent is not loop.body.block:
        raise refuse(pack, f"the {role} tile must be filled by exactly one copy inside the K-loop")
    copy = copies[0]
    view = copy.source.owner
    if not isinstance(view, ViewOp) or not isinstance(view.source.type, MemRefType):
        raise refuse(copy, f"the {role} copy does not read a view of a kernel argument")
    if len(view.source.type.get_shape()) != 2 or len(view.offsets) != 2:
        raise refuse(copy, f"the {role} operand comes from a rank-{len(view.source.type.get_shape())} memref; TMA "
                           "boxes here are 2-D")
    if copy.padding.value.data != 0.0:
        raise refuse(copy, f"the {role} load pads with {copy.padding.value.data}; TMA fills out-of-bounds with 0")
    return Operand(alloc, copy, view)


_BODY_OK = (ViewOp, AsyncCopyOp, WaitOp, FragmentPackOp, FragmentMmaOp, scf.YieldOp)


def match(kernel: func.FuncOp, mma: FragmentMmaOp) -> KLoop:
    loop = mma.parent_op()
    entry = kernel.body.block
    if not isinstance(loop, scf.ForOp) or loop.parent is not entry:
        raise refuse(mma, "the wgmma mma is not in a K-loop at the top level of the kernel")
    body = loop.body.block
    if len(loop.iter_args) != 1 or mma.acc is not body.args[1] or body.last_op.operands[0] is not mma.result:
        raise refuse(loop, "the K-loop must carry exactly the mma's accumulator (other loop-carried values are "
                           "not supported here)")
    if not isinstance(loop.iter_args[0].owner, FragmentZeroOp):
        raise refuse(loop, "the accumulator must start at zero (tl.zeros); an incoming accumulator is not "
                           "supported by this lowering")
    for op in body.ops:
        if not isinstance(op, _BODY_OK) and not _is_scalar(op):
            raise refuse(op, f"{op.name} in the K-loop: the warp-specialised loop takes copies, packs, one mma "
                             "and index math")
    a = _operand(mma.a.owner, loop, "a", "row")
    b = _operand(mma.b.owner, loop, "b", "col")
    fa, fb = mma.a.type, mma.b.type
    bm, bk = a.alloc.result.type.get_shape()
    bn, bk_b = b.alloc.result.type.get_shape()
    dtype = fa.elem
    wm, wn = (v.data for v in mma.a.owner.warps.data)
    if bk != bk_b or fb.n.data != bn or wn != 1 or bm != WG_ROWS * wm or fa.m.data != WG_ROWS:
        raise refuse(mma, f"tiles A {bm}x{bk}, B {bn}x{bk_b} on warpgroups [{wm}, {wn}]: this lowering needs one "
                          "warpgroup per 64 rows of A and the whole N (<= 256) in each", "use BN <= 256")
    if type_name(dtype) not in H.WGMMA_TYPES or bk % 16:
        raise refuse(mma, f"wgmma takes bf16/f16 with K a multiple of 16, got {type_name(dtype)} and BK={bk}")
    if bm // WG_ROWS not in (1, 2):
        raise refuse(mma, f"BM={bm}: this lowering runs one or two consumer warpgroups (BM = 64 or 128)")
    ops = list(entry.ops)
    at = ops.index(loop)
    prologue, epilogue = ops[:at], [op for op in ops[at + 1:] if not isinstance(op, func.ReturnOp)]
    for op in prologue:
        if not (_is_scalar(op) or isinstance(op, (AllocOp, FragmentZeroOp, T.ProgramIdOp, T.NumProgramsOp))):
            raise refuse(op, f"{op.name} before the K-loop: only index math, program ids and allocations may "
                             "come first")
    return KLoop(loop, mma, a, b, prologue, epilogue, bm, bn, bk, dtype)


def _is_scalar(op: Operation) -> bool:
    return (op.dialect_name() in ("arith", "math") or isinstance(op, memref.DimOp)) and not op.regions


def _index(ops: list, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    ops.append(c)
    return c.result


def _binary(ops: list, cls, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
    if isinstance(rhs, int):
        rhs = _index(ops, rhs)
    op = cls(lhs, rhs)
    ops.append(op)
    return op.result


def _swizzle(row_bytes: int) -> int:
    for s in (128, 64, 32):
        if row_bytes >= s:
            return s
    return 0


@dataclass
class Layout:
    """Byte offsets of the shared-memory map and the TMA box geometry."""

    stages: int
    a_stage: int
    b_stage: int
    swizzle: int
    box_cols: int

    @property
    def a_base(self) -> int:
        return 0

    @property
    def b_base(self) -> int:
        return self.stages * self.a_stage

    @property
    def full(self) -> int:
        return self.b_base + self.stages * self.b_stage

    @property
    def empty(self) -> int:
        return self.full + 8 * self.stages

    @property
    def total(self) -> int:
        return self.empty + 8 * self.stages


class Builder:
    """Builds the new kernel body from a matched K-loop (see the module docstring)."""

    def __init__(self, kl: KLoop, stages: int, group_m: int):
        self.kl, self.group_m = kl, group_m
        eb = 2
        sw = _swizzle(kl.bk * eb)
        if sw == 0:
            raise refuse(kl.mma, f"BK={kl.bk}: a K step must be at least 32 bytes (16 elements) for TMA swizzling")
        self.lay = Layout(stages, kl.bm * kl.bk * eb, kl.bn * kl.bk * eb, sw, sw // eb)
        if self.lay.total > SMEM_LIMIT:
            raise D.TesseraError(D.NV_SMEM_OVERFLOW, f"{stages} stages of A {kl.bm}x{kl.bk} and B {kl.bn}x{kl.bk} "
                                                     f"need {self.lay.total} bytes of shared memory; sm_90a has "
                                                     f"{SMEM_LIMIT}", op=kl.mma,
                                 hint="use fewer stages or a smaller BK")
        self.grid_axes = 1 + max([op.axis.data for op in kl.prologue
                                  if isinstance(op, (T.ProgramIdOp, T.NumProgramsOp))] + [1])

    # -- the kernel body --------------------------------------------------------------
    def body(self) -> list[Operation]:
        lay, kl = self.lay, self.kl
        ops: list[Operation] = [H.MbarrierInitOp(lay.full, lay.stages, 1),
                                H.MbarrierInitOp(lay.empty, lay.stages, kl.consumers)]
        tid = H.ThreadIdOp()
        ops.append(tid)
        wg = _binary(ops, arith.DivSIOp, tid.result, 128)
        is_producer = arith.CmpiOp(wg, _index(ops, 0), "eq")
        ops.append(is_producer)
        ops.append(scf.IfOp(is_producer, [], [*self.producer(tid.result), scf.YieldOp()],
                            [*self.consumer(wg), scf.YieldOp()]))
        return ops

    def producer(self, tid: SSAValue) -> list[Operation]:
        ops: list[Operation] = []
        if self.kl.consumers > 1:
            ops.append(H.SetMaxNRegOp(PRODUCER_REGS, "dec"))
        first = arith.CmpiOp(tid, _index(ops, 0), "eq")
        ops.append(first)
        ops.append(scf.IfOp(first, [], [*self.tiles("producer", None), scf.YieldOp()]))
        return ops

    def consumer(self, wg: SSAValue) -> list[Operation]:
        ops: list[Operation] = []
        if self.kl.consumers > 1:
            ops.append(H.SetMaxNRegOp(CONSUMER_REGS, "inc"))
        c = _binary(ops, arith.SubiOp, wg, 1)
        return ops + self.tiles("consumer", c)

    def tiles(self, role: str, consumer: SSAValue | None) -> list[Operation]:
        """The persistent loop over logical tiles, in grouped order, carrying the K-step counter."""
        ops: list[Operation] = []
        grid = [H.LogicalGridOp(a) for a in range(self.grid_axes)]
        ops += grid
        total = grid[0].result
        for g in grid[1:]:
            total = _binary(ops, arith.MuliOp, total, g.result)
        bid, ncta = nv.BlockIdOp(0), nv.GridDimOp(0)
        ops += [bid, ncta]
        block = Block(arg_types=[IndexType(), IndexType()])
        t, it = block.args
        inner: list[Operation] = []
        pids = self.raster(inner, t, [g.result for g in grid])
        mapping: dict[SSAValue, SSAValue] = {}
        for op in self.kl.prologue:
            if isinstance(op, T.ProgramIdOp):
                mapping[op.result] = pids[op.axis.data]
            elif isinstance(op, T.NumProgramsOp):
                mapping[op.result] = grid[op.axis.data].result
            elif _is_scalar(op):
                inner.append(op.clone(value_mapper=mapping))
        it_out = self.k_loop(inner, role, it, mapping, consumer)
        inner.append(scf.YieldOp(it_out))
        block.add_ops(inner)
        zero = _index(ops, 0)
        ops.append(scf.ForOp(bid.result, total, ncta.result, [zero], block))
        return ops

    def raster(self, ops: list, t: SSAValue, grid: list[SSAValue]) -> list[SSAValue]:
        """Program ids of linear tile `t`: axes beyond 1 outermost, then groups of `group_m` rows of tiles."""
        pids: list[SSAValue] = [t] * len(grid)
        plane = _binary(ops, arith.MuliOp, grid[0], grid[1])
        rest = t
        if len(grid) > 2:
            outer = _binary(ops, arith.DivSIOp, t, plane)
            rest = _binary(ops, arith.RemSIOp, t, plane)
            for axis in range(2, len(grid)):
                pids[axis] = _binary(ops, arith.RemSIOp, outer, grid[axis])
                outer = _binary(ops, arith.DivSIOp, outer, grid[axis])
        width = _binary(ops, arith.MuliOp, grid[1], self.group_m)
        group = _binary(ops, arith.DivSIOp, rest, width)
        first = _binary(ops, arith.MuliOp, group, self.group_m)
        left = _binary(ops, arith.SubiOp, grid[0], first)
        size = _binary(ops, arith.MinSIOp, left, self.group_m)
        within = _binary(ops, arith.RemSIOp, rest, width)
        pids[0] = _binary(ops, arith.AddiOp, first, _binary(ops, arith.RemSIOp, within, size))
        pids[1] = _binary(ops, arith.DivSIOp, within, size)
        return pids

    def k_loop(self, ops: list, role: str, it: SSAValue, mapping: dict, consumer: SSAValue | None) -> SSAValue:
        kl, lay = self.kl, self.lay
        loop = kl.loop
        acc_t = nv.vec(kl.bn // 2, nv.f32)
        carried = [it]
        if role == "consumer":
            zero = nv.FillOp(0.0, acc_t)
            ops.append(zero)
            carried.append(zero.result)
        block = Block(arg_types=[IndexType()] + [v.type for v in carried])
        k, step_it = block.args[0], block.args[1]
        body_map = dict(mapping)
        body_map[loop.body.block.args[0]] = k
        inner: list[Operation] = []
        for op in loop.body.block.ops:
            if _is_scalar(op):
                inner.append(op.clone(value_mapper=body_map))
        stage = _binary(inner, arith.RemSIOp, step_it, lay.stages)
        phase = _binary(inner, arith.RemSIOp, _binary(inner, arith.DivSIOp, step_it, lay.stages), 2)
        if role == "producer":
            free = _binary(inner, arith.SubiOp, _index(inner, 1), phase)
            inner.append(H.MbarrierWaitOp(stage, free, lay.empty))
            inner.append(H.MbarrierExpectTxOp(stage, lay.full, lay.a_stage + lay.b_stage))
            for opnd, base, stage_bytes in ((kl.a, lay.a_base, lay.a_stage), (kl.b, lay.b_base, lay.b_stage)):
                row, col = (body_map.get(v, mapping.get(v, v)) for v in opnd.view.offsets)
                for j in range(kl.bk // lay.box_cols):
                    c = col if j == 0 else _binary(inner, arith.AddiOp, col, j * lay.box_cols)
                    inner.append(H.TmaLoadOp(opnd.memref, row, c, stage, dst=base + j * opnd.rows * lay.swizzle,
                                             stage_bytes=stage_bytes, bar=lay.full, box=(opnd.rows, lay.box_cols),
                                             swizzle=lay.swizzle))
            results = [_binary(inner, arith.AddiOp, step_it, 1)]
        else:
            # One wgmma group stays in flight across K steps: after issuing step i, wait until step i-1's group
            # is done and only then hand its slot back to the producer (the first step of a tile has none).
            acc = block.args[2]
            inner.append(H.MbarrierWaitOp(stage, phase, lay.full))
            mma = H.WgmmaOp(acc, stage, consumer, n=kl.bn, k=kl.bk, dtype=kl.dtype,
                            a=(lay.a_base, lay.a_stage, kl.bm, WG_ROWS * lay.swizzle),
                            b=(lay.b_base, lay.b_stage, kl.bn), swizzle=lay.swizzle)
            done = H.WgmmaWaitOp(mma.result, 1)
            inner += [mma, done]
            started = arith.CmpiOp(step_it, it, "ne")
            inner.append(started)
            release: list[Operation] = []
            before = _binary(release, arith.SubiOp, step_it, 1)
            prev = _binary(release, arith.RemSIOp, before, lay.stages)
            release += [H.MbarrierArriveOp(prev, lay.empty), scf.YieldOp()]
            inner.append(scf.IfOp(started, [], release))
            results = [_binary(inner, arith.AddiOp, step_it, 1), done.result]
        inner.append(scf.YieldOp(*results))
        block.add_ops(inner)
        lb, ub, st = (body_map.get(v, mapping.get(v, v)) for v in (loop.lb, loop.ub, loop.step))
        new_loop = scf.ForOp(lb, ub, st, carried, block)
        ops.append(new_loop)
        if role == "consumer":
            drained = H.WgmmaWaitOp(new_loop.results[1], 0)
            ran = arith.CmpiOp(new_loop.results[0], it, "ne")
            release = []
            last = _binary(release, arith.RemSIOp, _binary(release, arith.SubiOp, new_loop.results[0], 1), lay.stages)
            release += [H.MbarrierArriveOp(last, lay.empty), scf.YieldOp()]
            ops += [drained, ran, scf.IfOp(ran, [], release)]
            Epilogue(kl, consumer, mapping).lower(ops, drained.result)
        return new_loop.results[0]


class Epilogue:
    """The ops after the K-loop, on one consumer's 64 x BN rows, kept in the accumulator's registers."""

    def __init__(self, kl: KLoop, consumer: SSAValue, mapping: dict):
        self.kl, self.consumer, self.map = kl, consumer, mapping

    def slots(self, elem) -> object:
        return nv.vec(self.kl.bn // 2, elem)

    def tile_ok(self, op: Operation, t) -> bool:
        """[BM, BN] tiles and [1, BN] rows (kept broadcast) are what the epilogue can hold."""
        if not isinstance(t, TileType):
            return True
        shape = tuple(t.get_shape())
        if shape not in ((self.kl.bm, self.kl.bn), (1, self.kl.bn)):
            raise refuse(op, f"{op.name} on a {'x'.join(map(str, shape))} tile: the wgmma epilogue holds "
                             f"{self.kl.bm}x{self.kl.bn} tiles and 1x{self.kl.bn} rows")
        return True

    def lower(self, ops: list, acc: SSAValue) -> None:
        m = self.map
        m[self.kl.loop.results[0]] = acc
        row_off = None

        def rows(op, row: SSAValue, full: bool) -> SSAValue:
            nonlocal row_off
            if not full:
                return m.get(row, row)
            if row_off is None:
                row_off = _binary(ops, arith.MuliOp, self.consumer, WG_ROWS)
            return _binary(ops, arith.AddiOp, m.get(row, row), row_off)

        for op in self.kl.epilogue:
            for v in op.results:
                self.tile_ok(op, v.type)
            get = lambda v: m.get(v, v)  # noqa: E731
            if isinstance(op, FragmentUnpackOp):
                m[op.result] = get(op.source)
            elif isinstance(op, FragmentStoreOp):
                r, c = op.offsets
                ops.append(H.WgaccStoreOp(get(op.value), op.dest, rows(op, r, True), get(c), self.kl.bn))
            elif isinstance(op, T.ElementwiseOp):
                new = nv.MapOp(op.name.split(".", 1)[1], *[get(a) for a in op.args],
                               result_type=self.slots(op.result.type.element_type))
                ops.append(new)
                m[op.result] = new.result
            elif isinstance(op, T.SplatOp):
                new = nv.SplatOp(get(op.scalar), self.slots(op.result.type.element_type))
                ops.append(new)
                m[op.result] = new.result
            elif isinstance(op, T.ConstantOp):
                new = nv.FillOp(op.value.value.data, self.slots(op.result.type.element_type))
                ops.append(new)
                m[op.result] = new.result
            elif isinstance(op, T.ConvertOp):
                new = nv.ConvertOp(get(op.source), self.slots(op.result.type.element_type))
                ops.append(new)
                m[op.result] = new.result
            elif isinstance(op, T.BroadcastOp):
                if tuple(op.source.type.get_shape()) != (1, self.kl.bn):
                    raise refuse(op, "the wgmma epilogue broadcasts only [1, BN] rows over the tile")
                m[op.result] = get(op.source)
            elif isinstance(op, T.LoadOp):
                if len(op.offsets) != 2:
                    raise refuse(op, "epilogue loads read 2-D memrefs")
                r, c = op.offsets
                full = tuple(op.result.type.get_shape()) == (self.kl.bm, self.kl.bn)
                new = H.WgaccLoadOp(op.source, rows(op, r, full), get(c), self.kl.bn, broadcast_rows=not full,
                                    pad=op.padding.value.data)
                ops.append(new)
                m[op.result] = new.result
            elif isinstance(op, T.StoreOp):
                if len(op.offsets) != 2 or tuple(op.value.type.get_shape()) != (self.kl.bm, self.kl.bn):
                    raise refuse(op, f"the wgmma epilogue stores whole {self.kl.bm}x{self.kl.bn} tiles of 2-D memrefs")
                r, c = op.offsets
                ops.append(H.WgaccStoreOp(get(op.value), op.dest, rows(op, r, True), get(c), self.kl.bn))
            elif _is_scalar(op):
                ops.append(op.clone(value_mapper=m))
            else:
                raise refuse(op, f"{op.name} in the epilogue of a wgmma kernel: the register epilogue takes "
                                 "elementwise ops, converts, splats, constants, [1, N] broadcasts, loads and stores")


def lower_kernel(kernel: func.FuncOp, mma: FragmentMmaOp, stages: int, group_m: int) -> None:
    kl = match(kernel, mma)
    builder = Builder(kl, stages, group_m)
    new_ops = builder.body()
    block = kernel.body.block
    ret = block.last_op
    for op in reversed([op for op in block.ops if op is not ret]):
        op.detach()
        op.drop_all_references()
    for op in list(block.ops):
        if op is not ret:
            op.erase(safe_erase=False)
    block.insert_ops_before(new_ops, ret)
    kernel.attributes["nv.num_threads"] = IntegerAttr(128 * (1 + kl.consumers), i64)
    kernel.attributes["nv.smem_bytes"] = IntegerAttr(builder.lay.total, i64)
    kernel.attributes["nv.arch"] = StringAttr("sm_90a")


@register_pass
@dataclass(frozen=True)
class WarpSpecialize(ModulePass):
    """Lower a wgmma K-loop kernel to a persistent, warp-specialised sm_90a kernel fed by TMA and mbarriers.

    Options:
        arch: the target; only sm_90a kernels (wgmma fragments) change, others stay byte-identical.
        stages: depth of the TMA ring (shared-memory slots of A and B), 1 to 8.
        group_m: rows of tiles a persistent CTA wave walks before moving right (L2 reuse).
    """

    name = "warp-specialize"

    arch: str
    stages: int = 4
    group_m: int = 8

    def __post_init__(self) -> None:
        parse_arch(self.arch)
        for name, v, hi in (("stages", self.stages, MAX_STAGES), ("group_m", self.group_m, 64)):
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= hi:
                raise ValueError(f"warp-specialize: {name}={v} must be an integer from 1 to {hi}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = parse_arch(self.arch)
        for kernel in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            mmas = [m for m in kernel.walk() if isinstance(m, FragmentMmaOp) and m.a.type.family.data == "wgmma"]
            if not mmas:
                continue
            if arch.name != "sm_90a":
                raise D.TesseraError(D.NV_ARCH_UNSUPPORTED, f"tile.fragment_mma on wgmma fragments needs sm_90a "
                                                            f"exactly; the target is {arch}", op=mmas[0],
                                     hint="run tile-to-fragments with the same arch (mma_sync on sm_80..sm_90)")
            if len(mmas) != 1:
                raise refuse(mmas[1], f"{len(mmas)} wgmma mmas in @{kernel.sym_name.data}: this lowering takes one")
            try:
                lower_kernel(kernel, mmas[0], self.stages, self.group_m)
            except D.TesseraError:
                raise
            except Exception as err:  # noqa: BLE001 - an internal error still gets a code and a location
                from tessera.ir.verify import wrap_unexpected
                raise wrap_unexpected(err, D.NV_WGMMA_UNSUPPORTED, op=kernel) from err
