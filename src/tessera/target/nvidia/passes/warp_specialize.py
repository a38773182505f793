"""warp-specialize{arch stages group_m schedule cluster multicast store splitk streamk tiles}: a wgmma loop kernel -> a persistent,
warp-specialised sm_90a nv kernel.

Two lowerings, one road being finished: the general loop body (`ws_body`: any number of wgmmas, operands staged
in the loop or once per tile, register A, softmax in registers; attention, and every cooperative GEMM config, in
clusters of 1 or 2, either store, split-K or stream-K) and the GEMM builder (`ws_builder`, below), which a
GEMM-shaped K-loop still takes only for what the body does not have yet: whole-tile ping-pong and BM = 256
(`WarpSpecialize._needs_kloop_builder`). For the configs that moved the body emits the builder's SASS line for
line (tests/unit/test_gemm_on_general_body.py).

The GEMM builder's input: what tile-to-fragments{arch=sm_90a} makes of a GEMM-shaped tile
program (DESIGN section 2): one `scf.for` K-loop whose body copies two
global windows into shared tiles (`tile.view` + `tile.async_copy`), packs a
and b wgmma fragments from them (each K-major or MN-major: A as M x K or,
transposed, K x M; B as N x K transposed or K x N as a plain a@b has it) and
accumulates with `tile.fragment_mma` into a loop-carried accumulator that
starts at `fragment_zero`; scalar index math before the loop; after it, an
epilogue of elementwise tile ops, loads, broadcasts of [1, N] rows and
stores on the accumulator's tile.

Output (nv IR, one thread's view; see `tessera.target.nvidia.ir.hopper_ops`):

* shared memory (`ws_layout`; the unit raster is `ws_units`): `stages` slots of A and B in the canonical
  swizzled layouts (K-major, or MN-major read with imm-trans; TMA boxes of one swizzle row across the
  tile's contiguous dimension), the TMA store staging
  (store=tma), then the mbarrier arrays: `full` (TMA bytes landed) and
  `empty` (consumers done with the slot);
* warpgroup 0 is the producer: it gives registers back (setmaxnreg.dec) and
  its thread 0 walks the tiles issuing, per K step, wait(empty) ->
  expect_tx(full) -> TMA loads;
* warpgroups 1..2 (1..3 at BM = 192) are consumers, 64 rows of the tile each (128, two 64-row
  blocks, when BM = 256; ping-pong: whole tiles, alternating): they take
  registers (setmaxnreg.inc) and per K step wait(full) -> wgmma over BK ->
  wait for the previous step's wgmma group -> arrive(empty) for the previous
  step's slot (one group stays in flight; with stages=1 each step waits for
  its own group and frees its own slot, as the one slot is needed next); then run the epilogue from the
  accumulator registers (`nv.wgacc_load`; the output through shared memory
  and TMA stores, `nv.wgacc_store_tma`, or from registers, `nv.wgacc_store`);
* persistence: both roles loop over the logical grid (`nv.logical_grid`)
  from blockIdx.x in steps of gridDim.x, in grouped order (`group_m` rows of
  tiles at a time, so a wave reuses A and B tiles from L2); `tile.program_id`
  becomes the tile's coordinates. A running step counter gives every K step
  its slot (counter % stages) and barrier phase ((counter / stages) % 2),
  the same sequence in both roles; with tiles=dynamic a CTA's tiles after its first come from a launch-wide
  counter instead (`ws_sched`: the producer fetches, the consumers follow through shared memory);
* cluster=2: CTA pairs (`__cluster_dims__`) walk pairs of tile rows; each
  CTA loads half of the B box and multicasts it, consumers release a slot
  on both CTAs' `empty` barriers, and cluster syncs bracket the kernel;
  with multicast=a the pairs are tile columns and they share A instead
  (few tile rows: M small);
* splitk=S: the persistent loop walks S units per tile, unit (tile, s)
  running K steps [s * per, (s + 1) * per) of the tile's ceil(steps / S) =
  per; before the epilogue `nv.splitk_fixup` meets the tile's splits in the
  runtime's scratch buffer and only the last to arrive (per 64-row block)
  runs the epilogue on the sum: split-K in one launch, for grids with too
  few tiles to fill the GPU;
* streamk=1: the tiles of the last, partial wave (and one wave before it)
  share their K steps equally among the CTAs, which meet per tile in
  `nv.streamk_fixup` the same way (`ws_units` says who takes what).

Anything else with wgmma fragments is refused with NV_WGMMA_UNSUPPORTED
naming the op and what would work; a wgmma fragment on a target other than
sm_90a is NV_ARCH_UNSUPPORTED. A kernel without wgmma fragments is left
byte-identical (the pass is a no-op on sm_80 / sm_90 pipelines).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import FragmentMmaOp
from tessera.target.arch import parse_arch
from tessera.passes.pipeline import register_pass
from tessera.target.nvidia.passes.wgmma_kloop import KLOOP_OPS, is_scalar, match
from tessera.ir.fragment_ops import AllocOp, AsyncCopyOp, FragmentPackOp, FragmentZeroOp
from tessera.target.nvidia.passes.ws_body import lower_body
from tessera.target.nvidia.passes.ws_builder import MULTICASTS, Builder
from tessera.target.nvidia.passes.ws_sched import TILES

from tessera.target.nvidia.knobs import CLUSTERS, MAX_SPLITK, MAX_STAGES, SCHEDULES, STORES  # noqa: F401, E402


def lower_kernel(kernel: func.FuncOp, mma: FragmentMmaOp, stages: int, group_m: int,
                 schedule: str = "cooperative", cluster: int = 1, store: str = "tma", splitk: int = 1,
                 multicast: str = "b", streamk: bool = False, tiles: str = "static") -> None:
    kl = match(kernel, mma)
    builder = Builder(kl, stages, group_m, schedule, cluster, store, splitk, multicast, streamk, tiles)
    _replace_body(kernel, builder.body(), kl.consumers, builder.lay.total)
    _launch_attributes(kernel, cluster, builder.pair_axis, splitk, streamk)


@register_pass
@dataclass(frozen=True)
class WarpSpecialize(ModulePass):
    """Lower a wgmma K-loop kernel to a persistent, warp-specialised sm_90a kernel fed by TMA and mbarriers.

    Options:
        arch: the target; only sm_90a kernels (wgmma fragments) change, others stay byte-identical.
        stages: depth of the TMA ring (shared-memory slots of A and B), 1 to 8.
        group_m: rows of tiles a persistent CTA wave walks before moving right (L2 reuse).
        schedule: cooperative (both consumer warpgroups share each tile, 64 rows each, or 128 at BM=256) or
            pingpong. On a single-accumulator K-loop (the GEMM), each consumer owns whole tiles, alternating, so
            one's epilogue overlaps the other's main loop (BM=128, BN<=128); on a general loop body (attention)
            the consumers share each tile and take turns at issuing each step's wgmmas (warp-scheduler barriers,
            ws_body), so one's softmax runs under another's GEMMs (BM=128 or 192).
        cluster: CTAs per thread-block cluster, 1 or 2. With 2, the CTAs of a cluster take two tiles of one
            column (rows 2p and 2p+1) and each loads half of the shared B tile, multicast to both: a third
            less L2 -> shared-memory traffic at 128x256 tiles.
        multicast: with cluster=2, the operand the pair shares: b (tile rows 2p and 2p+1 of one column, B
            multicast) or a (tile columns 2q and 2q+1 of one row, A multicast: for few tile rows, M small).
        store: how the epilogue writes the output tile: tma (staged in shared memory, 64 x 64 boxes, bulk
            tensor stores that clip at the edges; used when the output is bf16/f16, BN a multiple of 64 and
            the 16 KiB per consumer warpgroup fit) or registers (4-byte stores straight from the accumulator).
        splitk: K splits per tile, 1 to 16. With S > 1 each tile is S units of work over S slices of its K
            steps, run by different CTAs at once; they meet in a runtime-owned scratch buffer and the last to
            finish runs the epilogue on the sum (deterministic: added in split order). For grids with fewer
            tiles than SMs and a long K.
        streamk: 0 or 1. With 1, the tiles that do not fill a whole wave of CTAs (with one wave before them)
            are not dealt out whole: their K steps are shared equally among all CTAs, which sum a tile's pieces
            as split-K does (deterministic for a given CTA count). It removes the idle SMs of a partial last
            wave; the runtime launches one CTA per SM. Not with splitk > 1.
        overlap: 0 or 1, for the general loop body (several wgmmas) with schedule=cooperative. With 1 the loop
            is rotated by one step and each wgmma is waited for at its result's first use, so the next step's
            leading wgmmas run under this step's tail (attention: the softmax of step j+1 under P(j) V(j));
            with 0 each wgmma is waited for where it is issued. The GEMM K-loop always keeps one group in
            flight, and ping-pong's turns wait at once, so neither reads it.
        tiles: static (CTA c of P runs tiles c, c + P, ...) or dynamic (after its first, a CTA takes the next
            tile from a launch-wide counter, so CTAs that drew cheap tiles run more of them: for tiles of
            unequal cost, such as causal attention's). Not with cluster=2, streamk=1, or a GEMM K-loop's
            pingpong (its consumers alternate the tiles of a static walk).
    """

    name = "warp-specialize"

    arch: str
    stages: int = 4
    group_m: int = 8
    schedule: str = "cooperative"
    cluster: int = 1
    multicast: str = "b"
    store: str = "tma"
    splitk: int = 1
    streamk: int = 0
    overlap: int = 1
    tiles: str = "static"

    def __post_init__(self) -> None:
        parse_arch(self.arch)
        for name, v, hi in (("stages", self.stages, MAX_STAGES), ("group_m", self.group_m, 64),
                            ("splitk", self.splitk, MAX_SPLITK)):
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= hi:
                raise ValueError(f"warp-specialize: {name}={v} must be an integer from 1 to {hi}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"warp-specialize: schedule={self.schedule} is not one of {', '.join(SCHEDULES)}")
        if self.cluster not in CLUSTERS or isinstance(self.cluster, bool):
            raise ValueError(f"warp-specialize: cluster={self.cluster} is not one of "
                             f"{', '.join(map(str, CLUSTERS))} (CTAs per thread-block cluster)")
        if self.multicast not in MULTICASTS:
            raise ValueError(f"warp-specialize: multicast={self.multicast} is not one of {', '.join(MULTICASTS)} "
                             "(the operand a 2-CTA cluster shares)")
        if self.streamk not in (0, 1) or isinstance(self.streamk, bool):
            raise ValueError(f"warp-specialize: streamk={self.streamk} must be 0 or 1")
        if self.overlap not in (0, 1) or isinstance(self.overlap, bool):
            raise ValueError(f"warp-specialize: overlap={self.overlap} must be 0 or 1")
        if self.store not in STORES:
            raise ValueError(f"warp-specialize: store={self.store} is not one of {', '.join(STORES)}")
        if self.tiles not in TILES:
            raise ValueError(f"warp-specialize: tiles={self.tiles} is not one of {', '.join(TILES)}")

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
            try:
                if _gemm_shaped(kernel, mmas) and self._needs_kloop_builder(mmas[0]):
                    lower_kernel(kernel, mmas[0], self.stages, self.group_m, self.schedule, self.cluster,
                                 self.store, self.splitk, self.multicast, bool(self.streamk), self.tiles)
                else:
                    lower_body_kernel(kernel, mmas, self.stages, self.group_m, self.schedule == "pingpong",
                                      bool(self.overlap), self.tiles, self.store, self.cluster, self.multicast,
                                      self.splitk, bool(self.streamk))
            except D.TesseraError:
                raise
            except Exception as err:  # noqa: BLE001 - an internal error still gets a code and a location
                from tessera.ir.verify import wrap_unexpected
                raise wrap_unexpected(err, D.NV_WGMMA_UNSUPPORTED, op=kernel) from err

    def _needs_kloop_builder(self, mma: FragmentMmaOp) -> bool:
        """Never: every GEMM config runs on the general body (the comparison harness forces the builder)."""
        return False


def _gemm_shaped(kernel: func.FuncOp, mmas: list) -> bool:
    """One mma whose operands are both staged in its loop: the GEMM K-loop (`wgmma_kloop`), with its options.
    Anything else (several mmas, an operand staged before the loop or in registers) is the general body."""
    if len(mmas) != 1:
        return False
    mma = mmas[0]
    loop = mma.parent_op()
    if not isinstance(loop, scf.ForOp):
        return True  # wgmma_kloop.match refuses it with the GEMM path's message
    body = loop.body.block
    if (len(loop.iter_args) != 1 or not isinstance(loop.iter_args[0].owner, FragmentZeroOp)
            or any(not isinstance(op, KLOOP_OPS) and not is_scalar(op) for op in body.ops)):
        return False  # an incoming accumulator, other carried values or tile math in the loop: the general body
    for opnd in (mmas[0].a, mmas[0].b):
        alloc = opnd.owner.source.owner if isinstance(opnd.owner, FragmentPackOp) else None
        if not isinstance(alloc, AllocOp) or not any(isinstance(u.operation, AsyncCopyOp)
                                                     and u.operation.parent is loop.body.block
                                                     for u in alloc.result.uses):
            return False
    return True


def lower_body_kernel(kernel: func.FuncOp, mmas: list, stages: int, group_m: int, pingpong: bool = False,
                      overlap: bool = True, tiles: str = "static", store: str = "registers", cluster: int = 1,
                      multicast: str = "b", splitk: int = 1, streamk: bool = False) -> None:
    builder = lower_body(kernel, mmas, stages, group_m, pingpong, overlap, tiles, store, cluster, multicast, splitk,
                         streamk)
    _replace_body(kernel, builder.body(), builder.consumers, builder.total)
    _launch_attributes(kernel, cluster, builder.pair_axis, splitk, streamk)


def _launch_attributes(kernel: func.FuncOp, cluster: int, pair_axis: int, splitk: int = 1,
                       streamk: bool = False) -> None:
    """What the runtime reads to launch it: a 2-CTA cluster (`__cluster_dims__`, the logical-grid axis it counts
    pairs along), tiles x splits units of work (split-K), a CTA per SM whatever the grid (stream-K)."""
    if cluster > 1:
        kernel.attributes["nv.cluster"] = IntegerAttr(cluster, i64)
        if pair_axis:
            kernel.attributes["nv.cluster_axis"] = IntegerAttr(pair_axis, i64)
    if splitk > 1:
        kernel.attributes["nv.splitk"] = IntegerAttr(splitk, i64)
    if streamk:
        kernel.attributes["nv.streamk"] = IntegerAttr(1, i64)


def _replace_body(kernel: func.FuncOp, new_ops: list, consumers: int, smem_bytes: int) -> None:
    """The kernel's ops (all but the return) become `new_ops`: a producer and `consumers` warpgroups."""
    block = kernel.body.block
    ret = block.last_op
    for op in reversed([op for op in block.ops if op is not ret]):  # users before what they use
        op.detach()
        op.drop_all_references()
    block.insert_ops_before(new_ops, ret)
    kernel.attributes["nv.num_threads"] = IntegerAttr(128 * (1 + consumers), i64)
    kernel.attributes["nv.smem_bytes"] = IntegerAttr(smem_bytes, i64)
    kernel.attributes["nv.arch"] = StringAttr("sm_90a")
