"""The `nv` dialect: NVIDIA target IR at thread and warp level.

After `lower-tile-to-nv` no op speaks of whole tiles: every value is what one
thread holds. Register data is a builtin `vector<N x T>`, the thread's
registers: for a fragment, the lane's slots of its warp's tile in lane-map
order (`tessera.layouts.warp_tile_map`); for a register tile, the *blocked*
distribution over the CTA's `threads` threads: thread t holds the tile's
row-major flattened elements t, t + threads, t + 2*threads, ... (so
N = ceil(size / threads); slots past the end hold nothing). Shared memory is
a `!nv.smem<RxCxT, pitch>` handle: a row-major buffer whose rows are `pitch`
elements apart (padding against bank conflicts), placed at a byte offset of
the kernel's one dynamic shared-memory block.

Every op declares `MIN_ARCH`, the oldest arch that has its instructions;
`check_target_arch` turns a violation into NV_ARCH_UNSUPPORTED at lowering
time (DESIGN lesson 3). The types and the op base live in `nv_types`, the
blocked-tile and elementwise ops in `nv_blocked_ops`; this module holds the
grid, shared-memory, copy, fragment and mma ops and assembles the dialect. `SMEM` says whether an op reads or writes shared
memory; barrier placement and the emulator's race check rely on it. The
emitter (`tessera.target.nvidia.emit.cuda`) gives each op its CUDA C++ text and
`tessera.target.nvidia.emulate.nv_ir` its reference semantics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IndexType, IntegerAttr, MemRefType, StringAttr, \
    VectorType, f32, f64, i64
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def, var_operand_def
from xdsl.traits import Pure

from tessera.ir.dialect import register_dialect
from tessera.target.nvidia.ir.blocked_ops import (CMP_PREDICATES, CUDA_CORE_MMA_TYPES, MAP_FUNCTIONS, REDUCE_KINDS,
                                       AtomicAddGlobalOp, BlockedMmaOp, ScanSharedOp,
                                       CmpOp, ConvertOp, FillOp, IotaOp, LoadGlobalOp, LoadSharedOp, MapOp,
                                       ReduceSharedOp, SelectOp, SlotsOp, SplatOp, StoreGlobalOp, StoreSharedOp)
from tessera.target.nvidia.ir.types import (AsyncGroupType, NvOp, SmemType, arch_satisfies, async_group, blocked_len,
                                 check_target_arch, expect_vec, fail, i64s, ints, need_arch, smem_type, vec)
from tessera.ir.types import type_name


# --- grid, barrier, shared memory -------------------------------------------------


class _GridOp(NvOp):
    axis = prop_def(IntegerAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, axis: int):
        super().__init__(properties={"axis": IntegerAttr(axis, i64)}, result_types=[IndexType()])

    def verify_(self) -> None:
        if self.axis.value.data not in (0, 1, 2):
            fail(self, f"axis {self.axis.value.data} is not 0, 1 or 2")


@irdl_op_definition
class BlockIdOp(_GridOp):
    """blockIdx along `axis` (tile.program_id)."""

    name = "nv.block_id"


@irdl_op_definition
class GridDimOp(_GridOp):
    """gridDim along `axis` (tile.num_programs)."""

    name = "nv.grid_dim"


@irdl_op_definition
class BarrierOp(NvOp):
    """`bar.sync 0` (__syncthreads): every thread of the CTA arrives before any goes on."""

    name = "nv.barrier"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class AllocSharedOp(NvOp):
    """A shared-memory tile at byte `offset` of the kernel's dynamic shared memory."""

    name = "nv.alloc_shared"
    offset = prop_def(IntegerAttr)
    result = result_def(SmemType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: SmemType, offset: int):
        super().__init__(properties={"offset": IntegerAttr(offset, i64)}, result_types=[result_type])

    def verify_(self) -> None:
        if self.offset.value.data < 0 or self.offset.value.data % 16:
            fail(self, f"offset {self.offset.value.data} must be a non-negative multiple of 16 bytes")


# --- global -> shared copies ------------------------------------------------------


@irdl_op_definition
class CpAsyncTileOp(NvOp):
    """Copy the tile window at `offsets` of a memref into a shared tile with cp.async, one group.

    Elements past the memref edge read `pad` (zero-fill through cp.async's
    src-size when pad is 0). Returns the group's ordinal for nv.cp_async_wait.
    """

    name = "nv.cp_async_tile"
    MIN_ARCH: ClassVar[str] = "sm_80"
    SMEM: ClassVar[str] = "write"
    source = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    dest = operand_def(SmemType)
    pad = prop_def(FloatAttr)
    token = result_def(AsyncGroupType)
    assembly_format = ("$source `[` $offsets `]` `,` $dest attr-dict `:` type($source) `,` type($dest) "
                       "`->` type($token)")

    def __init__(self, source: SSAValue, offsets, dest: SSAValue, pad: float):
        super().__init__(operands=[source, list(offsets), dest], result_types=[async_group],
                         properties={"pad": FloatAttr(pad, f64)})

    def verify_(self) -> None:
        mem, dst = self.source.type, self.dest.type
        if len(self.offsets) != len(mem.get_shape()) or len(dst.get_shape()) > len(mem.get_shape()):
            fail(self, f"{len(self.offsets)} offsets for {mem} and a tile {dst}: one offset per memref dim, "
                       "tile rank <= memref rank")
        if mem.element_type != dst.element_type:
            fail(self, f"memref {mem} and shared tile {dst} differ in element type")


