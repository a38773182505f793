"""Boundary-aware tile windows over global arrays: the one rule shared by every global access.

A window has one offset per array dim and covers `window` elements from it
(the tile's dims, with leading 1s for the array dims the tile does not
cover). Positions outside [0, extent) along any dim -- past the end *or*
before 0 (negative offsets) -- are out of bounds: reads give the padding
value, writes are dropped. tile.load, tile.store, tile.masked_store, tile.async_copy
and tile.fragment_store all go through here, so ragged edges behave the same at
every level.
"""

from __future__ import annotations

import numpy as np


def window_shape(array_rank: int, tile_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The full-rank window of a tile placed in an array of rank `array_rank`."""
    return (1,) * (array_rank - len(tile_shape)) + tuple(tile_shape)


def _clip(offsets, window, extents):
    """(array slices, window slices, whole) for the in-bounds part, or None when nothing overlaps."""
    src, dst = [], []
    whole = True
    for o, s, e in zip(offsets, window, extents):
        lo = o if o > 0 else 0
        hi = o + s if o + s < e else e
        if hi <= lo:
            return None
        if lo != o or hi != o + s:
            whole = False
        src.append(slice(lo, hi))
        dst.append(slice(lo - o, hi - o))
    return tuple(src), tuple(dst), whole


def read_window(array: np.ndarray, offsets: tuple[int, ...], window: tuple[int, ...],
                tile_shape: tuple[int, ...], pad) -> np.ndarray:
    """A fresh array of `tile_shape` holding the window; out-of-bounds positions hold `pad`."""
    clipped = _clip(offsets, window, array.shape)
    if clipped is not None and clipped[2]:
        return array[clipped[0]].reshape(tile_shape).copy()
    out = np.full(window, pad, dtype=array.dtype)
    if clipped is not None:
        out[clipped[1]] = array[clipped[0]]
    return out.reshape(tile_shape)


def write_window(array: np.ndarray, offsets: tuple[int, ...], window: tuple[int, ...],
                 tile: np.ndarray) -> None:
    """Write the in-bounds part of `tile` into `array` at `offsets`; the rest is dropped."""
    clipped = _clip(offsets, window, array.shape)
    if clipped is None:
        return
    src, dst, whole = clipped
    block = tile.reshape(window)
    array[src] = block if whole else block[dst]


def write_window_masked(array: np.ndarray, offsets: tuple[int, ...], window: tuple[int, ...], tile: np.ndarray,
                        mask: np.ndarray) -> None:
    """`write_window` of only the elements where `mask` is true; the array keeps the others untouched."""
    clipped = _clip(offsets, window, array.shape)
    if clipped is None:
        return
    src, dst, _ = clipped
    keep = mask.reshape(window)[dst]
    np.copyto(array[src], tile.reshape(window)[dst], where=keep)


def add_window(array: np.ndarray, offsets: tuple[int, ...], window: tuple[int, ...], tile: np.ndarray,
               mask: np.ndarray | None = None) -> None:
    """Add the in-bounds part of `tile` (where `mask`, if given) into `array` (programs run one at a time here,
    so an atomic add is a plain one)."""
    clipped = _clip(offsets, window, array.shape)
    if clipped is None:
        return
    src, dst, _ = clipped
    add = tile.reshape(window)[dst]
    if mask is not None:
        add = np.where(mask.reshape(window)[dst], add, np.zeros((), add.dtype))
    array[src] += add
