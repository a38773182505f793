"""The nv emulator's state: one CTA's registers, shared memory (with the race check) and value types.

See `nv_ir` for the semantics; the op implementations (`nv_ir_ops`) read and write this state.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FloatAttr, IntegerAttr

from tessera.target.nvidia.ir import ops as nv
from tessera.ir.types import type_name
from tessera.layouts import warp_tile_map

DTYPES = {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16), "f32": np.dtype(np.float32),
          "f64": np.dtype(np.float64), "i1": np.dtype(bool), "i8": np.dtype(np.int8), "i16": np.dtype(np.int16),
          "i32": np.dtype(np.int32), "i64": np.dtype(np.int64)}


class NvRuntimeError(RuntimeError):
    """A kernel did something the hardware would get wrong (a race, an early read) or the emulator cannot run."""


def dtype_of(t) -> np.dtype:
    return DTYPES[type_name(t)]


class Shared:
    """The CTA's shared memory, with the bookkeeping of the race check."""

    def __init__(self, nbytes: int):
        self.data = np.zeros(max(nbytes, 16), np.uint8)
        self.epoch = 0
        self.w_epoch = np.full(self.data.size, -1)
        self.writer = np.full(self.data.size, -1)
        self.r_epoch = np.full(self.data.size, -1)
        self.reader = np.full(self.data.size, -1)  # -2: several threads
        self.pending = np.zeros(self.data.size, bool)

    def view(self, offset: int, t: nv.SmemType) -> np.ndarray:
        dt = dtype_of(t.element_type)
        return self.data[offset:offset + t.extent() * dt.itemsize].view(dt)

    def _bytes(self, offset: int, t, elems: np.ndarray, threads: np.ndarray):
        size = dtype_of(t.element_type).itemsize
        b = (offset + elems.astype(np.int64) * size)[..., None] + np.arange(size)
        return b.reshape(-1), np.broadcast_to(threads[..., None], b.shape).reshape(-1)

    def check_read(self, op, offset, t, elems, threads):
        b, th = self._bytes(offset, t, elems, threads)
        if self.pending[b].any():
            raise NvRuntimeError(f"{op.name} reads shared memory that a cp.async has not delivered yet (no wait)")
        bad = (self.w_epoch[b] == self.epoch) & (self.writer[b] != th)
        if bad.any():
            raise NvRuntimeError(f"race: {op.name} reads shared bytes another thread wrote since the last barrier")
        same = self.r_epoch[b] == self.epoch
        self.reader[b] = np.where(same & (self.reader[b] != th), -2, th)
        self.r_epoch[b] = self.epoch

    def check_write(self, op, offset, t, elems, threads, mark: bool = True):
        b, th = self._bytes(offset, t, elems, threads)
        waw = (self.w_epoch[b] == self.epoch) & (self.writer[b] != th)
        war = (self.r_epoch[b] == self.epoch) & (self.reader[b] != th)
        if waw.any() or war.any():
            raise NvRuntimeError(f"race: {op.name} writes shared bytes another thread "
                                 f"{'wrote' if waw.any() else 'read'} since the last barrier")
        if mark:
            self.w_epoch[b] = self.epoch
            self.writer[b] = th
        return b, th


class CTA:
    """One CTA's execution state."""

    def __init__(self, kernel: func.FuncOp, args: dict, block_id: tuple, grid: tuple, impls: dict):
        self.impls = impls  # op name -> implementation (nv_ir_ops.IMPLS)
        self.threads = kernel.attributes["nv.num_threads"].value.data
        self.smem = Shared(kernel.attributes["nv.smem_bytes"].value.data)
        self.env = dict(args)
        self.block_id, self.grid = block_id, grid
        self.groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (bytes, values-as-bytes, threads)
        tid = np.arange(self.threads)
        self.tid, self.lane, self.warp = tid, tid % 32, tid // 32

    def __getitem__(self, v):
        return self.env[v]

    def run(self, ops) -> None:
        for op in ops:
            impl = self.impls.get(op.name)
            if impl is None:
                raise NvRuntimeError(f"the nv emulator has no implementation for {op.name}")
            out = impl(self, op)
            if out is not None:
                for res, val in zip(op.results, out if isinstance(out, tuple) else (out,)):
                    self.env[res] = val

    # -- helpers shared by op implementations -------------------------------------
    def blocked(self, shape, n: int):
        """(flat element [threads, n], valid mask, coords tuple) of the blocked distribution."""
        flat = self.tid[:, None] + np.arange(n)[None, :] * self.threads
        size = math.prod(shape)
        valid = flat < size
        coords = np.unravel_index(np.minimum(flat, size - 1), shape)
        return flat, valid, coords

    def fragment(self, op, origin_rows: int, origin_cols: int):
        """(rows, cols) [threads, regs] of each thread's fragment slots, from the lane-map tables."""
        m, n, k = nv.ints(op.mnk)
        lm = warp_tile_map(op.family.data, op.role.data, m, n, k, type_name(op.dtype))
        wm, wn = nv.ints(op.warps)
        step_r, step_c = op.origin()
        wi, wj = self.warp // wn, self.warp % wn
        rows = lm.rows[self.lane] + (origin_rows + wi * step_r)[:, None]
        cols = lm.cols[self.lane] + (origin_cols + wj * step_c)[:, None]
        return rows, cols


def scalar_value(attr, t):
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return dtype_of(t).type(attr.value.data)
    raise NvRuntimeError(f"unsupported constant {attr}")

