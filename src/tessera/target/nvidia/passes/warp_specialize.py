"""warp-specialize{arch stages group_m schedule cluster multicast store splitk streamk overlap tiles fixup}: a
kernel whose top-level loop issues wgmma mmas -> a persistent, warp-specialised sm_90a nv kernel.

One lowering for every such kernel, GEMM and attention alike (`ws_body`; what it found is `ws_match.Body`):

Input: what tile-to-fragments{arch=sm_90a} makes of a tile program: one top-level `scf.for` whose body copies
global windows into shared tiles (`tile.view` + `tile.async_copy`: in the loop, a TMA ring; before it, once per
tile), packs wgmma operands from them (each K-major or MN-major) or from register tiles (A only: wgmma's RS form),
runs any number of `tile.fragment_mma` on any number of carried accumulators (zero or not) and register tile math
(softmax: `ws_regs`); scalar index math before the loop; after it an epilogue of register tile ops, loads and
stores.

Output (nv IR, one thread's view; see `tessera.target.nvidia.ir.hopper_ops`):

* shared memory (`ws_match._plan_smem`): the staged tiles' slots in the canonical swizzled layouts (`stages` per
  ring operand), the TMA store staging (store=tma: 16 KiB per consumer), then the mbarriers: a full/empty pair per
  group of operands the program waits for together, turn barriers (whole-tile ping-pong), split-K verdict words;
* warpgroup 0 is the producer: it gives registers back (setmaxnreg.dec) and its thread 0 walks the tiles
  (`ws_walk.TileWalk`, the raster of `ws_units`) issuing each fixed operand's TMA once per tile and, per loop
  step, wait(empty) -> expect_tx(full) -> TMA loads of each ring group;
* warpgroups 1..3 are consumers (setmaxnreg.inc), each holding one 64-row block of a tile (two at BM = 256, the
  whole tile with whole-tile ping-pong; one `ws_regs.Regs` per block): per step they wait(full), issue the
  wgmmas, run the register math and free each slot once the last wgmma reading it is done. A loop that only
  accumulates (a GEMM K-loop, a gated MLP's two projections) keeps a step's wgmma groups in flight across the back
  edge; another loop (attention) is rotated by one step so the next step's first wgmmas run under this step's
  softmax (`ws_overlap`), and tiles overlap the same way (`ws_tile_overlap`); then the epilogue from the
  registers (stores, or `nv.wgacc_store_tma` through the staging);
* persistence: both roles loop over the logical grid (`nv.logical_grid`) from blockIdx.x in steps of gridDim.x,
  in grouped order; a running step counter gives every step its ring slot and phase, the same in both roles;
  tiles=dynamic deals tiles from a launch-wide counter (`ws_sched`);
* schedule=pingpong: on a loop that only accumulates, two consumers take alternate whole tiles and hand the ring
  over through the turn barriers (one's epilogue under the other's loop); on any other loop the consumers share
  each tile and take turns at issuing a step's wgmmas (warp-scheduler barriers);
* cluster=2: CTA pairs walk pairs of tile rows (columns with multicast=a); a ring operand both read is loaded half
  per CTA and multicast; its slots are released on both CTAs; cluster syncs bracket the kernel. With multicast=k
  (a loop of one accumulating wgmma) the pair takes one tile and splits its K steps: rank 1 sends its accumulator
  into rank 0's shared memory (`nv.cluster_splitk_fixup`: st.async onto an mbarrier), rank 0 adds and stores;
* splitk=S / streamk=1 (a loop of one accumulating wgmma): a tile's K steps are split among units of work that
  meet in the runtime's scratch buffer (`nv.splitk_fixup` / `nv.streamk_fixup`); the last piece runs the epilogue
  (split-K with fixup=scatter: each split, once all have arrived, sums and stores its own columns).

Anything else with wgmma fragments is refused with NV_WGMMA_UNSUPPORTED naming the op and what would work; a wgmma
fragment on a target other than sm_90a is NV_ARCH_UNSUPPORTED. A kernel without wgmma fragments is left
byte-identical (the pass is a no-op on sm_80 / sm_90 pipelines).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import FragmentMmaOp
from tessera.target.arch import parse_arch
from tessera.passes.pipeline import register_pass
from tessera.target.nvidia.passes.ws_body import lower_body
from tessera.target.nvidia.passes.ws_sched import TILES

from tessera.target.nvidia.knobs import (CLUSTERS, FIXUPS, MAX_SPLITK, MAX_STAGES, MULTICASTS, SCHEDULES,  # noqa: F401, E402
                                         STORES)


@register_pass
@dataclass(frozen=True)
class WarpSpecialize(ModulePass):
    """Lower a kernel whose loop issues wgmmas to a persistent, warp-specialised sm_90a kernel fed by TMA and
    mbarriers.

    Options:
        arch: the target; only sm_90a kernels (wgmma fragments) change, others stay byte-identical.
        stages: depth of the TMA ring (shared-memory slots of A and B), 1 to 12 (MAX_STAGES).
        group_m: rows of tiles a persistent CTA wave walks before moving right (L2 reuse).
        schedule: cooperative (both consumer warpgroups share each tile, 64 rows each, or 128 at BM=256) or
            pingpong. On a loop that only accumulates (a GEMM K-loop), each of two consumers owns whole tiles,
            alternating, so one's epilogue overlaps the other's main loop (BM=128; its accumulators must fit one
            consumer's registers: BN <= 160 for one wgmma); on any other loop (attention)
            the consumers share each tile and take turns at issuing each step's wgmmas (warp-scheduler barriers,
            ws_body), so one's softmax runs under another's GEMMs (BM=128 or 192).
        cluster: CTAs per thread-block cluster, 1 or 2. With 2, the CTAs of a cluster take two tiles of one
            column (rows 2p and 2p+1) and each loads half of the shared B tile, multicast to both: a third
            less L2 -> shared-memory traffic at 128x256 tiles.
        multicast: with cluster=2, the operand the pair shares: b (tile rows 2p and 2p+1 of one column, B
            multicast) or a (tile columns 2q and 2q+1 of one row, A multicast: for few tile rows, M small),
            or k: both CTAs take the same tile, each half of its K steps, and rank 1's accumulator reaches rank
            0 through distributed shared memory (twice the CTAs per tile with no global scratch, fence or
            counter: for decode shapes with fewer tiles than SMs). Not with splitk > 1 or streamk.
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
            with 0 each wgmma is waited for where it is issued. A loop that only accumulates keeps its groups in
            flight across steps instead, and ping-pong's turns wait at once, so neither reads it.
        tiles: static (CTA c of P runs tiles c, c + P, ...) or dynamic (after its first, a CTA takes the next
            tile from a launch-wide counter, so CTAs that drew cheap tiles run more of them: for tiles of
            unequal cost, such as causal attention's). Not with cluster=2, streamk=1, or whole-tile pingpong
            (its consumers alternate the tiles of a static walk).
        fixup: with splitk > 1, gather (the last split to arrive sums all of them and runs the epilogue) or
            scatter (every split waits for all of its tile's splits, then sums its own 1/S of the tile's columns
            and stores them through the TMA boxes of that window: the sum's reads spread over S SMs instead of
            one). Scatter needs every CTA resident at once (the kernel is marked nv.coresident and the runtime
            launches it cooperatively) and consecutive units per tile on a static walk; cooperative schedule,
            cluster 1, and an epilogue whose one store is the TMA-staged accumulator tile.
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
    fixup: str = "gather"

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
                             "(what a 2-CTA cluster shares: operand b, operand a, or k: a tile's K steps)")
        if self.multicast == "k" and self.cluster == 1:
            raise ValueError("warp-specialize: multicast=k with cluster=1: the CTAs of a 2-CTA cluster split a tile's "
                             "K steps; give cluster=2")
        if self.streamk not in (0, 1) or isinstance(self.streamk, bool):
            raise ValueError(f"warp-specialize: streamk={self.streamk} must be 0 or 1")
        if self.overlap not in (0, 1) or isinstance(self.overlap, bool):
            raise ValueError(f"warp-specialize: overlap={self.overlap} must be 0 or 1")
        if self.store not in STORES:
            raise ValueError(f"warp-specialize: store={self.store} is not one of {', '.join(STORES)}")
        if self.tiles not in TILES:
            raise ValueError(f"warp-specialize: tiles={self.tiles} is not one of {', '.join(TILES)}")
        if self.fixup not in FIXUPS:
            raise ValueError(f"warp-specialize: fixup={self.fixup} is not one of {', '.join(FIXUPS)}")

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
                lower_body_kernel(kernel, mmas, self.stages, self.group_m, self.schedule == "pingpong",
                                  bool(self.overlap), self.tiles, self.store, self.cluster, self.multicast,
                                  self.splitk, bool(self.streamk), self.fixup)
            except D.TesseraError:
                raise
            except Exception as err:  # noqa: BLE001 - an internal error still gets a code and a location
                from tessera.ir.verify import wrap_unexpected
                raise wrap_unexpected(err, D.NV_WGMMA_UNSUPPORTED, op=kernel) from err


def lower_body_kernel(kernel: func.FuncOp, mmas: list, stages: int, group_m: int, pingpong: bool = False,
                      overlap: bool = True, tiles: str = "static", store: str = "registers", cluster: int = 1,
                      multicast: str = "b", splitk: int = 1, streamk: bool = False, fixup: str = "gather") -> None:
    builder = lower_body(kernel, mmas, stages, group_m, pingpong, overlap, tiles, store, cluster, multicast, splitk,
                         streamk, fixup)
    _replace_body(kernel, builder.body(), builder.consumers, builder.total)
    _launch_attributes(kernel, cluster, builder.pair_axis, splitk, streamk)  # pair_axis -1: the pair shares tiles
    if builder.scatter:  # its splits wait for each other: every CTA must be resident at once
        kernel.attributes["nv.coresident"] = IntegerAttr(1, i64)


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