@irdl_op_definition
class CpAsyncWaitOp(NvOp):
    """Wait until the cp.async groups `tokens` have landed (this thread's copies only: add a barrier)."""

    name = "nv.cp_async_wait"
    MIN_ARCH: ClassVar[str] = "sm_80"
    tokens = var_operand_def(AsyncGroupType)
    assembly_format = "$tokens attr-dict `:` type($tokens)"

    def __init__(self, *tokens: SSAValue):
        super().__init__(operands=[list(tokens)])


# --- fragments (per-warp register tiles in lane-map order) ------------------------


def fragment_elem(role: str, dtype: Attribute) -> Attribute:
    """Register element type of a fragment: the multiplicand type for a/b, f32 for the accumulator."""
    return f32 if role == "acc" else dtype


class _FragmentOp(NvOp):
    """Base of ops on a warp grid of fragments: `warps` [wm, wn]; warp w = wi*wn + wj of the CTA.

    Warp (wi, wj) holds the fragment at rows wi*m (roles a, acc) and columns
    wj*n (roles b, acc) from `offsets`; lane l's slot s is element
    (rows[l, s], cols[l, s]) of it, from `warp_tile_map(family, role, m, n, k, dtype)`.
    """

    family = prop_def(StringAttr)
    role = prop_def(StringAttr)
    mnk = prop_def(DenseArrayBase)
    dtype = prop_def(Attribute)
    warps = prop_def(DenseArrayBase)

    @staticmethod
    def frag_props(family: str, role: str, mnk: Sequence[int], dtype: Attribute, warps: Sequence[int]) -> dict:
        return {"family": StringAttr(family), "role": StringAttr(role), "mnk": i64s(mnk), "dtype": dtype,
                "warps": i64s(warps)}

    def lane_map(self):
        from tessera.layouts import warp_tile_map

        m, n, k = ints(self.mnk)
        try:
            return warp_tile_map(self.family.data, self.role.data, m, n, k, type_name(self.dtype))
        except ValueError as err:
            fail(self, str(err))

    def origin(self) -> tuple[int, int]:
        """(row, col) step between neighbouring warps of the grid for this role."""
        m, n, k = ints(self.mnk)
        rows, cols = {"a": (m, k), "b": (k, n), "acc": (m, n)}[self.role.data]
        return (rows if self.role.data != "b" else 0, cols if self.role.data != "a" else 0)

    def footprint(self) -> tuple[int, int]:
        m, n, k = ints(self.mnk)
        wm, wn = ints(self.warps)
        rows, cols = {"a": (m, k), "b": (k, n), "acc": (m, n)}[self.role.data]
        return rows * (wm if self.role.data != "b" else 1), cols * (wn if self.role.data != "a" else 1)

    def check_fragment(self, value: SSAValue, what: str) -> None:
        if len(ints(self.warps)) != 2 or min(ints(self.warps)) <= 0:
            fail(self, f"warps {list(ints(self.warps))} must be two positive integers")
        lm = self.lane_map()
        expect_vec(self, what, value.type, lm.regs, fragment_elem(self.role.data, self.dtype))

    def check_offsets(self, n: int) -> None:
        if len(self.offsets) != n:
            fail(self, f"{len(self.offsets)} offsets where {n} are needed")


@irdl_op_definition
class LdFragSharedOp(_FragmentOp):
    """Each lane loads its fragment slots from a shared tile (per-lane loads at lane-map positions)."""

    name = "nv.ldfrag_shared"
    SMEM: ClassVar[str] = "read"
    source = operand_def(SmemType)
    offsets = var_operand_def(IndexType)
    result = result_def(VectorType)
    assembly_format = "$source `[` $offsets `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, offsets, result_type: VectorType, **frag):
        super().__init__(operands=[source, list(offsets)], result_types=[result_type], properties=self.frag_props(**frag))

    def verify_(self) -> None:
        self.check_fragment(self.result, "result")
        self.check_offsets(len(self.source.type.get_shape()))


