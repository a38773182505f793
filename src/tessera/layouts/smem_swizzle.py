"""Shared-memory operand layouts for wgmma: K-major and MN-major 16-bit tiles and swizzles.

An operand tile is R rows (M or N) x C columns (K) of bf16/f16, addressed
(mn, k) whichever way it is stored. K-major (the instruction's imm-trans 0):
the canonical layouts (PTX ISA "Shared Memory Matrix Layout"; CUTLASS
``Layout_K_{INTER,SW32,SW64,SW128}_Atom``) are built from core matrices of
8 rows x 16 bytes. A swizzle atom is 8 rows x W bytes (W = 16, 32, 64, 128);
atoms tile the rows first, then K. MN-major (imm-trans 1: B stored [K, N]
as a row-major a@b has it, or A stored [K, M]): the tile is kept as the
TMA writes it, C rows of K, each W bytes of MN, one such column block of
W/2 elements after another; an atom is W bytes of MN x 8 rows of K. PTX's
canonical form ((T,W/16,m),(8,k)) : ((1,T,LBO),(W/2,SBO)) then has LBO =
C * W (the next block of MN) and SBO = 8 * W (the next 8 rows of K). The swizzle XORs byte-address bits
[4, 4+b) with bits [7, 7+b): Swizzle<b,4,3> with b = 0, 1, 2, 3. It keeps
16-byte chunks whole and, for 128B, spreads the 8 rows of a core-matrix
group over the 8 16-byte bank groups, so ldmatrix/TMA do not conflict.

``MatrixDescriptor`` holds the sm_90 wgmma descriptor fields as data, and
``address`` models how the hardware turns them back into byte addresses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ELEM_BYTES = {"bf16": 2, "f16": 2}
K_STEP = 16  # K elements one wgmma k16 instruction reads (32 bytes of 16-bit data)


@dataclass(frozen=True)
class SwizzleMode:
    """One canonical K-major mode: atom width, swizzle bits, descriptor code."""

    name: str
    row_bytes: int  # W: bytes of one atom row (16 for the interleaved layout)
    bits: int  # b of Swizzle<b,4,3>
    desc_code: int  # sm_90 descriptor bits 62-63: 0 none, 1 128B, 2 64B, 3 32B

    def apply(self, addr: np.ndarray) -> np.ndarray:
        """Swizzle<b,4,3> on byte addresses: bits [4, 4+b) ^= bits [7, 7+b)."""
        return addr ^ (((addr >> 7) & ((1 << self.bits) - 1)) << 4)


MODES = {m.name: m for m in (
    SwizzleMode("none", 16, 0, 0),  # interleave: core matrices, no swizzle
    SwizzleMode("32B", 32, 1, 3),
    SwizzleMode("64B", 64, 2, 2),
    SwizzleMode("128B", 128, 3, 1),
)}


@dataclass(frozen=True)
class MatrixDescriptor:
    """sm_90 wgmma shared-memory matrix descriptor fields, in bytes.

    K-major: lbo is the K-direction distance between core matrices; only
    "none" reads it (in swizzled modes K chunks are adjacent, so it is 16,
    encoding 1); sbo is the distance between 8-row core-matrix groups along
    M/N. MN-major: lbo is the distance between W-byte blocks of MN, sbo
    between groups of 8 K rows. `major` is not a descriptor field: it is the
    instruction's imm-trans-a / imm-trans-b (1 for "mn").
    """

    start: int
    lbo: int
    sbo: int
    mode: SwizzleMode
    base_offset: int = 0  # 0 for tiles aligned to the swizzle pattern
    major: str = "k"

    @property
    def trans(self) -> int:
        """The wgmma imm-trans operand for this descriptor: 0 K-major, 1 MN-major."""
        return int(self.major == "mn")

    def encode(self) -> int:
        """The 64-bit descriptor: start, LBO, SBO in 16-byte units (14 bits each)."""
        for name in ("start", "lbo", "sbo"):
            v = getattr(self, name)
            if v % 16 or not 0 <= v >> 4 < 1 << 14:
                raise ValueError(f"descriptor {name}={v} must be a multiple of 16 below 256 KiB.")
        return ((self.start >> 4) | (self.lbo >> 4) << 16 | (self.sbo >> 4) << 32
                | (self.base_offset & 7) << 49 | self.mode.desc_code << 62)

    def address(self, row: np.ndarray, kcol: np.ndarray, elem_bytes: int = 2) -> np.ndarray:
        """Byte address the hardware reads for element (row, kcol) of one k16 step.

        row in [0, 64) for A (or N for B), kcol in [0, 16): core-matrix
        arithmetic from the fields, then the mode's swizzle on the address.
        """
        row = np.asarray(row)
        if self.major == "mn":
            W, kcol = self.mode.row_bytes, np.asarray(kcol)
            mb = row * elem_bytes
            addr = self.start + (mb // W) * self.lbo + (kcol >> 3) * self.sbo + (kcol & 7) * W + mb % W
            return self.mode.apply(addr)
        kb = np.asarray(kcol) * elem_bytes  # byte within the 32-byte K step
        group, r8 = row >> 3, row & 7
        if self.mode.bits == 0:
            addr = self.start + group * self.sbo + (kb >> 4) * self.lbo + r8 * 16 + (kb & 15)
        else:
            addr = self.start + group * self.sbo + r8 * self.mode.row_bytes + kb
        return self.mode.apply(addr)


@dataclass(frozen=True)
class SmemLayout:
    """(row, col) -> byte offset of a rows (MN) x cols (K) operand tile in one mode, K-major or MN-major."""

    rows: int
    cols: int
    dtype: str
    mode: SwizzleMode
    major: str = "k"

    @property
    def elem_bytes(self) -> int:
        return ELEM_BYTES[self.dtype]

    @property
    def size_bytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    def linear_offset(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        """Byte offset before the swizzle: K-major, atoms of 8 x W bytes, rows first, then K; MN-major, blocks
        of W bytes of MN, each all K rows of W bytes (what a TMA box of cols x W/2 elements writes)."""
        W = self.mode.row_bytes
        if self.major == "mn":
            mb = np.asarray(row) * self.elem_bytes
            return (mb // W) * (self.cols * W) + np.asarray(col) * W + mb % W
        cb = np.asarray(col) * self.elem_bytes
        return (cb // W) * (self.rows * W) + np.asarray(row) * W + cb % W

    def offset(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        """Byte offset of element (row, col) in shared memory (tile base 1024-aligned)."""
        return self.mode.apply(self.linear_offset(row, col))

    def table(self) -> np.ndarray:
        """[rows, cols] byte offsets of every element."""
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.cols), indexing="ij")
        return self.offset(r, c)

    def descriptor(self, k0: int = 0, base: int = 0) -> MatrixDescriptor:
        """Descriptor of the k16 step starting at column ``k0`` of a tile at byte ``base``."""
        if k0 % K_STEP or not 0 <= k0 < self.cols:
            raise ValueError(f"k0={k0} must be a multiple of {K_STEP} inside the "
                             f"{self.cols}-column tile.")
        W = self.mode.row_bytes
        start = base + int(self.linear_offset(0, k0))
        if self.major == "mn":
            return MatrixDescriptor(start, lbo=self.cols * W, sbo=8 * W, mode=self.mode, major="mn")
        lbo = self.rows * W if self.mode.bits == 0 else 16  # next core matrix along K
        return MatrixDescriptor(start, lbo=lbo, sbo=8 * W, mode=self.mode)


MAJORS = ("k", "mn")


def smem_layout(rows: int, cols: int, dtype: str, mode: str, major: str = "k") -> SmemLayout:
    """The canonical shared-memory layout of a rows x cols operand tile.

    Args:
        rows: M (for A) or N (for B); a multiple of 8 (K-major) or of the mode's width in elements (MN-major).
        cols: K; K-major: cols * element bytes must be a multiple of the mode's row width; MN-major: a
            multiple of 8.
        dtype: ``bf16`` or ``f16``.
        mode: ``none`` (interleaved core matrices, K-major only), ``32B``, ``64B`` or ``128B``.
        major: ``k`` (K contiguous) or ``mn`` (M or N contiguous).
    """
    if dtype not in ELEM_BYTES:
        raise ValueError(f"smem_layout supports dtypes {sorted(ELEM_BYTES)}, got {dtype!r}.")
    if mode not in MODES:
        raise ValueError(f"smem_layout modes are {list(MODES)}, got {mode!r}.")
    if major not in MAJORS:
        raise ValueError(f"smem_layout majors are {list(MAJORS)}, got {major!r}.")
    m = MODES[mode]
    if major == "mn":
        if m.bits == 0:
            raise ValueError("the interleaved (no swizzle) MN-major layout is not modelled; use 32B, 64B or 128B.")
        if rows <= 0 or (rows * ELEM_BYTES[dtype]) % m.row_bytes or cols <= 0 or cols % 8:
            raise ValueError(f"a {mode} MN-major {dtype} tile needs MN a multiple of {m.row_bytes} bytes and K a "
                             f"multiple of 8; got {rows}x{cols}.")
        return SmemLayout(rows, cols, dtype, m, "mn")
    if rows <= 0 or rows % 8 or cols <= 0 or (cols * ELEM_BYTES[dtype]) % m.row_bytes:
        raise ValueError(f"a {mode} K-major {dtype} tile needs rows a multiple of 8 and "
                         f"rows of a multiple of {m.row_bytes} bytes; got {rows}x{cols}.")
    return SmemLayout(rows, cols, dtype, m)
