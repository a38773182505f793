"""warp-specialize's units of work: which tile (and K split) unit t of the persistent loop is, as cloned IR.

The persistent loop walks units t = 0, 1, ... of a raster: with splitk = S
unit t is split t % S of tile t / S; tiles go in groups of `group_m` rows
(axes beyond 1 outermost); with a 2-CTA cluster the raster walks pairs of
tile rows (or columns, `pair_axis` 1) and the CTA's rank picks its half, or
(`pair_axis` -1, multicast=k) walks single tiles, whose K steps the rank
splits: rank r takes split r of `cluster`, as split-K's unit would.
`setup` clones the kernel's index math before the K-loop for unit t and
returns the old -> new value mapping, with the keys below for what the
roles need besides the program ids.

Stream-K (`streamk`): a CTA's units are its own list, walked 0, 1, ...
(`walk`). When the tiles do not fill whole waves of the P persistent CTAs
(clusters), the last partial wave and one full wave before it (all tiles,
when there are fewer than P) are not dealt out whole: their K steps, laid
end to end tile after tile, are cut into P equal ranges, one per CTA, so
every CTA does the same work. A CTA first takes its whole tiles (c, c + P,
...), then the pieces of the tiles its range crosses; a tile crossed by
several ranges is summed by `nv.streamk_fixup` (pieces in range order, so
the sum is deterministic for a given P). Every CTA's range is at least one
tile long when there are P tiles or more, so each tile has at most two
pieces then. With at most P / 2 tiles (and K steps to cut) the ranges are
instead each tile's steps split evenly among S = min(P / tiles, steps) CTAs,
one piece per CTA (the P - S * tiles others idle): ranges laid end to end
would give a CTA the end of one tile and the start of the next, and the
second piece would wait for the first one's hand-over, on the critical
path (found on 1024 x 1024 x 16384: 1.6x slower than split-K).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from tessera.ir import tile_ops as T
from tessera.target.nvidia.passes.ws_common import binop, cmpi, index_const, is_scalar, select

REAL_TILE = object()  # mapping key: i1 "this tile exists" (a cluster's spare CTA, of an odd count, has none)
K_RANGE = object()  # mapping key (splitk > 1): (first K, end K) of this unit's split
SPLIT = object()  # ... the unit's split index
TILE = object()  # ... the tile's linear index pid0 + g0 * (pid1 + g1 * ...) (its split-K scratch record)
PIECE = object()  # stream-K: this unit's piece of its tile (0: the one that starts at the tile's first K step)
PIECES = object()  # ... how many pieces the tile has (1: a whole tile, no fixup)
FIRST_SLOT = object()  # ... scratch slot of piece 0's CTA; piece p's is FIRST_SLOT + 2 * cluster * p (+ HEAD for 0)
HEAD = object()  # ... 1 when piece 0 is the second piece its CTA hands over (its range began in an earlier tile)


def _int_ops(ops: list):
    """(add, sub, mul, div, rem) of index values, each a two-operand function appending its op to `ops`."""
    return tuple(lambda a, b, cls=cls: binop(ops, cls, a, b)
                 for cls in (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivSIOp, arith.RemSIOp))


@dataclass
class Units:
    """The raster of units for one kernel; `count` first (it fixes the raster), then `setup` per unit."""

    body: object  # ws_match.Body: the loop and the index math before it
    group_m: int
    cluster: int
    splitk: int
    pair_axis: int
    streamk: bool = False
    rank: SSAValue | None = None  # the CTA's rank in its cluster (set by the loop that reads it)
    sizes: list | None = None  # the logical grid
    raster_sizes: list | None = None  # the logical grid with the paired axis halved (rounded up)
    sk: dict | None = None  # stream-K: this CTA's plan (see `walk`), values of the loop that reads it

    def count(self, ops: list, sizes: list[SSAValue]) -> SSAValue:
        """The number of units: tiles (pairs of tiles, with a cluster) times splitk."""
        self.sizes = self.raster_sizes = sizes
        if self.cluster > 1 and self.pair_axis >= 0:  # pairs of tile rows (or columns): rank r takes row 2p + r
            ax = self.pair_axis
            pairs = binop(ops, arith.DivSIOp, binop(ops, arith.AddiOp, sizes[ax], self.cluster - 1), self.cluster)
            self.raster_sizes = [pairs if a == ax else g for a, g in enumerate(sizes)]
        total = self.raster_sizes[0]
        for g in [*self.raster_sizes[1:], self.splitk]:
            total = binop(ops, arith.MuliOp, total, g) if g != 1 else total
        return total

    def walk(self, ops: list, total: SSAValue, cta: SSAValue, ctas: SSAValue):
        """(first unit, end, step) of CTA (cluster) `cta` of `ctas`, given the unit `count`: t = cta, cta + ctas,
        ... below it; with stream-K the CTA's own units 0, 1, ... (see the module docstring)."""
        if not self.streamk:
            return cta, total, ctas
        self.plan_stream(ops, total, cta, ctas)
        return index_const(ops, 0), self.sk["units"], index_const(ops, 1)

    def plan_stream(self, ops: list, tiles: SSAValue, c: SSAValue, p: SSAValue) -> None:
        """Stream-K: which whole tiles and which K-step range CTA `c` of `p` takes, as values in `ops`."""
        add, sub, mul, div, rem = _int_ops(ops)
        kt = self.trip(ops, self.clone_prologue(ops, [index_const(ops, 0)] * len(self.sizes)))
        zero = index_const(ops, 0)
        partial = rem(tiles, p)  # tiles of the last, partial wave
        # streamed: the partial wave and one full wave before it (all tiles, if fewer than p); none when the
        # tiles fill whole waves, or there are no K steps (each tile then only runs its epilogue)
        streamed = select(ops, binop(ops, arith.AndIOp, cmpi(ops, partial, zero, "ne"), cmpi(ops, kt, zero, "ne")),
                          binop(ops, arith.MinSIOp, tiles, add(partial, p)), zero)
        whole = sub(tiles, streamed)  # a multiple of p: the tiles dealt out whole
        steps = mul(streamed, kt)
        q, r = div(steps, p), rem(steps, p)
        # few tiles: S CTAs per tile, each a piece of it (`range_start`); S >= 2 and S <= kt, so no piece is empty
        one = index_const(ops, 1)
        per = binop(ops, arith.MinSIOp, div(p, binop(ops, arith.MaxSIOp, tiles, one)), kt)
        even = binop(ops, arith.AndIOp, cmpi(ops, mul(tiles, 2), p, "sle"), cmpi(ops, per, index_const(ops, 2), "sge"))
        sk = {"kt": kt, "p": p, "c": c, "whole": whole, "q": q, "r": r, "q1": add(q, 1),
              "qd": binop(ops, arith.MaxSIOp, q, 1), "big": mul(r, add(q, 1)), "dp": div(whole, p),
              "even": even, "per": binop(ops, arith.MaxSIOp, per, one), "ktd": binop(ops, arith.MaxSIOp, kt, one)}
        sk["pe"] = mul(tiles, sk["per"])  # the CTAs that take a piece in the even split
        self.sk = sk
        b0, b1 = self.range_start(ops, c), self.range_start(ops, add(c, 1))
        first, last = div(b0, sk["ktd"]), div(sub(b1, 1), sk["ktd"])
        pieces = select(ops, cmpi(ops, b1, b0, "sgt"), add(sub(last, first), 1), zero)
        sk.update(b0=b0, b1=b1, first=first, units=add(sk["dp"], pieces))

    def range_start(self, ops: list, c: SSAValue) -> SSAValue:
        """Stream-K: the first K step (of the streamed tiles' steps end to end) of CTA c's range: c q + min(c, r);
        in the even split (few tiles) piece c % S of tile c / S, c' = min(c, S tiles): (c' / S) kt + (c' % S) kt / S
        (the idle CTAs' ranges are empty, at the end)."""
        sk = self.sk
        add, sub, mul, div, rem = _int_ops(ops)
        spread = add(mul(c, sk["q"]), binop(ops, arith.MinSIOp, c, sk["r"]))
        ce = binop(ops, arith.MinSIOp, c, sk["pe"])
        even = add(mul(div(ce, sk["per"]), sk["kt"]), div(mul(rem(ce, sk["per"]), sk["kt"]), sk["per"]))
        return select(ops, sk["even"], even, spread)

    def range_of(self, ops: list, i: SSAValue) -> SSAValue:
        """Stream-K: the CTA whose range holds streamed step i (the first r ranges are q + 1 long, the rest q; in
        the even split, step w of tile t is in piece ((w + 1) S - 1) / kt of CTAs t S ..)."""
        sk = self.sk
        add, sub, mul, div, rem = _int_ops(ops)
        late = add(sk["r"], div(sub(i, sk["big"]), sk["qd"]))
        early = div(i, sk["q1"])
        spread = select(ops, cmpi(ops, i, sk["big"], "slt"), early, late)
        t, w = div(i, sk["ktd"]), binop(ops, arith.RemSIOp, i, sk["ktd"])
        even = add(mul(t, sk["per"]), div(sub(mul(add(w, 1), sk["per"]), 1), sk["ktd"]))
        return select(ops, sk["even"], even, spread)

    def setup(self, ops: list, t: SSAValue) -> dict:
        """Program ids of unit `t` and the kernel's index math before the K-loop, cloned: old value -> new.
        With splitk > 1, unit t is split t % splitk of tile t / splitk (see `split_range`); with stream-K,
        unit t of this CTA's list (see `stream_unit`)."""
        sizes = self.sizes
        split = piece = None
        if self.splitk > 1:
            split = binop(ops, arith.RemSIOp, t, self.splitk)
            t = binop(ops, arith.DivSIOp, t, self.splitk)
        if self.streamk:
            t, piece = self.stream_unit(ops, t)
        pids = self.raster(ops, t, self.raster_sizes)
        mapping: dict = {}
        if self.rank is not None and self.pair_axis < 0:  # the pair shares the tile: rank r runs K split r
            split = self.rank
        elif self.rank is not None:  # a row (column) past the grid, of an odd count, loads and stores nothing
            ax = self.pair_axis
            pids[ax] = binop(ops, arith.AddiOp, binop(ops, arith.MuliOp, pids[ax], self.cluster), self.rank)
            mapping[REAL_TILE] = cmpi(ops, pids[ax], sizes[ax], "slt")
        self.clone_prologue(ops, pids, mapping)
        if split is not None:
            self.split_range(ops, mapping, split, pids, self.splitk if self.splitk > 1 else self.cluster)
        if piece is not None:
            self.stream_range(ops, mapping, piece, pids)
        return mapping

    def clone_prologue(self, ops: list, pids: list[SSAValue], mapping: dict | None = None) -> dict:
        """The kernel's scalar index math before the K-loop, cloned for the tile at `pids`."""
        mapping = {} if mapping is None else mapping
        for op in self.body.prologue:
            if isinstance(op, T.ProgramIdOp):
                mapping[op.result] = pids[op.axis.data]
            elif isinstance(op, T.NumProgramsOp):
                mapping[op.result] = self.sizes[op.axis.data]
            elif is_scalar(op):
                ops.append(op.clone(value_mapper=mapping))
        return mapping

    def stream_unit(self, ops: list, u: SSAValue) -> tuple[SSAValue, dict]:
        """Stream-K unit u of this CTA: (raster index of its tile, what `stream_range` needs). Units below
        `dp` are whole tiles c + u p; the rest are the pieces of the streamed tiles the CTA's range crosses."""
        sk = self.sk
        add, sub, mul, div, rem = _int_ops(ops)
        whole = cmpi(ops, u, sk["dp"], "slt")
        streamed = add(sk["first"], sub(u, sk["dp"]))  # the tile among the streamed ones
        tile = select(ops, whole, add(sk["c"], mul(u, sk["p"])), add(sk["whole"], streamed))
        return tile, {"whole": whole, "streamed": streamed}

    def stream_range(self, ops: list, mapping: dict, piece: dict, pids: list) -> None:
        """Stream-K: the K range of this unit's piece, the tile's piece count and this piece's index, and the
        scratch slots the fixup addresses, into `mapping`."""
        sk, whole = self.sk, piece["whole"]
        add, sub, mul, div, rem = _int_ops(ops)
        kt, zero = sk["kt"], index_const(ops, 0)
        t0 = mul(piece["streamed"], kt)  # the tile's first step among the streamed steps
        lo = select(ops, whole, zero, sub(binop(ops, arith.MaxSIOp, sk["b0"], t0), t0))
        hi = select(ops, whole, kt, sub(binop(ops, arith.MinSIOp, sk["b1"], add(t0, kt)), t0))
        loop = self.body.loop
        lb, ub, st = (mapping.get(v, v) for v in (loop.lb, loop.ub, loop.step))
        k_lo = add(lb, mul(lo, st))
        k_hi = binop(ops, arith.MinSIOp, ub, add(lb, mul(hi, st)))
        c0 = self.range_of(ops, t0)
        c1 = self.range_of(ops, sub(add(t0, kt), 1))
        head = select(ops, cmpi(ops, self.range_start(ops, c0), t0, "slt"), index_const(ops, 1), zero)
        cta0 = mul(c0, self.cluster) if self.cluster > 1 else c0
        if self.rank is not None:
            cta0 = add(cta0, self.rank)
        mapping[K_RANGE] = (k_lo, k_hi)
        mapping[PIECES] = select(ops, whole, index_const(ops, 1), add(sub(c1, c0), 1))
        mapping[PIECE] = select(ops, whole, zero, sub(sk["c"], c0))
        mapping[FIRST_SLOT] = mul(cta0, 2)
        mapping[HEAD] = head
        mapping[TILE] = self.tile_index(ops, pids)

    def split_range(self, ops: list, mapping: dict, split: SSAValue, pids: list, splits: int) -> None:
        """K range of `split` of `splits` (ceil(steps / splits) steps each; late splits may get none) and the
        tile's linear index pid0 + g0 * (pid1 + g1 * ...), into `mapping`."""
        loop = self.body.loop
        lb, ub, st = (mapping.get(v, v) for v in (loop.lb, loop.ub, loop.step))
        per = binop(ops, arith.DivSIOp, binop(ops, arith.AddiOp, self.trip(ops, mapping), splits - 1), splits)
        span = binop(ops, arith.MuliOp, per, st)
        lo = binop(ops, arith.AddiOp, lb, binop(ops, arith.MuliOp, split, span))
        hi = binop(ops, arith.MinSIOp, ub, binop(ops, arith.AddiOp, lo, span))
        mapping[K_RANGE], mapping[SPLIT], mapping[TILE] = (lo, hi), split, self.tile_index(ops, pids)

    def tile_index(self, ops: list, pids: list) -> SSAValue:
        """The tile's linear index pid0 + g0 * (pid1 + g1 * ...): its scratch record (counters)."""
        tile = pids[-1]
        for axis in range(len(pids) - 2, -1, -1):
            tile = binop(ops, arith.AddiOp, pids[axis], binop(ops, arith.MuliOp, self.sizes[axis], tile))
        return tile

    def trip(self, ops: list, mapping: dict) -> SSAValue:
        """The K-loop's trip count for a unit's cloned index math: max(0, ceil((ub - lb) / step))."""
        loop = self.body.loop
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
        # at least 1: the tile after a CTA's last one (tile overlap computes its ids before the loop test) may
        # lie past the grid, where `left` is 0 for a grid0 that is a multiple of group_m, and x % 0 is undefined
        # (it traps on a CPU, the host emulator's)
        size = binop(ops, arith.MaxSIOp, binop(ops, arith.MinSIOp, left, self.group_m), 1)
        within = binop(ops, arith.RemSIOp, rest, width)
        pids[0] = binop(ops, arith.AddiOp, first, binop(ops, arith.RemSIOp, within, size))
        pids[1] = binop(ops, arith.DivSIOp, within, size)
        return pids
