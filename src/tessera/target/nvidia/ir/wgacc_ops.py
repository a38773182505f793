"""nv ops of the wgmma accumulator epilogue: 64 x n windows in wgmma's D layout to and from global memory.

`nv.wgacc_load` / `nv.wgacc_store` move a consumer warpgroup's accumulator
vector (slot i of thread t: see `hopper_ops`) element-pair-wise;
`nv.wgacc_store_tma` stages it box by box in shared memory for TMA bulk
stores, and `nv.tma_store_drain` waits for those before the CTA exits.
`nv.splitk_fixup` sums the K splits of one accumulator block across CTAs
(split-K in one launch, through a runtime-owned scratch buffer);
`nv.streamk_fixup` sums the pieces of a tile that stream-K dealt to several
CTAs; `nv.cluster_splitk_fixup` sums the two K halves of a tile that the CTAs
of a 2-CTA cluster computed, through distributed shared memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (BoolAttr, FloatAttr, IndexType, IntegerAttr, MemRefType, UnitAttr, VectorType, f32,
                                   f64, i1)
from xdsl.ir import SSAValue
from xdsl.irdl import (AttrSizedOperandSegments, irdl_op_definition, operand_def, opt_operand_def, opt_prop_def,
                       prop_def, result_def, var_operand_def)

from tessera.target.nvidia.ir.types import NvOp, check_smem_offset, expect_vec, fail, int_attr
from tessera.ir.tile_memory_ops import ATOMIC_TYPES
from tessera.ir.types import type_name
from tessera.target.nvidia.knobs import MAX_SPLITK


def _check_wgacc(op, vec_t, memref_t, n: int, row_vector: bool = False) -> None:
    if n % 8 or not 8 <= n <= 256:
        fail(op, f"n={n} must be a multiple of 8 in [8, 256]")
    expect_vec(op, "value", vec_t, n // 2)
    if len(memref_t.get_shape()) != 2 and not (row_vector and len(memref_t.get_shape()) == 1):
        fail(op, f"memref {memref_t} must be 2-D" + (" (or 1-D: a row vector broadcast over the rows)"
                                                      if row_vector else ""))
    if vec_t.element_type != memref_t.element_type:
        fail(op, f"value {vec_t} and memref {memref_t} differ in element type")


@irdl_op_definition
class WgaccLoadOp(NvOp):
    """Load a 64 x n window at [row, col] into the wgmma accumulator layout (`pad` past the edges).

    With `broadcast_rows`, every row reads memref row `row` (a [1, n] bias row
    broadcast over the tile); a 1-D memref is such a row (its `row` is 0).
    """

    name = "nv.wgacc_load"
    source = operand_def(MemRefType)
    row = operand_def(IndexType)
    col = operand_def(IndexType)
    n = prop_def(IntegerAttr)
    broadcast_rows = prop_def(BoolAttr)
    pad = prop_def(FloatAttr)
    result = result_def(VectorType)
    assembly_format = "$source `[` $row `,` $col `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, row: SSAValue, col: SSAValue, n: int, *, broadcast_rows: bool = False,
                 pad: float = 0.0):
        t = VectorType(source.type.element_type, [n // 2])
        super().__init__(operands=[source, row, col], result_types=[t],
                         properties={"n": int_attr(n), "broadcast_rows": BoolAttr.from_bool(broadcast_rows),
                                     "pad": FloatAttr(pad, f64)})

    def verify_(self) -> None:
        _check_wgacc(self, self.result.type, self.source.type, self.n.value.data,
                     row_vector=bool(self.broadcast_rows.value.data))


class _WgaccWriteOp(NvOp):
    """Write a wgmma-accumulator-layout vector as the 64 x n window at [row, col]; past the edges nothing.

    A memref of rank > 2 takes leading offsets first (`%O[%b, %h, %row, %col]`): the window lies in the last
    two dims at fixed outer indices, and is clipped by the last two dims only. With `mask` (an i1 vector in the
    same layout, `if %m`) the elements whose mask slot is false are not written.
    """

    value = operand_def(VectorType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    mask = opt_operand_def(VectorType)
    n = prop_def(IntegerAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = ("$value `,` $dest `[` $offsets `]` (`if` $mask^ `:` type($mask))? attr-dict `:` type($value) "
                       "`,` type($dest)")

    def __init__(self, value: SSAValue, dest: SSAValue, row: SSAValue, col: SSAValue, n: int,
                 outer: Sequence[SSAValue] = (), mask: SSAValue | None = None):
        super().__init__(operands=[value, dest, [*outer, row, col], [] if mask is None else [mask]],
                         properties={"n": int_attr(n)})

    @property
    def row(self) -> SSAValue:
        return self.offsets[-2]

    @property
    def col(self) -> SSAValue:
        return self.offsets[-1]

    @property
    def outer(self) -> tuple[SSAValue, ...]:
        return tuple(self.offsets[:-2])

    def verify_(self) -> None:
        n, rank = self.n.value.data, len(self.dest.type.get_shape())
        if n % 8 or not 8 <= n <= 256:
            fail(self, f"n={n} must be a multiple of 8 in [8, 256]")
        expect_vec(self, "value", self.value.type, n // 2)
        if rank < 2 or len(self.offsets) != rank:
            fail(self, f"memref {self.dest.type} takes {max(rank, 2)} offsets (outer dims, then row and col), "
                       f"got {len(self.offsets)}")
        if self.value.type.element_type != self.dest.type.element_type:
            fail(self, f"value {self.value.type} and memref {self.dest.type} differ in element type")
        if self.mask is not None:
            expect_vec(self, "mask", self.mask.type, n // 2, i1)


@irdl_op_definition
class WgaccStoreOp(_WgaccWriteOp):
    """Store the window (see _WgaccWriteOp)."""

    name = "nv.wgacc_store"


@irdl_op_definition
class WgaccAtomicAddOp(_WgaccWriteOp):
    """atomicAdd the window into memory element by element (see _WgaccWriteOp): f32, f64 or i32."""

    name = "nv.wgacc_atomic_add"

    def verify_(self) -> None:
        super().verify_()
        if type_name(self.dest.type.element_type) not in ATOMIC_TYPES:
            fail(self, f"atomicAdd takes f32, f64 or i32, not {type_name(self.dest.type.element_type)}")


@irdl_op_definition
class WgaccStoreTmaOp(NvOp):
    """Store a wgmma-accumulator vector as the 64 x n window at [row, col] through shared memory and TMA.

    One box of 64 rows x 128 bytes (64 bf16/f16 or 32 f32 columns, 128-byte
    swizzle) at a time, or of 64 bytes (64-byte swizzle) when n is not a
    multiple of 128 bytes (n = 160 bf16: five 32-column boxes), alternating between two 8 KiB buffers of consumer
    `consumer`'s staging area at `stage + consumer * 16384`: the warpgroup
    writes a box, fences it into the async proxy and one thread issues a bulk
    tensor store, which clips at the memref's edges. Before a buffer is written
    again its previous store must have read it (bulk wait_group.read). n must
    be a multiple of the box width; `nv.tma_store_drain` runs before the kernel exits.

    With `window %part` and `parts` P (split-K's scatter fixup: split `part` of P holds the sum of its own columns
    only) the boxes are cut into P equal runs and only run `part` is staged and stored; each box then waits for
    every earlier store to have read its buffer (another run's box may have used it last).
    """

    name = "nv.wgacc_store_tma"
    MIN_ARCH: ClassVar[str] = "sm_90"
    SMEM: ClassVar[str] = "write"
    ROWS: ClassVar[int] = 64
    STAGE_BYTES: ClassVar[int] = 16384  # two 64-row x 128-byte boxes per consumer warpgroup
    TYPES: ClassVar[tuple[str, ...]] = ("bf16", "f16", "f32")
    value = operand_def(VectorType)
    dest = operand_def(MemRefType)
    row = operand_def(IndexType)
    col = operand_def(IndexType)
    consumer = operand_def(IndexType)
    part = opt_operand_def(IndexType)
    n = prop_def(IntegerAttr)
    stage = prop_def(IntegerAttr)
    parts = opt_prop_def(IntegerAttr)
    assembly_format = ("$value `,` $dest `[` $row `,` $col `]` `,` $consumer (`window` $part^)? attr-dict `:` "
                       "type($value) `,` type($dest)")

    def __init__(self, value: SSAValue, dest: SSAValue, row: SSAValue, col: SSAValue, consumer: SSAValue, n: int,
                 stage: int, window: tuple[SSAValue, int] | None = None):
        props = {"n": int_attr(n), "stage": int_attr(stage)}
        if window is not None:
            props["parts"] = int_attr(window[1])
        super().__init__(operands=[value, dest, row, col, consumer, [] if window is None else [window[0]]],
                         properties=props)

    def run_of_boxes(self) -> int:
        """Boxes per window run: all of them (no window), else boxes / parts."""
        boxes = self.n.value.data // self.box()[1]
        return boxes if self.parts is None else boxes // self.parts.value.data

    @staticmethod
    def row_bytes(elem, n: int) -> int:
        """Bytes of one box row (its swizzle): 128 when n fills whole 128-byte rows, else 64 (0: neither)."""
        size = 4 if type_name(elem) == "f32" else 2  # f32 partials: 128-byte rows only
        return next((w for w in ((128, 64) if size == 2 else (128,)) if (n * size) % w == 0), 0)

    @classmethod
    def box_cols(cls, elem, n: int) -> int:
        """Columns of one box row (0: n is not a whole number of 64-byte rows)."""
        return cls.row_bytes(elem, n) // (4 if type_name(elem) == "f32" else 2)

    def box(self) -> tuple[int, int]:
        return (self.ROWS, self.box_cols(self.dest.type.element_type, self.n.value.data))

    def swizzle(self) -> int:
        return self.row_bytes(self.dest.type.element_type, self.n.value.data)

    def verify_(self) -> None:
        n = self.n.value.data
        _check_wgacc(self, self.value.type, self.dest.type, n)
        if type_name(self.dest.type.element_type) not in self.TYPES:
            fail(self, f"memref {self.dest.type}: the TMA store epilogue writes bf16, f16 or f32")
        if not self.box_cols(self.dest.type.element_type, n):
            fail(self, f"n={n} must be a multiple of 32 (whole boxes of 64-byte rows; 128-byte rows for f32)")
        check_smem_offset(self, "stage", self.stage.value.data, 1024)
        if (self.part is None) != (self.parts is None):
            fail(self, "a window takes both the operand (`window %part`) and the parts property")
        if self.parts is not None:
            parts, boxes = self.parts.value.data, n // self.box()[1]
            if not 2 <= parts <= MAX_SPLITK or boxes % parts:
                fail(self, f"parts={parts}: the {boxes} boxes of n={n} must split into 2 to {MAX_SPLITK} equal runs")


@irdl_op_definition
class TmaStoreDrainOp(NvOp):
    """Each warpgroup's issuing thread waits until its bulk tensor stores are complete (before the CTA exits)."""

    name = "nv.tma_store_drain"
    MIN_ARCH: ClassVar[str] = "sm_90"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


def _check_block(op) -> None:
    """What every fixup takes and gives: a 64 x n f32 accumulator block in, the same type out."""
    n = op.n.value.data
    if n % 8 or not 8 <= n <= 256:
        fail(op, f"n={n} must be a multiple of 8 in [8, 256]")
    expect_vec(op, "value", op.value.type, n // 2, f32)
    if op.result.type != op.value.type:
        fail(op, f"result {op.result.type} differs from value {op.value.type}")


def _check_fixup(op) -> None:
    """What split-K's and stream-K's fixups share: a block (`_check_block`), 1-4 blocks a tile, a 4-byte verdict
    word."""
    _check_block(op)
    blocks = op.blocks.value.data
    if not 1 <= blocks <= 4:
        fail(op, f"blocks={blocks} must be in [1, 4] (64-row blocks of a tile of at most 256 rows)")
    check_smem_offset(op, "flag", op.flag.value.data, 4)


@irdl_op_definition
class SplitkFixupOp(NvOp):
    """Split-K in one launch: split `split` of `splits` hands its 64 x n accumulator block over; `last` is true in
    the warpgroup that arrives last for this (tile, block), whose `result` is then the sum over all splits.

    The CTAs that share a tile compute their K ranges at once; each writes its block, in the accumulator's own
    register order (float4 per thread, coalesced), into record `tile` of the kernel's scratch buffer
    (`tsr_scratch`, owned by the runtime: `record_bytes` per logical tile), fences it and bumps the block's
    arrival counter. The warpgroup that brings the counter to `splits` resets it to 0 (the buffer stays ready for
    the next launch) and adds the splits in order 0..splits-1, its own from registers: the sum, and so the
    result, is the same whichever split arrives last. `flag` is a shared-memory word per consumer warpgroup that
    carries the verdict from the thread that bumped the counter to the warpgroup (named barrier 1 + consumer).

    With `scatter` every split's warpgroup, after its arrival, waits until the counter reaches `splits`, then sums
    its own 1/splits of the block's columns (8-column groups [s g / S, (s + 1) g / S), in split order, its own part
    from registers; the rest of `result` is this split's part alone) and `last` is true for all: each stores its
    columns (nv.wgacc_store_tma's window). A split never writes the columns it owns to scratch. A second arrival
    after the sum counts to 2 x splits, and the one that gets there resets the counter. A split waits for the
    others, so every CTA of the launch must be resident at once (the kernel is nv.coresident).
    """

    name = "nv.splitk_fixup"
    MIN_ARCH: ClassVar[str] = "sm_90"
    SMEM: ClassVar[str] = "write"
    MAX_SPLITS: ClassVar[int] = MAX_SPLITK
    value = operand_def(VectorType)
    tile = operand_def(IndexType)
    split = operand_def(IndexType)
    block = operand_def(IndexType)
    consumer = operand_def(IndexType)
    n = prop_def(IntegerAttr)
    splits = prop_def(IntegerAttr)
    blocks = prop_def(IntegerAttr)
    flag = prop_def(IntegerAttr)
    scatter = opt_prop_def(UnitAttr)
    result = result_def(VectorType)
    last = result_def(i1)
    assembly_format = ("$value `,` $tile `,` $split `,` $block `,` $consumer attr-dict `:` type($value) `->` "
                       "type($result)")

    def __init__(self, value: SSAValue, tile: SSAValue, split: SSAValue, block: SSAValue, consumer: SSAValue, *,
                 n: int, splits: int, blocks: int, flag: int, scatter: bool = False):
        props = {"n": int_attr(n), "splits": int_attr(splits), "blocks": int_attr(blocks), "flag": int_attr(flag)}
        if scatter:
            props["scatter"] = UnitAttr()
        super().__init__(operands=[value, tile, split, block, consumer], result_types=[value.type, i1],
                         properties=props)

    def scatters(self) -> bool:
        return self.scatter is not None

    @staticmethod
    def partial_bytes(n: int, splits: int, blocks: int) -> int:
        """Bytes of a tile record's partial blocks (every split's 64 x n f32 blocks); its counters follow."""
        return splits * blocks * 64 * n * 4

    @classmethod
    def record_bytes(cls, n: int, splits: int, blocks: int) -> int:
        """Scratch bytes per logical tile: the partial blocks, then one u32 counter per block (16 B)."""
        return cls.partial_bytes(n, splits, blocks) + 16

    def verify_(self) -> None:
        _check_fixup(self)
        splits = self.splits.value.data
        if not 2 <= splits <= self.MAX_SPLITS:
            fail(self, f"splits={splits} must be in [2, {self.MAX_SPLITS}] (one split needs no fixup)")
        if self.scatters() and (self.n.value.data // 8) % splits:
            fail(self, f"scatter with splits={splits}: the n={self.n.value.data} block's {self.n.value.data // 8} "
                       f"8-column groups must split evenly among the splits")


@irdl_op_definition
class StreamkFixupOp(NvOp):
    """Stream-K: piece `piece` of `pieces` of a tile hands its 64 x n accumulator block over; `last` is true in the
    warpgroup that arrives last for this (tile, block), whose `result` is then the sum over the pieces.

    A tile of one piece (`pieces` = 1, a tile one CTA ran whole) passes its value through with `last` true. Else
    each piece writes its block into its CTA's scratch slot (`slot_bytes`; slot `first_slot + slot_stride *
    piece`, plus `head` for piece 0: a CTA hands over at most two pieces, the first and the last tile its range
    crosses, so it owns two slots), fences it and bumps the (tile, block) arrival counter, which follows the
    2 x gridDim.x slots (`COUNTER_BYTES` per tile). The warpgroup that brings it to `pieces` resets it and adds
    the pieces in order 0..pieces-1 from the slots, its own included: the same sum whichever arrives last.
    `flag` is a shared-memory word per consumer warpgroup that carries the verdict (named barrier 1 + consumer).
    """

    name = "nv.streamk_fixup"
    MIN_ARCH: ClassVar[str] = "sm_90"
    SMEM: ClassVar[str] = "write"
    COUNTER_BYTES: ClassVar[int] = 16  # per tile: one u32 per 64-row block, at most 4
    value = operand_def(VectorType)
    tile = operand_def(IndexType)
    piece = operand_def(IndexType)
    pieces = operand_def(IndexType)
    first_slot = operand_def(IndexType)
    head = operand_def(IndexType)
    block = operand_def(IndexType)
    consumer = operand_def(IndexType)
    n = prop_def(IntegerAttr)
    blocks = prop_def(IntegerAttr)
    slot_stride = prop_def(IntegerAttr)
    flag = prop_def(IntegerAttr)
    result = result_def(VectorType)
    last = result_def(i1)
    assembly_format = ("$value `,` $tile `,` $piece `,` $pieces `,` $first_slot `,` $head `,` $block `,` $consumer "
                       "attr-dict `:` type($value) `->` type($result)")

    def __init__(self, value: SSAValue, tile: SSAValue, piece: SSAValue, pieces: SSAValue, first_slot: SSAValue,
                 head: SSAValue, block: SSAValue, consumer: SSAValue, *, n: int, blocks: int, slot_stride: int,
                 flag: int):
        super().__init__(operands=[value, tile, piece, pieces, first_slot, head, block, consumer],
                         result_types=[value.type, i1],
                         properties={"n": int_attr(n), "blocks": int_attr(blocks), "slot_stride": int_attr(slot_stride),
                                     "flag": int_attr(flag)})

    @staticmethod
    def slot_bytes(n: int, blocks: int) -> int:
        """Scratch bytes of one slot: a whole tile's 64 x n f32 blocks."""
        return blocks * 64 * n * 4

    def verify_(self) -> None:
        _check_fixup(self)
        stride = self.slot_stride.value.data
        if stride not in (2, 4):
            fail(self, f"slot_stride={stride} must be 2 (two slots per CTA) or 4 (per 2-CTA cluster)")


@irdl_op_definition
class ClusterSplitkFixupOp(NvOp):
    """Split-K inside a 2-CTA cluster: both CTAs ran half of one tile's K steps; rank 1 sends its 64 x n block to
    rank 0, whose `result` is the sum (rank 0's part + rank 1's, in that order) and whose `last` is true.

    No global memory, fence or counter: every thread of rank 1 writes its float4s with `st.async` into rank 0's
    receive buffer (slot `slot`: `buffer` + slot * 64 * n * 4 bytes of shared memory; float4 j of warpgroup
    thread t at 2048 j + 16 t), each completing its bytes on rank 0's `full` barrier of the slot; rank 0's
    thread 0 arms that barrier with the block's byte count, every thread waits for it, adds, and after the
    warpgroup's named barrier (1 + consumer) thread 0 frees the slot by arriving on rank 1's `empty` barrier.
    Rank 1 waits on that before it sends the next tile's block. `ordinal` is the tile's count in this
    consumer's walk: both barriers complete one phase per tile. A slot per (consumer, 64-row block) it holds.
    """

    name = "nv.cluster_splitk_fixup"
    MIN_ARCH: ClassVar[str] = "sm_90"
    SMEM: ClassVar[str] = "write"
    value = operand_def(VectorType)
    rank = operand_def(IndexType)
    ordinal = operand_def(IndexType)
    slot = operand_def(IndexType)
    consumer = operand_def(IndexType)
    n = prop_def(IntegerAttr)
    slots = prop_def(IntegerAttr)
    buffer = prop_def(IntegerAttr)
    full = prop_def(IntegerAttr)
    empty = prop_def(IntegerAttr)
    result = result_def(VectorType)
    last = result_def(i1)
    assembly_format = ("$value `,` $rank `,` $ordinal `,` $slot `,` $consumer attr-dict `:` type($value) `->` "
                       "type($result)")

    def __init__(self, value: SSAValue, rank: SSAValue, ordinal: SSAValue, slot: SSAValue, consumer: SSAValue, *,
                 n: int, slots: int, buffer: int, full: int, empty: int):
        super().__init__(operands=[value, rank, ordinal, slot, consumer], result_types=[value.type, i1],
                         properties={"n": int_attr(n), "slots": int_attr(slots), "buffer": int_attr(buffer),
                                     "full": int_attr(full), "empty": int_attr(empty)})

    @staticmethod
    def slot_bytes(n: int) -> int:
        """Shared-memory bytes of one receive slot: a 64 x n f32 block."""
        return 64 * n * 4

    def verify_(self) -> None:
        _check_block(self)
        slots = self.slots.value.data
        if not 1 <= slots <= 8:
            fail(self, f"slots={slots} must be in [1, 8] (a slot per consumer warpgroup and 64-row block it holds)")
        check_smem_offset(self, "buffer", self.buffer.value.data, 16)
        check_smem_offset(self, "full", self.full.value.data, 8)
        check_smem_offset(self, "empty", self.empty.value.data, 8)
