"""warp-specialize's shared-memory map: the A/B TMA rings, the TMA store staging and the mbarrier arrays.

Offsets are bytes into the one dynamic shared block: A slots from 0, B slots
after them, the TMA store epilogue's staging (16 KiB per consumer
warpgroup, 1024-byte aligned like the slots) after B, then the `full`,
`empty` and (ping-pong) `turn` barriers, 8 bytes each, then (split-K) one
4-byte word per consumer warpgroup for `nv.splitk_fixup`'s (`nv.streamk_fixup`'s) verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tessera.ir import diagnostics as D
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.ir import tile_ops as T
from tessera.ir.fragment_ops import FragmentStoreOp
from tessera.ir.types import type_name
from tessera.target.nvidia.ir.types import SMEM_LIMIT
from tessera.target.nvidia.passes.wgmma_kloop import WG_ROWS, KLoop, refuse


def _swizzle(row_bytes: int) -> int:
    """The widest TMA/wgmma swizzle (128, 64 or 32 bytes) whose rows tile `row_bytes` exactly; 0 when none does."""
    for s in (128, 64, 32):
        if row_bytes % s == 0:
            return s
    return 0


@dataclass
class Layout:
    """Byte offsets of the shared-memory map and the TMA box geometry."""

    stages: int
    a_stage: int
    b_stage: int
    swizzle: int
    box_cols: int
    turns: int = 0  # 2 with schedule=pingpong
    staging: int = 0  # bytes of the TMA store epilogue's buffers (16 KiB per consumer warpgroup), after B
    words: int = 0  # split-K: one 4-byte word per consumer warpgroup, after the barriers
    extra: int = 0  # bytes after those: tiles=dynamic's hand-over ring (ws_sched)

    def warpgroup_bytes(self, kl: KLoop) -> int:
        """Bytes from one consumer warpgroup's 64 rows of A to the next: 64 rows of a K-major box, or (MN-major)
        64 elements of M, i.e. 128 / swizzle whole boxes of BK rows."""
        return WG_ROWS * (self.swizzle if kl.a.major == "k" else 2 * kl.bk)

    @property
    def a_base(self) -> int:
        return 0

    @property
    def b_base(self) -> int:
        return self.stages * self.a_stage

    @property
    def stage_base(self) -> int:
        return self.b_base + self.stages * self.b_stage

    @property
    def full(self) -> int:
        return self.stage_base + self.staging

    @property
    def empty(self) -> int:
        return self.full + 8 * self.stages

    @property
    def turn(self) -> int:
        """Two more barriers (pingpong): consumer c may start a main loop when turn[c] completes."""
        return self.empty + 8 * self.stages

    @property
    def word(self) -> int:
        return self.turn + 8 * self.turns

    @property
    def total(self) -> int:
        return self.word + 4 * self.words + self.extra


def tma_storable(kl: KLoop) -> bool:
    """One whole-tile store of a bf16/f16/f32 memref, in 128-byte boxes: the TMA store epilogue can take it.

    Not when the epilogue also loads whole tiles (C, a residual): those loads, the accumulator and the
    staged box's addressing exceed the 168 registers a thread is compiled for (ping-pong spilled 88
    bytes, cooperative with C, residual and gelu spilled too), while the register store streams slot
    by slot without spilling.
    """
    stores = [op for op in kl.epilogue if isinstance(op, (T.StoreOp, FragmentStoreOp))]
    tile_loads = [op for op in kl.epilogue
                  if isinstance(op, T.LoadOp) and tuple(op.result.type.get_shape()) == (kl.bm, kl.bn)]
    elem = stores[0].dest.type.element_type if len(stores) == 1 else None
    return (elem is not None and not tile_loads and type_name(elem) in H.WgaccStoreTmaOp.TYPES and
            H.WgaccStoreTmaOp.box_cols(elem, kl.bn) > 0)


def plan_layout(kl: KLoop, stages: int, pingpong: bool, store: str = "tma", fixup: bool = False) -> Layout:
    """The shared-memory map of a warp-specialised kernel: A and B rings, then (store=tma, when the epilogue
    can take it and it fits) the TMA store staging, then the barriers. Refusals name the tile and the limit."""
    eb = 2
    # One swizzle for both operands, the widest that tiles each stored row: BK elements of a K-major tile, M or
    # N of an MN-major one (BN = 160 is 320 bytes: 64-byte rows).
    for role, o in (("a", kl.a), ("b", kl.b)):
        if _swizzle(o.cols * eb) == 0 and o.major == "k":
            raise refuse(kl.mma, f"BK={kl.bk}: a K step must be at least 32 bytes (16 elements) for TMA swizzling")
        if _swizzle(o.cols * eb) == 0:
            name = "BM" if role == "a" else "BN"
            raise refuse(kl.mma, f"{name}={o.mn}: an MN-major {role} tile is read in rows of 32, 64 or 128 bytes, "
                                 f"so it must be a multiple of 16 elements wide",
                         f"use a multiple of 64 for {name} (128-byte rows), or store {role.upper()} K-major")
    sw = min(_swizzle(o.cols * eb) for o in (kl.a, kl.b))
    lay = Layout(stages, kl.bm * kl.bk * eb, kl.bn * kl.bk * eb, sw, sw // eb, 2 if pingpong else 0,
                 words=kl.consumers if fixup else 0)
    limit = SMEM_LIMIT[(9, 0)]
    if store == "tma" and tma_storable(kl):
        with_staging = replace(lay, staging=kl.consumers * H.WgaccStoreTmaOp.STAGE_BYTES)
        if with_staging.total <= limit:  # else the epilogue stores from registers (slower, no smem)
            lay = with_staging
    if lay.total > limit:
        raise D.TesseraError(D.NV_SMEM_OVERFLOW, f"{stages} stages of A {kl.bm}x{kl.bk} and B {kl.bn}x{kl.bk} "
                                                 f"need {lay.total} bytes of shared memory; sm_90a has {limit}",
                             op=kl.mma, hint="use fewer stages or a smaller BK")
    return lay
