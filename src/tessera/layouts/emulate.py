"""Reference semantics of fragments: simulate the hardware using only the maps.

Each lane computes its own accumulator slots. Every operand element it needs
is fetched by a (lane, reg) lookup into other lanes' registers (found through
the maps' inverse tables) or by a byte address computed from a wgmma matrix
descriptor. No function here sees a whole matrix, so a wrong map gives a
wrong product. All arithmetic is float64.
"""

from __future__ import annotations

import numpy as np

from .lane_map import NP_DTYPES, LaneMap
from .smem_swizzle import K_STEP, MatrixDescriptor, SmemLayout


def mma(a: LaneMap, b: LaneMap, acc: LaneMap, a_frag: np.ndarray, b_frag: np.ndarray,
        c_frag: np.ndarray) -> np.ndarray:
    """One MMA atom: D[lane, reg] = C + sum_k A[row, k] * B[k, col], by register lookups."""
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2 or acc.shape != (M, N):
        raise ValueError(f"mma operands do not chain: a {a.shape}, b {b.shape}, acc {acc.shape}.")
    a_lane, a_reg = a.owners  # [M, K]
    b_lane, b_reg = b.owners  # [K, N]
    r = acc.rows[:, :, None]  # [lanes, regs, 1]
    c = acc.cols[:, :, None]
    kk = np.arange(K)  # [K]
    a_vals = a_frag[a_lane[r, kk], a_reg[r, kk]].astype(np.float64)  # [lanes, regs, K]
    b_vals = b_frag[b_lane[kk, c], b_reg[kk, c]].astype(np.float64)  # [lanes, regs, K]
    return c_frag.astype(np.float64) + (a_vals * b_vals).sum(-1)


def warp_tile_mma(a: LaneMap, b: LaneMap, acc: LaneMap, a_frag: np.ndarray,
                  b_frag: np.ndarray, c_frag: np.ndarray) -> np.ndarray:
    """A composed warp tile as the atom MMAs a kernel issues, over (mi, ni, ki)."""
    atom = {lm.key.role: lm.atom or lm for lm in (a, b, acc)}
    mt, nt = acc.atom_grid
    kt = a.atom_grid[1]
    d_frag = c_frag.astype(np.float64)  # [lanes, regs]
    for mi in range(mt):
        for ni in range(nt):
            d = acc.atom_slice(mi, ni)
            for ki in range(kt):
                d_frag[:, d] = mma(atom["a"], atom["b"], atom["acc"],
                                   a_frag[:, a.atom_slice(mi, ki)],
                                   b_frag[:, b.atom_slice(ki, ni)], d_frag[:, d])
    return d_frag


def store_tile(smem: np.ndarray, layout: SmemLayout, tile: np.ndarray, base: int = 0) -> None:
    """Write a rows x cols (MN x K) operand tile into the byte buffer ``smem`` through ``layout`` (the TMA's job),
    K-major or MN-major as the layout says."""
    r, c = np.meshgrid(np.arange(layout.rows), np.arange(layout.cols), indexing="ij")
    offs = base + layout.offset(r, c)
    bits = np.ascontiguousarray(tile.astype(NP_DTYPES[layout.dtype])).view(np.uint16)
    smem[offs] = (bits & 0xFF).astype(np.uint8)
    smem[offs + 1] = (bits >> 8).astype(np.uint8)


def load_elems(smem: np.ndarray, addr: np.ndarray, dtype: str) -> np.ndarray:
    """Read 16-bit little-endian elements at byte addresses ``addr``, as float64."""
    bits = smem[addr].astype(np.uint16) | (smem[addr + 1].astype(np.uint16) << 8)
    return bits.view(NP_DTYPES[dtype]).astype(np.float64)


def wgmma_ss(acc: LaneMap, smem: np.ndarray, a_desc: MatrixDescriptor,
             b_desc: MatrixDescriptor, c_frag: np.ndarray) -> np.ndarray:
    """One wgmma m64nNk16 with A (64 x k16) and B (N x k16, K-major) in shared memory."""
    r = acc.rows[:, :, None]  # [128, N/2, 1]
    c = acc.cols[:, :, None]
    kk = np.arange(K_STEP)  # [16]
    a_vals = load_elems(smem, a_desc.address(r, kk), acc.key.dtype)  # [128, N/2, 16]
    b_vals = load_elems(smem, b_desc.address(c, kk), acc.key.dtype)
    return c_frag.astype(np.float64) + (a_vals * b_vals).sum(-1)


def wgmma_rs(acc: LaneMap, a: LaneMap, a_frag: np.ndarray, smem: np.ndarray,
             b_desc: MatrixDescriptor, c_frag: np.ndarray) -> np.ndarray:
    """One wgmma m64nNk16 with A from registers (through ``a``) and B in shared memory."""
    a_lane, a_reg = a.owners  # [64, 16]
    r = acc.rows[:, :, None]
    c = acc.cols[:, :, None]
    kk = np.arange(K_STEP)
    a_vals = a_frag[a_lane[r, kk], a_reg[r, kk]].astype(np.float64)
    b_vals = load_elems(smem, b_desc.address(c, kk), acc.key.dtype)
    return c_frag.astype(np.float64) + (a_vals * b_vals).sum(-1)


def row_reduce(acc: LaneMap, frag: np.ndarray, op: np.ufunc) -> np.ndarray:
    """Reduce each row with ``op`` (np.maximum, np.add) the way a softmax kernel does.

    First within a lane over the slots of each row it holds, then a butterfly
    of xor-shuffles across the lanes the map says share the row. Returns
    [lanes, slots]: every lane ends with the full result of each row in
    ``acc.lane_rows``.
    """
    lanes = np.arange(acc.lanes)
    part = op.reduce(frag[lanes[:, None, None], acc.row_regs], axis=-1)  # [lanes, slots]
    for mask in acc.row_shuffle_masks():
        part = op(part, part[lanes ^ mask])  # shfl.xor.sync(part, mask)
    return part
