"""Shared-memory operand layouts for wgmma: K-major 16-bit tiles and swizzles.

A K-major operand tile is R rows (M or N) x C columns (K) of bf16/f16. The
canonical layouts (PTX ISA "Shared Memory Matrix Layout"; CUTLASS
``Layout_K_{INTER,SW32,SW64,SW128}_Atom``) are built from core matrices of
8 rows x 16 bytes. A swizzle atom is 8 rows x W bytes (W = 16, 32, 64, 128);
atoms tile the rows first, then K. The swizzle XORs byte-address bits
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

    lbo: K-direction distance between core matrices. Only "none" reads it;
    in swizzled K-major modes K chunks are adjacent, so it is 16 (encodes 1).
    sbo: distance between 8-row core-matrix groups along M/N.
    """

    start: int
    lbo: int
    sbo: int
    mode: SwizzleMode
    base_offset: int = 0  # 0 for tiles aligned to the swizzle pattern

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
        kb = np.asarray(kcol) * elem_bytes  # byte within the 32-byte K step
        row = np.asarray(row)
        group, r8 = row >> 3, row & 7
        if self.mode.bits == 0:
            addr = self.start + group * self.sbo + (kb >> 4) * self.lbo + r8 * 16 + (kb & 15)
        else:
            addr = self.start + group * self.sbo + r8 * self.mode.row_bytes + kb
        return self.mode.apply(addr)


@dataclass(frozen=True)
class SmemLayout:
    """(row, col) -> byte offset of a K-major rows x cols tile in one mode."""

    rows: int
    cols: int
    dtype: str
    mode: SwizzleMode

    @property
    def elem_bytes(self) -> int:
        return ELEM_BYTES[self.dtype]

    @property
    def size_bytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    def linear_offset(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        """Byte offset before the swizzle: atoms of 8 x W bytes, rows first, then K."""
        W = self.mode.row_bytes
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
        lbo = self.rows * W if self.mode.bits == 0 else 16  # next core matrix along K
        return MatrixDescriptor(start, lbo=lbo, sbo=8 * W, mode=self.mode)


def smem_layout(rows: int, cols: int, dtype: str, mode: str) -> SmemLayout:
    """The canonical K-major shared-memory layout of a rows x cols operand tile.

    Args:
        rows: M (for A) or N (for B); a multiple of 8.
        cols: K; cols * element bytes must be a multiple of the mode's row width.
        dtype: ``bf16`` or ``f16``.
        mode: ``none`` (interleaved core matrices), ``32B``, ``64B`` or ``128B``.
    """
    if dtype not in ELEM_BYTES:
        raise ValueError(f"smem_layout supports dtypes {sorted(ELEM_BYTES)}, got {dtype!r}.")
    if mode not in MODES:
        raise ValueError(f"smem_layout modes are {list(MODES)}, got {mode!r}.")
    m = MODES[mode]
    if rows <= 0 or rows % 8 or cols <= 0 or (cols * ELEM_BYTES[dtype]) % m.row_bytes:
        raise ValueError(f"a {mode} K-major {dtype} tile needs rows a multiple of 8 and "
                         f"rows of a multiple of {m.row_bytes} bytes; got {rows}x{cols}.")
    return SmemLayout(rows, cols, dtype, m)
