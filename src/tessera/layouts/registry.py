"""Looking up lane maps by key, and composing instruction atoms into warp tiles.

A warp tile of m x n (x k) is a grid of instruction atoms. Each lane's
registers are its atom registers concatenated atom-row-major over the role's
matrix: acc atoms by (mi, ni), a by (mi, ki), b by (ki, ni).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import mma_sync, wgmma
from .lane_map import ROLE_DIMS, LaneMap, LaneMapKey, unsupported

FAMILIES = {mma_sync.FAMILY: mma_sync, wgmma.FAMILY: wgmma}


def _family(key: LaneMapKey):
    if key.family == "auto":
        raise unsupported(key, "family 'auto' has no physical layout; "
                               "run tile-to-fragments to pick one first.")
    if key.family not in FAMILIES:
        raise unsupported(key, f"known families are {sorted(FAMILIES)}.")
    if key.role not in ROLE_DIMS:
        raise unsupported(key, f"roles are {sorted(ROLE_DIMS)}.")
    return FAMILIES[key.family]


@lru_cache(maxsize=None)
def lane_map(family: str, role: str, m: int, n: int, k: int, dtype: str) -> LaneMap:
    """The lane map of one MMA instruction operand.

    Args:
        family: ``mma_sync`` (m16n8k16, 32 lanes) or ``wgmma`` (m64nNk16, 128 lanes).
        role: ``a`` (m x k), ``b`` (k x n) or ``acc`` (m x n, f32 registers).
        m, n, k: the instruction shape, exactly.
        dtype: the multiplicand type, ``bf16`` or ``f16``.

    Raises ValueError naming the combination when there is no such layout;
    for tiles larger than one instruction use ``warp_tile_map``.
    """
    key = LaneMapKey(family, role, m, n, k, dtype)
    return _family(key).atom_map(key)


@lru_cache(maxsize=None)
def warp_tile_map(family: str, role: str, m: int, n: int, k: int, dtype: str) -> LaneMap:
    """The lane map of a warp (or warpgroup) tile made of instruction atoms.

    m, n, k must be multiples of the family's atom (mma_sync 16x8x16; wgmma
    64 x N x 16 with N the instruction's whole n). Registers are atom
    registers concatenated atom-row-major (acc: (mi, ni), a: (mi, ki),
    b: (ki, ni)); ``LaneMap.atom_slice(i, j)`` finds an atom's slots.
    """
    key = LaneMapKey(family, role, m, n, k, dtype)
    family_mod = _family(key)
    am, an, ak = family_mod.atom_shape(key)
    if m <= 0 or n <= 0 or k <= 0 or m % am or n % an or k % ak:
        raise unsupported(key, f"a {family} warp tile must be a positive multiple "
                               f"of its atom m{am}n{an}k{ak} in every dimension.")
    atom_key = LaneMapKey(family, role, am, an, ak, dtype)
    if reason := family_mod.why_unsupported(atom_key):
        raise unsupported(key, reason)
    atom = family_mod.atom_map(atom_key)
    tile = {"m": m // am, "n": n // an, "k": k // ak}
    grid = tuple(tile[d] for d in ROLE_DIMS[role])
    if key == atom_key:
        return atom
    return compose(atom, grid, key)


def compose(atom: LaneMap, grid: tuple[int, int], key: LaneMapKey) -> LaneMap:
    """Tile ``atom`` over ``grid`` atoms; registers concatenated atom-row-major."""
    gi, gj = grid
    R, C = atom.shape
    ai = np.repeat(np.arange(gi, dtype=np.int32), gj)  # atom row of the a-th atom
    aj = np.tile(np.arange(gj, dtype=np.int32), gi)  # atom col of the a-th atom
    rows = atom.rows[:, None, :] + R * ai[None, :, None]  # [lanes, atoms, atom regs]
    cols = atom.cols[:, None, :] + C * aj[None, :, None]
    return LaneMap(key, rows.reshape(atom.lanes, -1), cols.reshape(atom.lanes, -1),
                   atom.elem, atom=atom, atom_grid=(gi, gj))
