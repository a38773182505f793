"""warp-specialize's units of work: which tile (and K split) unit t of the persistent loop is, as cloned IR.

The persistent loop walks units t = 0, 1, ... of a raster: with splitk = S
unit t is split t % S of tile t / S; tiles go in groups of `group_m` rows
(axes beyond 1 outermost); with a 2-CTA cluster the raster walks pairs of
tile rows (or columns, `pair_axis` 1) and the CTA's rank picks its half.
`setup` clones the kernel's index math before the K-loop for unit t and
returns the old -> new value mapping, with the keys below for what the
roles need besides the program ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from tessera.ir import tile_ops as T
from tessera.passes.wgmma_kloop import KLoop, binop, is_scalar

REAL_TILE = object()  # mapping key: i1 "this tile exists" (a cluster's spare CTA, of an odd count, has none)
K_RANGE = object()  # mapping key (splitk > 1): (first K, end K) of this unit's split
SPLIT = object()  # ... the unit's split index
TILE = object()  # ... the tile's linear index pid0 + g0 * (pid1 + g1 * ...) (its split-K scratch record)


@dataclass
class Units:
    """The raster of units for one kernel; `count` first (it fixes the raster), then `setup` per unit."""

    kl: KLoop
    group_m: int
    cluster: int
    splitk: int
    pair_axis: int
    rank: SSAValue | None = None  # the CTA's rank in its cluster (set by the loop that reads it)
    sizes: list | None = None  # the logical grid
    raster_sizes: list | None = None  # the logical grid with the paired axis halved (rounded up)

    def count(self, ops: list, sizes: list[SSAValue]) -> SSAValue:
        """The number of units: tiles (pairs of tiles, with a cluster) times splitk."""
        self.sizes = self.raster_sizes = sizes
        if self.cluster > 1:  # a cluster walks pairs of tile rows (or columns): rank r takes row 2p + r of pair p
            ax = self.pair_axis
            pairs = binop(ops, arith.DivSIOp, binop(ops, arith.AddiOp, sizes[ax], self.cluster - 1), self.cluster)
            self.raster_sizes = [pairs if a == ax else g for a, g in enumerate(sizes)]
        total = self.raster_sizes[0]
        for g in [*self.raster_sizes[1:], self.splitk]:
            total = binop(ops, arith.MuliOp, total, g) if g != 1 else total
        return total

    def setup(self, ops: list, t: SSAValue) -> dict:
        """Program ids of unit `t` and the kernel's index math before the K-loop, cloned: old value -> new.
        With splitk > 1, unit t is split t % splitk of tile t / splitk (see `split_range`)."""
        sizes = self.sizes
        split = None
        if self.splitk > 1:
            split = binop(ops, arith.RemSIOp, t, self.splitk)
            t = binop(ops, arith.DivSIOp, t, self.splitk)
        pids = self.raster(ops, t, self.raster_sizes)
        mapping: dict = {}
        if self.rank is not None:  # a row (column) past the grid, of an odd count, loads and stores nothing
            ax = self.pair_axis
            pids[ax] = binop(ops, arith.AddiOp, binop(ops, arith.MuliOp, pids[ax], self.cluster), self.rank)
            real = arith.CmpiOp(pids[ax], sizes[ax], "slt")
            ops.append(real)
            mapping[REAL_TILE] = real.result
        for op in self.kl.prologue:
            if isinstance(op, T.ProgramIdOp):
                mapping[op.result] = pids[op.axis.data]
            elif isinstance(op, T.NumProgramsOp):
                mapping[op.result] = sizes[op.axis.data]
            elif is_scalar(op):
                ops.append(op.clone(value_mapper=mapping))
        if split is not None:
            self.split_range(ops, mapping, split, pids)
        return mapping

    def split_range(self, ops: list, mapping: dict, split: SSAValue, pids: list) -> None:
        """K range of `split` (ceil(steps / splitk) steps each; late splits may get none) and the tile's linear
        index pid0 + g0 * (pid1 + g1 * ...), into `mapping`."""
        loop = self.kl.loop
        lb, ub, st = (mapping.get(v, v) for v in (loop.lb, loop.ub, loop.step))
        per = binop(ops, arith.DivSIOp, binop(ops, arith.AddiOp, self.trip(ops, mapping), self.splitk - 1),
                    self.splitk)
        span = binop(ops, arith.MuliOp, per, st)
        lo = binop(ops, arith.AddiOp, lb, binop(ops, arith.MuliOp, split, span))
        hi = binop(ops, arith.MinSIOp, ub, binop(ops, arith.AddiOp, lo, span))
        tile = pids[-1]
        for axis in range(len(pids) - 2, -1, -1):
            tile = binop(ops, arith.AddiOp, pids[axis], binop(ops, arith.MuliOp, self.sizes[axis], tile))
        mapping[K_RANGE], mapping[SPLIT], mapping[TILE] = (lo, hi), split, tile

    def trip(self, ops: list, mapping: dict) -> SSAValue:
        """The K-loop's trip count for a unit's cloned index math: max(0, ceil((ub - lb) / step))."""
        loop = self.kl.loop
        lb, ub, st = (mapping.get(v, v) for v in (loop.lb, loop.ub, loop.step))
        lb, ub = mapping.get(K_RANGE, (lb, ub))
        span = binop(ops, arith.AddiOp, binop(ops, arith.SubiOp, ub, lb), binop(ops, arith.SubiOp, st, 1))
        return binop(ops, arith.MaxSIOp, binop(ops, arith.DivSIOp, span, st), 0)

    def raster(self, ops: list, t: SSAValue, grid: list[SSAValue]) -> list[SSAValue]:
        """Program ids of linear tile `t`: axes beyond 1 outermost, then groups of `group_m` rows of tiles."""
        pids: list[SSAValue] = [t] * len(grid)
        rest = t
        if len(grid) > 2:
            plane = binop(ops, arith.MuliOp, grid[0], grid[1])
            outer = binop(ops, arith.DivSIOp, t, plane)
            rest = binop(ops, arith.RemSIOp, t, plane)
            for axis in range(2, len(grid)):
                pids[axis] = binop(ops, arith.RemSIOp, outer, grid[axis])
                outer = binop(ops, arith.DivSIOp, outer, grid[axis])
        width = binop(ops, arith.MuliOp, grid[1], self.group_m)
        group = binop(ops, arith.DivSIOp, rest, width)
        first = binop(ops, arith.MuliOp, group, self.group_m)
        left = binop(ops, arith.SubiOp, grid[0], first)
        size = binop(ops, arith.MinSIOp, left, self.group_m)
        within = binop(ops, arith.RemSIOp, rest, width)
        pids[0] = binop(ops, arith.AddiOp, first, binop(ops, arith.RemSIOp, within, size))
        pids[1] = binop(ops, arith.DivSIOp, within, size)
        return pids
