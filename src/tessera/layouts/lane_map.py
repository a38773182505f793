"""The LaneMap: a fragment's register layout as data.

A fragment is a warp's (32 lanes) or warpgroup's (128 lanes) register slice
of a matrix. Its layout is two int tables, ``rows[lane, reg]`` and
``cols[lane, reg]``: register slot ``reg`` of lane ``lane`` holds
``matrix[rows[lane, reg], cols[lane, reg]]``. A slot is one matrix element
(PTX's ``a_i``/``b_i``/``c_i``); 16-bit elements travel two to a ``.b32``
register, even slot in the low half (see ``to_b32``).

Pack, unpack, epilogue store offsets, masks and row reductions are all
derived here from the two tables, so a layout is stated exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import ml_dtypes
import numpy as np

NP_DTYPES = {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16),
             "f32": np.dtype(np.float32)}
ROLE_DIMS = {"a": ("m", "k"), "b": ("k", "n"), "acc": ("m", "n")}  # matrix (rows, cols)


@dataclass(frozen=True)
class LaneMapKey:
    """What selects a layout: (family, role, m, n, k, dtype).

    ``dtype`` is the MMA's multiplicand type (``bf16``/``f16``) for every role;
    the accumulator's register type is recorded on the map as ``elem``.
    """

    family: str
    role: str
    m: int
    n: int
    k: int
    dtype: str

    def __str__(self) -> str:
        return (f"(family={self.family!r}, role={self.role!r}, m={self.m}, "
                f"n={self.n}, k={self.k}, dtype={self.dtype!r})")

    @property
    def matrix_shape(self) -> tuple[int, int]:
        """(rows, cols) of the matrix this role covers: a m x k, b k x n, acc m x n."""
        return tuple(getattr(self, d) for d in ROLE_DIMS[self.role])


def unsupported(key: LaneMapKey, reason: str) -> ValueError:
    """The one error for a combination that has no lane map; names it whole."""
    return ValueError(f"no lane map for {key}: {reason}")


@dataclass(frozen=True, eq=False)
class LaneMap:
    """(lane, reg) -> (row, col) for one fragment type, as [lanes, regs] tables.

    ``atom``/``atom_grid`` are set on composed maps (a grid of instruction
    atoms); atom (i, j) owns register slots ``atom_slice(i, j)``.
    """

    key: LaneMapKey
    rows: np.ndarray  # [lanes, regs] int
    cols: np.ndarray  # [lanes, regs] int
    elem: str  # register element type: bf16 | f16 | f32
    atom: LaneMap | None = None
    atom_grid: tuple[int, int] = (1, 1)

    def __post_init__(self) -> None:
        if self.rows.shape != self.cols.shape or self.rows.ndim != 2:
            raise ValueError(f"lane map {self.key}: rows {self.rows.shape} and cols "
                             f"{self.cols.shape} must be equal [lanes, regs] tables.")
        for table in (self.rows, self.cols):
            table.setflags(write=False)
        R, C = self.shape
        flat = self.rows.astype(np.int64) * C + self.cols
        in_range = (self.rows >= 0) & (self.rows < R) & (self.cols >= 0) & (self.cols < C)
        if not in_range.all() or flat.size != R * C \
                or np.bincount(flat.ravel(), minlength=R * C).max() != 1:
            raise ValueError(f"lane map {self.key} must cover each (row, col) of its "
                             f"{R}x{C} matrix exactly once; it does not.")

    # -- shape ------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return self.key.matrix_shape

    @property
    def lanes(self) -> int:
        return self.rows.shape[0]

    @property
    def regs(self) -> int:
        """Element slots per lane (``.b32`` registers = regs // pack_width)."""
        return self.rows.shape[1]

    @property
    def pack_width(self) -> int:
        """Elements per 32-bit register: 2 for 16-bit types, 1 for f32."""
        return 1 if self.elem == "f32" else 2

    def atom_slice(self, i: int, j: int) -> slice:
        """Register slots of atom (i, j); atoms are ordered atom-row-major."""
        gi, gj = self.atom_grid
        if not (0 <= i < gi and 0 <= j < gj):
            raise IndexError(f"atom ({i}, {j}) is outside the {gi}x{gj} atom grid of {self.key}.")
        width = self.regs // (gi * gj)
        start = (i * gj + j) * width
        return slice(start, start + width)

    # -- pack / unpack ----------------------------------------------------
    def pack(self, matrix: np.ndarray) -> np.ndarray:
        """Matrix [R, C] -> per-lane registers [lanes, regs] (dtype kept)."""
        if matrix.shape != self.shape:
            raise ValueError(f"pack for {self.key} expects a {self.shape} matrix, "
                             f"got {matrix.shape}.")
        return matrix[self.rows, self.cols]

    def unpack(self, frag: np.ndarray) -> np.ndarray:
        """Per-lane registers [lanes, regs] -> matrix [R, C]; inverse of pack."""
        if frag.shape != self.rows.shape:
            raise ValueError(f"unpack for {self.key} expects registers of shape "
                             f"{self.rows.shape}, got {frag.shape}.")
        out = np.empty(self.shape, dtype=frag.dtype)
        out[self.rows, self.cols] = frag
        return out

    @cached_property
    def owners(self) -> tuple[np.ndarray, np.ndarray]:
        """Inverse tables (lane[R, C], reg[R, C]): who holds element (row, col)."""
        lane = np.empty(self.shape, dtype=np.int32)
        reg = np.empty(self.shape, dtype=np.int32)
        lane[self.rows, self.cols] = np.arange(self.lanes, dtype=np.int32)[:, None]
        reg[self.rows, self.cols] = np.arange(self.regs, dtype=np.int32)[None, :]
        return lane, reg

    # -- epilogue stores and masks ---------------------------------------
    def store_offsets(self, ld: int, row0: int = 0, col0: int = 0) -> np.ndarray:
        """Element offsets [lanes, regs] into a row-major buffer with leading dim ``ld``."""
        return (self.rows + row0).astype(np.int64) * ld + (self.cols + col0)

    def mask(self, predicate: Callable[[np.ndarray, np.ndarray], np.ndarray],
             row0: int = 0, col0: int = 0) -> np.ndarray:
        """Bool [lanes, regs] = predicate(global rows, global cols), e.g. causal or bounds."""
        return np.asarray(predicate(self.rows + row0, self.cols + col0), dtype=bool)

    def vector_width(self) -> int:
        """Widest v such that each aligned run of v slots is v adjacent columns of one row.

        That is the widest vector store (``st.v2``/``st.v4``) an epilogue can use.
        """
        for v in (8, 4, 2):
            if self.regs % v:
                continue
            r = self.rows.reshape(self.lanes, -1, v)
            c = self.cols.reshape(self.lanes, -1, v)
            if (r == r[..., :1]).all() and (c == c[..., :1] + np.arange(v)).all():
                return v
        return 1

    # -- row reductions ---------------------------------------------------
    @cached_property
    def lane_rows(self) -> np.ndarray:
        """[lanes, slots]: the distinct rows each lane holds, ascending."""
        held = [np.unique(r) for r in self.rows]
        if len({len(h) for h in held}) != 1:
            raise ValueError(f"lanes of {self.key} hold different numbers of rows; "
                             "row reductions need a uniform count.")
        return np.stack(held)

    @cached_property
    def row_regs(self) -> np.ndarray:
        """[lanes, slots, regs_per_row]: the register slots of each held row."""
        slot = (self.rows[:, :, None] == self.lane_rows[:, None, :]).argmax(-1)  # [lanes, regs]
        order = np.argsort(slot, axis=1, kind="stable")
        counts = np.apply_along_axis(np.bincount, 1, slot)
        if (counts != counts.flat[0]).any():
            raise ValueError(f"lanes of {self.key} hold rows in unequal pieces; "
                             "row reductions need a uniform count.")
        return order.reshape(self.lanes, self.lane_rows.shape[1], -1)

    def row_groups(self) -> np.ndarray:
        """[R, lanes_per_row]: the lanes that hold a piece of each row, ascending."""
        held = np.zeros((self.shape[0], self.lanes), dtype=bool)
        held[self.rows, np.arange(self.lanes)[:, None]] = True
        groups = [np.flatnonzero(h) for h in held]
        if len({len(g) for g in groups}) != 1:
            raise ValueError(f"rows of {self.key} are spread over unequal lane counts.")
        return np.stack(groups)

    def row_shuffle_masks(self) -> tuple[int, ...]:
        """XOR masks whose butterfly (shfl.xor) combines a row across its lanes.

        For the mma.sync accumulator a row lives in a quad: masks (1, 2).
        Raises ValueError when the lanes sharing a row are not an XOR coset
        or do not hold their rows in the same slot order (no butterfly exists).
        """
        groups = self.row_groups()
        diffs = groups ^ groups[:, :1]
        if (np.sort(diffs, axis=1) != np.sort(diffs[0])).any():
            raise ValueError(f"rows of {self.key} are not shared by XOR-related lanes.")
        basis: list[int] = []
        span = {0}
        for d in sorted(diffs[0].tolist()):
            if d not in span:
                basis.append(d)
                span |= {s ^ d for s in span}
        if span != set(diffs[0].tolist()):
            raise ValueError(f"rows of {self.key} are not shared by an XOR group of lanes.")
        lanes = np.arange(self.lanes)
        for mask in basis:
            if (self.lane_rows[lanes ^ mask] != self.lane_rows).any():
                raise ValueError(f"lanes {mask:#x} apart in {self.key} hold different rows.")
        return tuple(basis)


def to_b32(frag: np.ndarray) -> np.ndarray:
    """16-bit slots [lanes, 2r] -> uint32 registers [lanes, r]; slot 2i in the low half."""
    if frag.dtype.itemsize != 2 or frag.shape[-1] % 2:
        raise ValueError(f"to_b32 packs pairs of 16-bit slots; got {frag.dtype} {frag.shape}.")
    bits = np.ascontiguousarray(frag).view(np.uint16).astype(np.uint32)
    return bits[..., 0::2] | (bits[..., 1::2] << 16)


def from_b32(regs: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """uint32 registers [lanes, r] -> 16-bit slots [lanes, 2r]; inverse of to_b32."""
    lo = (regs & 0xFFFF).astype(np.uint16)
    hi = (regs >> 16).astype(np.uint16)
    return np.stack([lo, hi], axis=-1).reshape(*regs.shape[:-1], -1).view(dtype)