class _FragmentStoreOp(_FragmentOp):
    """Base of the fragment stores `value, dest[offsets]`; subclasses declare the operands (IRDL keeps
    the declaration order, so all three stay together) with the destination's kind."""

    assembly_format = "$value `,` $dest `[` $offsets `]` attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue, offsets, **frag):
        super().__init__(operands=[value, dest, list(offsets)], properties=self.frag_props(**frag))

    def verify_(self) -> None:
        self.check_fragment(self.value, "stored value")
        self.check_offsets(len(self.dest.type.get_shape()))


@irdl_op_definition
class StFragSharedOp(_FragmentStoreOp):
    """Each lane stores its fragment slots into a shared tile (the inverse of nv.ldfrag_shared)."""

    name = "nv.stfrag_shared"
    SMEM: ClassVar[str] = "write"
    value = operand_def(VectorType)
    dest = operand_def(SmemType)
    offsets = var_operand_def(IndexType)


@irdl_op_definition
class StFragGlobalOp(_FragmentStoreOp):
    """Each lane stores its accumulator slots to global memory; elements past the memref edge are dropped."""

    name = "nv.stfrag_global"
    value = operand_def(VectorType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)

    def verify_(self) -> None:
        super().verify_()
        if self.dest.type.element_type != f32:
            fail(self, f"destination {self.dest.type} must hold f32 (the accumulator type)")


@irdl_op_definition
class MmaSyncOp(NvOp):
    """`mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}` over every atom of an m x n x k warp tile.

    Atoms run in (mi, ni, ki) order, each reading and writing the accumulator
    slots of atom (mi, ni): acc + a @ b, with the incoming accumulator `acc`.
    """

    name = "nv.mma_sync"
    MIN_ARCH: ClassVar[str] = "sm_80"
    a = operand_def(VectorType)
    b = operand_def(VectorType)
    acc = operand_def(VectorType)
    mnk = prop_def(DenseArrayBase)
    dtype = prop_def(Attribute)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc) `->` type($result)"

    def __init__(self, a: SSAValue, b: SSAValue, acc: SSAValue, mnk: Sequence[int], dtype: Attribute,
                 result_type: Attribute | None = None):
        super().__init__(operands=[a, b, acc], result_types=[result_type or acc.type],
                         properties={"mnk": i64s(mnk), "dtype": dtype})

    def lane_maps(self):
        from tessera.layouts import warp_tile_map

        m, n, k = ints(self.mnk)
        try:
            return tuple(warp_tile_map("mma_sync", role, m, n, k, type_name(self.dtype)) for role in ("a", "b", "acc"))
        except ValueError as err:
            fail(self, str(err))

    def verify_(self) -> None:
        a, b, c = self.lane_maps()
        expect_vec(self, "a", self.a.type, a.regs, self.dtype)
        expect_vec(self, "b", self.b.type, b.regs, self.dtype)
        expect_vec(self, "acc", self.acc.type, c.regs, f32)
        if self.result.type != self.acc.type:
            fail(self, f"result {self.result.type} differs from acc {self.acc.type}")


NV_OPS = (BlockIdOp, GridDimOp, BarrierOp, AllocSharedOp, CpAsyncTileOp, CpAsyncWaitOp, LdFragSharedOp,
          StFragSharedOp, StFragGlobalOp, MmaSyncOp, LoadGlobalOp, StoreGlobalOp, AtomicAddGlobalOp, StoreSharedOp,
          LoadSharedOp, ReduceSharedOp, ScanSharedOp, IotaOp, MapOp, CmpOp, SelectOp, ConvertOp, SplatOp, FillOp, SlotsOp, BlockedMmaOp)

from tessera.target.nvidia.ir.hopper_ops import HOPPER_OPS  # noqa: E402 - the Hopper ops build on nv_types only

from tessera.target.nvidia.ir.wgreg_ops import WGREG_OPS  # noqa: E402 - likewise

from tessera.target.nvidia.ir.sched_ops import SCHED_OPS  # noqa: E402 - likewise

NV_OPS = NV_OPS + HOPPER_OPS + tuple(WGREG_OPS) + SCHED_OPS
Nv = Dialect("nv", list(NV_OPS), [SmemType, AsyncGroupType])
register_dialect(Nv)

__all__ = [  # the dialect's public face: ops, types and helpers (defined here, in nv_types and nv_blocked_ops)
    *(cls.__name__ for cls in NV_OPS), "AsyncGroupType", "CMP_PREDICATES", "CUDA_CORE_MMA_TYPES", "MAP_FUNCTIONS",
    "NV_OPS", "Nv", "NvOp", "REDUCE_KINDS", "SmemType", "arch_satisfies", "async_group", "blocked_len",
    "check_target_arch", "expect_vec", "fail", "fragment_elem", "i64s", "ints", "need_arch", "smem_type", "vec",
]
