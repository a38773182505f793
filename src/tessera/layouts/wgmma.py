"""wgmma.mma_async m64nNk16 (.bf16/.f16 in, .f32 acc) register fragment tables.

A warpgroup is 128 lanes (4 warps). Per PTX ISA 9.7.15.5.1.1.1 "Matrix
Fragments for wgmma.mma_async.m64nNk16", warp w owns rows 16w..16w+15 and,
within a warp, each 16x8 column block j repeats the mma.sync m16n8
accumulator pattern in registers d[4j .. 4j+3]. A from registers is the
mma.sync A pattern per warp. B is read from shared memory only (see
smem_swizzle), so it has no register map.
"""

from __future__ import annotations

import numpy as np

from .lane_map import LaneMap, LaneMapKey, unsupported

FAMILY = "wgmma"
WARPGROUP = 128
DTYPES = ("bf16", "f16")
N_CHOICES = range(8, 257, 8)  # N = 8, 16, ..., 256


def _lane_ids() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lane = np.arange(WARPGROUP, dtype=np.int32)[:, None]  # [128, 1]
    return lane >> 5, (lane & 31) >> 2, lane & 3  # warp, groupID, threadID_in_group


def _acc_table(n: int) -> tuple[np.ndarray, np.ndarray]:
    """D, 64xN f32: N/2 slots per lane; slot 4j+i is in column block j (cols 8j..8j+7)."""
    w, g, t = _lane_ids()
    reg = np.arange(n // 2, dtype=np.int32)[None, :]  # [1, N/2]
    j, i = reg >> 2, reg & 3
    return 16 * w + g + 8 * (i >> 1), 8 * j + 2 * t + (i & 1)


def _a_table() -> tuple[np.ndarray, np.ndarray]:
    """A from registers, 64x16: a0..a7 as mma.sync A, shifted to warp w's rows 16w.."""
    w, g, t = _lane_ids()
    i = np.arange(8, dtype=np.int32)[None, :]  # [1, 8]
    return 16 * w + g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def atom_shape(key: LaneMapKey) -> tuple[int, int, int]:
    """One wgmma covers m64 x the whole N x k16; a warp tile stacks them over m and k."""
    return (64, key.n, 16)


def why_unsupported(key: LaneMapKey) -> str | None:
    """Why ``key`` names no m64nNk16 register operand, or None when it does."""
    if key.role == "b":
        return "wgmma reads B from shared memory only; use smem_layout(...) and its descriptor."
    if key.role not in ("a", "acc"):
        return "wgmma register roles are 'a' and 'acc'."
    if key.dtype not in DTYPES:
        return "wgmma m64nNk16 takes bf16 or f16 multiplicands (the accumulator is always f32)."
    if key.m != 64 or key.k != 16 or key.n not in N_CHOICES:
        return "wgmma shapes are m64nNk16 with N a multiple of 8 in 8..256."
    return None


def atom_map(key: LaneMapKey) -> LaneMap:
    """The lane map of one m64nNk16 register operand (roles 'a' and 'acc')."""
    if reason := why_unsupported(key):
        raise unsupported(key, reason)
    rows, cols = _acc_table(key.n) if key.role == "acc" else _a_table()
    elem = "f32" if key.role == "acc" else key.dtype
    return LaneMap(key, np.ascontiguousarray(rows), np.ascontiguousarray(cols), elem)
