"""warp-specialize's persistent tile walk, shared by the producer and the consumers, and its helpers.

`TileWalk.tiles(role, consumer)` loops over the units of the logical grid (`ws_units`: grouped raster, 2-CTA
pairs, split-K, stream-K; `ws_sched` for tiles=dynamic) carrying the ring's step counter, and calls the builder's
`k_loop` for each tile; with whole-tile ping-pong the consumers take alternate tiles and each skips its partner's
steps in the counter, so both walk one ring. `ws_body.BodyBuilder` is the builder. The helpers: which CTAs read a
box (`pid_axes`, `read_once`), the 2-CTA multicast load (`multicast_halves`), a step's ring slot and phase
(`ring_slot`), the setmaxnreg split (`REGS`), and the refusals of knobs the walk cannot honour
(`refuse_dynamic`, `refuse_scatter`).
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, SSAValue

from tessera.ir import tile_ops as T
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir import ops as nv
from tessera.target.nvidia.passes.ws_common import binop, cmpi, index_const, refuse

LOCAL_TILE = object()  # mapping key: a tile's ordinal in this CTA, or (t, first, step) of a static loop to compute it
# setmaxnreg per consumer count: 128 * producer + 128 * consumers * consumer <= 64K registers (multiples of 8)
REGS = {2: (40, 232), 3: (32, 160)}  # one consumer keeps the even share (no setmaxnreg); 3: as FlashAttention-3


class TileWalk:
    """The persistent loop over a kernel's units of work; the builder (ws_body.BodyBuilder) provides `units`,
    `grid_axes`, `cluster`, `pingpong`, `sched`, `evict_hints` and `k_loop` (one tile's loop for a role)."""

    def tiles(self, role: str, consumer: SSAValue | None) -> list[Operation]:
        """The persistent loop over logical tiles, in grouped order, carrying the K-step counter.

        The producer and (cooperative) consumers visit every tile of the CTA; with
        schedule=pingpong consumer c takes every other one (c, c+2, ...) and skips
        the K steps of its partner's tiles in the counter, so both walk one ring.
        """
        ops: list[Operation] = []
        grid = [H.LogicalGridOp(a) for a in range(self.grid_axes)]
        ops += grid
        units, sizes = self.units, [g.result for g in grid]
        total = units.count(ops, sizes)
        if role == "producer":
            self.evict = self.evict_hints(ops, sizes)
        bid, ncta = nv.BlockIdOp(0), nv.GridDimOp(0)
        ops += [bid, ncta]
        bid, ncta = bid.result, ncta.result
        if self.cluster > 1:
            rank = H.ClusterRankOp()
            ops.append(rank)
            units.rank = rank.result
            bid = binop(ops, arith.DivSIOp, bid, self.cluster)
            ncta = binop(ops, arith.DivSIOp, ncta, self.cluster)
        first_unit, total, stride = units.walk(ops, total, bid, ncta)
        start, step, it0 = first_unit, stride, index_const(ops, 0)
        if self.sched is not None:
            def unit(inner: list, t: SSAValue, n: SSAValue, carried: list):
                mapping = units.setup(inner, t)
                mapping[LOCAL_TILE] = n
                return [self.k_loop(inner, role, carried[0], mapping, consumer)], None

            self.sched.walk(ops, role, start, total, ncta, [it0], unit)
            return ops
        alternate = role == "consumer" and self.pingpong
        if alternate:
            start = binop(ops, arith.AddiOp, first_unit, binop(ops, arith.MuliOp, consumer, stride))
            step = binop(ops, arith.MuliOp, stride, 2)
            first = units.trip(ops, units.setup(ops, first_unit))  # consumer 1 starts after unit 0's steps
            it0 = binop(ops, arith.MuliOp, consumer, first)
        block = Block(arg_types=[IndexType(), IndexType()])
        t, it = block.args
        inner: list[Operation] = []
        mapping = units.setup(inner, t)
        mapping[LOCAL_TILE] = (t, start, step)
        turn = None
        if alternate:  # this consumer's n-th tile (n = (t - bid - c*ncta) / (2*ncta)) waits for turn phase n + 1 - c
            mine = binop(inner, arith.DivSIOp, binop(inner, arith.SubiOp, t, start), step)
            turn = binop(inner, arith.RemSIOp, binop(inner, arith.SubiOp, binop(inner, arith.AddiOp, mine, 1),
                                                     consumer), 2)
        it_out = self.k_loop(inner, role, it, mapping, consumer, turn)
        if alternate:
            other = binop(inner, arith.AddiOp, t, stride)
            steps = units.trip(inner, units.setup(inner, other))
            real = arith.CmpiOp(other, total, "slt")
            skip = arith.SelectOp(real, steps, index_const(inner, 0))
            inner += [real, skip]
            it_out = binop(inner, arith.AddiOp, it_out, skip.result)
        inner.append(scf.YieldOp(it_out))
        block.add_ops(inner)
        ops.append(scf.ForOp(start, total, step, [it0], block))
        return ops

    def row_blocks(self, ops: list, consumer: SSAValue, blocks: int) -> list[SSAValue]:
        """The tile's 64-row blocks a consumer accumulates: all of them (pingpong: it owns whole tiles), else
        its own `blocks` consecutive ones (blocks * c + b; one block, c itself, for 64-row warpgroups)."""
        if self.pingpong:
            return [index_const(ops, b) for b in range(blocks)]
        if blocks == 1:
            return [consumer]
        first = binop(ops, arith.MuliOp, consumer, blocks)
        return [first] + [binop(ops, arith.AddiOp, first, b) for b in range(1, blocks)]


def refuse_dynamic(at, cluster: int = 1, streamk: bool = False, whole_tiles: bool = False) -> None:
    """tiles=dynamic hands out single units to single CTAs, in one sequence that every consumer follows."""
    for bad, what, hint in ((cluster > 1, f"cluster={cluster}: a cluster's CTAs take neighbouring tiles together",
                             "use cluster=1"),
                            (streamk, "streamk=1: stream-K deals every CTA a fixed share of the K steps",
                             "use tiles=static with streamk"),
                            (whole_tiles, "schedule=pingpong on a loop that only accumulates: its consumers take alternate "
                                          "tiles of a static walk", "use schedule=cooperative")):
        if bad:
            raise refuse(at, f"tiles=dynamic with {what}", hint)


def refuse_scatter(body, store, splitk: int, tiles: str, cluster: int, pingpong: bool) -> None:
    """fixup=scatter: split s of S, once every split of its tile has arrived, sums columns [s n / S, (s + 1) n / S)
    of each block and stores them through their TMA boxes. A split waits for the others, so it may wait only for
    units that are running or will run before anything waits on it: consecutive units of a static walk in one
    consumer's order (cooperative, cluster 1); and the epilogue's one store must be the staged accumulator tile
    `store` (the other columns of a split's registers hold only its own part)."""
    at, S = body.mmas[0].op, splitk
    hint = ("fixup=scatter takes splitk > 1, schedule=cooperative, cluster=1, tiles=static and an epilogue that "
            "stores one [BM, N] bf16/f16/f32 tile through TMA; or leave fixup at gather")
    clash = ("splitk=1: there are no splits to meet" if S == 1 else
             "schedule=pingpong: a consumer would wait for its splits while its partner holds the ring" if pingpong
             else f"cluster={cluster}" if cluster > 1 else "tiles=dynamic" if tiles == "dynamic" else
             "an epilogue whose store does not go through TMA (store=registers, a masked or extra store, a "
             "whole-tile load, or no room for the staging boxes)" if store is None else None)
    if clash:
        raise refuse(at, f"fixup=scatter with {clash}", hint)
    n = store.value.type.get_shape()[1] if isinstance(store, T.StoreOp) else store.value.type.n.data
    boxes = n // H.WgaccStoreTmaOp.box_cols(store.dest.type.element_type, n)
    if boxes % S:
        raise refuse(at, f"fixup=scatter with splitk={S}: the {n}-column tile is stored in {boxes} TMA boxes, "
                         f"which do not split evenly among {S} splits", hint)


def pid_axes(*values: SSAValue) -> set[int]:
    """The program-id axes that `values` depend on, through every op that computes them."""
    axes, seen, todo = set(), set(), list(values)
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = getattr(v, "op", None)
        if isinstance(owner, T.ProgramIdOp):
            axes.add(owner.axis.data)
        elif owner is not None:
            todo += list(owner.operands)
    return axes


def multicast_halves(ops: list, rank: SSAValue, memref: SSAValue, rows: int, row: SSAValue, col: SSAValue,
                     stage: SSAValue, *, dst: int, stage_bytes: int, bar: int, swizzle: int,
                     outer: list | tuple = ()) -> None:
    """A box both CTAs of a 2-CTA cluster read (a GEMM's B, or A with multicast=a), split between them: rank r
    loads rows [r R/2, (r+1) R/2) and multicasts them to both, so each CTA reads half of it from L2 and receives
    all of it. Boxes of one swizzle row of 16-bit elements across."""
    half = rows // 2
    is_first = arith.CmpiOp(rank, index_const(ops, 0), "eq")
    branches = []
    for r in range(2):
        body: list[Operation] = []
        at = row if r == 0 else binop(body, arith.AddiOp, row, half)
        body += [H.TmaLoadOp(memref, at, col, stage, dst=dst + r * half * swizzle, stage_bytes=stage_bytes, bar=bar,
                             box=(half, swizzle // 2), swizzle=swizzle, multicast=0b11, outer=outer), scf.YieldOp()]
        branches.append(body)
    ops += [is_first, scf.IfOp(is_first, [], branches[0], branches[1])]


def read_once(ops: list, follows: set[int], sizes: list[SSAValue]) -> SSAValue | None:
    """i1: no other tile reads an operand's boxes, i.e. every grid axis its offsets do not follow (`follows`)
    has size 1 (a GEMM's B when there is one row of tiles: M <= BM). Such boxes are loaded with an L2
    evict-first hint, so streaming them does not evict what every CTA shares (measured: 128 x 8192 x 8192 4%
    faster). None when every axis matters or none does (nothing to decide)."""
    others = [g for axis, g in enumerate(sizes) if axis not in follows]
    if not others or len(follows) == 0:
        return None
    one = index_const(ops, 1)
    pred = cmpi(ops, others[0], one, "eq")
    for g in others[1:]:
        pred = binop(ops, arith.AndIOp, pred, cmpi(ops, g, one, "eq"))
    return pred


def ring_slot(ops: list, step: SSAValue, stages: int) -> tuple[SSAValue, SSAValue]:
    """The ring slot of the `step`-th load (step % stages) and the phase parity of that slot's use."""
    return (binop(ops, arith.RemSIOp, step, stages),
            binop(ops, arith.RemSIOp, binop(ops, arith.DivSIOp, step, stages), 2))
