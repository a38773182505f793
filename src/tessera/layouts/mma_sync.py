"""mma.sync.aligned.m16n8k16 (.bf16/.f16 in, .f32 acc) fragment tables.

Transcribed from PTX ISA 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with
floating point type", with groupID = laneid >> 2 and threadID_in_group =
laneid % 4. bf16 and f16 share the layout; the key records which one.
"""

from __future__ import annotations

import numpy as np

from .lane_map import LaneMap, LaneMapKey, unsupported

FAMILY = "mma_sync"
WARP = 32
ATOM = (16, 8, 16)  # (m, n, k) of one instruction
DTYPES = ("bf16", "f16")


def _lane_ids() -> tuple[np.ndarray, np.ndarray]:
    lane = np.arange(WARP, dtype=np.int32)[:, None]  # [32, 1]
    return lane >> 2, lane & 3  # groupID, threadID_in_group


def _a_table() -> tuple[np.ndarray, np.ndarray]:
    """A, 16x16 (m x k): a0..a7 in 4 .b32 registers; a2,a3,a6,a7 are rows +8, a4..a7 cols +8."""
    g, t = _lane_ids()
    i = np.arange(8, dtype=np.int32)[None, :]  # [1, 8]
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def _b_table() -> tuple[np.ndarray, np.ndarray]:
    """B, 16x8 (k x n): b0..b3 in 2 .b32 registers; b2,b3 are rows +8; col = groupID."""
    g, t = _lane_ids()
    i = np.arange(4, dtype=np.int32)[None, :]  # [1, 4]
    return 2 * t + (i & 1) + 8 * (i >> 1), np.broadcast_to(g, (WARP, 4))


def _acc_table() -> tuple[np.ndarray, np.ndarray]:
    """C/D, 16x8 f32: c0..c3; c2,c3 are rows +8; a row is held by a quad of lanes."""
    g, t = _lane_ids()
    i = np.arange(4, dtype=np.int32)[None, :]  # [1, 4]
    return np.broadcast_to(g + 8 * (i >> 1), (WARP, 4)), 2 * t + (i & 1)


_TABLES = {"a": _a_table, "b": _b_table, "acc": _acc_table}


def atom_shape(key: LaneMapKey) -> tuple[int, int, int]:
    """The instruction shape that tiles ``key``'s warp tile."""
    return ATOM


def why_unsupported(key: LaneMapKey) -> str | None:
    """Why ``key`` names no m16n8k16 operand, or None when it does."""
    if key.role not in _TABLES:
        return "mma_sync roles are 'a', 'b' and 'acc'."
    if key.dtype not in DTYPES:
        return "mma_sync m16n8k16 takes bf16 or f16 multiplicands (the accumulator is always f32)."
    if (key.m, key.n, key.k) != ATOM:
        return ("mma_sync has one instruction shape, m16n8k16; "
                "use warp_tile_map for a warp tile of several atoms.")
    return None


def atom_map(key: LaneMapKey) -> LaneMap:
    """The lane map of one m16n8k16 operand; ``key`` must name that exact atom."""
    if reason := why_unsupported(key):
        raise unsupported(key, reason)
    rows, cols = _TABLES[key.role]()
    elem = "f32" if key.role == "acc" else key.dtype
    return LaneMap(key, np.ascontiguousarray(rows), np.ascontiguousarray(cols), elem)
