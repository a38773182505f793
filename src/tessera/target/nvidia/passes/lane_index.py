"""Per-lane index expressions derived from the lane-map tables, and shared-memory pitches.

The emitter must not hand-write a layout (DESIGN section 2: lane maps are
data). It writes index arithmetic that this module *derives* from
`warp_tile_map`'s [lanes, regs] tables and checks against every entry:

    row(lane, atom (ai, aj), slot s) = R*ai + row_slot(s) + row_lane(lane)
    col(lane, atom (ai, aj), slot s) = C*aj + col_slot(s) + col_lane(lane)

where R x C is the instruction atom and each of row_slot, col_slot,
row_lane, col_lane is *bit-linear*: a sum of one coefficient per bit of
its argument. For mma.sync m16n8k16 the fit gives, e.g. for A,
row_lane = (lane >> 2) and col_lane = 2 * (lane & 3), the PTX manual's
groupID / threadID_in_group formulas, found rather than typed in. A layout
that is not of this form raises ValueError naming it, so a new family gets
a clear refusal instead of wrong code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tessera.layouts import warp_tile_map


@dataclass(frozen=True)
class BitLinear:
    """f(x) = sum_b coeffs[b] * ((x >> b) & 1), for x in [0, 2**len(coeffs))."""

    coeffs: tuple[int, ...]

    def __call__(self, x):
        x = np.asarray(x)
        return sum(c * ((x >> b) & 1) for b, c in enumerate(self.coeffs)) + 0 * x

    def c_expr(self, var: str) -> str:
        """Readable C for f(var): runs of bits with coefficients c, 2c, 4c, ... become c * ((var >> lo) & mask)."""
        terms, b, nbits = [], 0, len(self.coeffs)
        while b < nbits:
            c = self.coeffs[b]
            if c == 0:
                b += 1
                continue
            run = 1
            while b + run < nbits and self.coeffs[b + run] == c << run:
                run += 1
            field = var if b == 0 else f"({var} >> {b})"
            if b + run < nbits:
                field = f"({field} & {(1 << run) - 1})" if b else f"({var} & {(1 << run) - 1})"
            terms.append(field if c == 1 else f"{c} * {field}")
            b += run
        return " + ".join(terms) if terms else "0"


def fit_bit_linear(values: np.ndarray) -> BitLinear | None:
    """The bit-linear function through `values` (indexed by x, len a power of 2, values[0] == 0), or None."""
    n = len(values)
    if n & (n - 1) or values[0] != 0:
        return None
    nbits = n.bit_length() - 1
    f = BitLinear(tuple(int(values[1 << b]) for b in range(nbits)))
    return f if np.array_equal(f(np.arange(n)), values) else None


@dataclass(frozen=True)
class FragmentIndexing:
    """How lane `lane` finds slot `s` of atom (ai, aj) of a warp tile; see the module docstring."""

    atom_shape: tuple[int, int]  # R x C of one instruction operand
    atom_grid: tuple[int, int]  # atoms along rows x cols of the role's matrix
    atom_slots: int  # element slots per atom and lane
    row_slot: BitLinear
    col_slot: BitLinear
    row_lane: BitLinear
    col_lane: BitLinear
    lanes: int
    pack: int  # elements per 32-bit register: 2 for 16-bit types, 1 for f32

    def slot(self, ai: int, aj: int, s: int) -> int:
        """Register slot of the composed map (atoms concatenated atom-row-major)."""
        return (ai * self.atom_grid[1] + aj) * self.atom_slots + s

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """The [lanes, slots] (rows, cols) tables these formulas give."""
        gi, gj = self.atom_grid
        lane = np.arange(self.lanes)[:, None, None, None]
        ai = np.arange(gi)[None, :, None, None]
        aj = np.arange(gj)[None, None, :, None]
        s = np.arange(self.atom_slots)[None, None, None, :]
        R, C = self.atom_shape
        rows = R * ai + self.row_slot(s) + self.row_lane(lane) + 0 * aj
        cols = C * aj + self.col_slot(s) + self.col_lane(lane) + 0 * ai
        return rows.reshape(self.lanes, -1), cols.reshape(self.lanes, -1)

    def pair_step(self) -> tuple[int, int]:
        """(drow, dcol) from the low to the high element of a packed 32-bit register."""
        return self.row_slot.coeffs[0], self.col_slot.coeffs[0]


@lru_cache(maxsize=None)
def fragment_indexing(family: str, role: str, m: int, n: int, k: int, dtype: str) -> FragmentIndexing:
    """Fit and check the index formulas of one warp tile; ValueError if its layout has no such form."""
    lm = warp_tile_map(family, role, m, n, k, dtype)
    atom = lm.atom or lm
    what = f"{family} role {role} {m}x{n}x{k} {dtype}"
    rows, cols = atom.rows.astype(np.int64), atom.cols.astype(np.int64)
    base_r, base_c = rows[0, 0], cols[0, 0]
    fits = [fit_bit_linear(v) for v in (rows[0] - base_r, cols[0] - base_c, rows[:, 0] - base_r, cols[:, 0] - base_c)]
    if base_r or base_c or any(f is None for f in fits):
        raise ValueError(f"the lane map of {what} is not bit-linear in (lane, slot); the emitter cannot index it")
    pack = 2 if lm.elem in ("bf16", "f16") else 1
    ix = FragmentIndexing(atom.shape, lm.atom_grid, atom.regs, *fits, lanes=lm.lanes, pack=pack)
    got_r, got_c = ix.tables()
    if not (np.array_equal(got_r, lm.rows) and np.array_equal(got_c, lm.cols)):
        raise ValueError(f"the lane map of {what} does not decompose into per-atom row and column terms")
    if atom.regs % pack:
        raise ValueError(f"the lane map of {what} has an odd number of 16-bit slots per atom")
    return ix


def smem_pitch(cols: int, elem_bytes: int) -> int:
    """Row pitch (elements) of a shared tile: 16-byte rows, padded so a pitch is an odd multiple of 16 bytes.

    With rows 16 (mod 32) bytes apart, the 8 rows that a warp's fragment
    load touches at once start in 8 different 4-bank groups: conflict-free
    32-bit loads, while every row stays 16-byte aligned for cp.async.
    """
    row = -(-cols * elem_bytes // 16) * 16
    if row % 32 == 0:
        row += 16
    return row // elem_bytes if row % elem_bytes == 0 else cols
