"""nv ops on register tiles in the blocked distribution, and per-thread elementwise ops on register vectors.

A register tile of logical `shape` over `threads` threads is blocked: thread
t holds the row-major flattened elements t, t + threads, t + 2*threads, ...
as the slots of a `vector<ceil(size/threads) x T>`. Elementwise ops need no
layout at all: they act slot by slot. `nv.blocked_mma` is the CUDA-core mma
(f32 inputs): each thread computes its own blocked slots of acc + A @ B.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (DenseArrayBase, FloatAttr, IndexType, IntegerAttr, MemRefType, StringAttr,
                                   VectorType, f64, i1, i64)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import AttrSizedOperandSegments, BaseAttr, VarConstraint, irdl_op_definition, operand_def, \
    opt_operand_def, prop_def, result_def, traits_def, var_operand_def
from xdsl.traits import Pure

from tessera.target.nvidia.ir.types import NvOp, SmemType, blocked_len, expect_vec, fail, i64s, ints, vec
from tessera.ir.tile_memory_ops import ATOMIC_TYPES
from tessera.ir.types import is_float, is_int, type_name


# --- register tiles in the blocked distribution -----------------------------------


class _BlockedOp(NvOp):
    """Base of ops on a register tile of logical `shape` spread over `threads` threads (blocked)."""

    shape = prop_def(DenseArrayBase)
    threads = prop_def(IntegerAttr)

    @staticmethod
    def blocked_props(shape: Sequence[int], threads: int, **extra) -> dict:
        return {"shape": i64s(shape), "threads": IntegerAttr(threads, i64), **extra}

    def tile_shape(self) -> tuple[int, ...]:
        return ints(self.shape)

    def nthreads(self) -> int:
        return self.threads.value.data

    def check_blocked(self, value: SSAValue, what: str, elem: Attribute | None = None) -> None:
        shape = self.tile_shape()
        if not shape or min(shape) <= 0 or self.nthreads() <= 0 or self.nthreads() % 32:
            fail(self, f"shape {list(shape)} and threads {self.nthreads()} must be positive (threads a multiple of 32)")
        expect_vec(self, what, value.type, blocked_len(shape, self.nthreads()), elem)


@irdl_op_definition
class LoadGlobalOp(_BlockedOp):
    """Guarded per-element loads of a tile at `offsets` (tile = trailing memref dims); outside reads `pad`."""

    name = "nv.load_global"
    source = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    pad = prop_def(FloatAttr)
    result = result_def(VectorType)
    assembly_format = "$source `[` $offsets `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, offsets, result_type: VectorType, shape, threads: int, pad: float):
        super().__init__(operands=[source, list(offsets)], result_types=[result_type],
                         properties=self.blocked_props(shape, threads, pad=FloatAttr(pad, f64)))

    def verify_(self) -> None:
        self.check_blocked(self.result, "result", self.source.type.element_type)
        if len(self.offsets) != len(self.source.type.get_shape()) or len(self.tile_shape()) > len(self.offsets):
            fail(self, "give one offset per memref dim; the tile covers the trailing dims")


class _GlobalWriteOp(_BlockedOp):
    """Base of guarded per-element writes of a tile at `offsets`: elements past the memref edge are skipped, and
    with `mask` (the blocked slots of an i1 tile of the same shape) so are those whose mask slot is false."""

    WHAT: ClassVar[str] = "stored value"
    value = operand_def(VectorType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    mask = opt_operand_def(VectorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = ("$value `,` $dest `[` $offsets `]` (`if` $mask^ `:` type($mask))? attr-dict `:` type($value) "
                       "`,` type($dest)")

    def __init__(self, value: SSAValue, dest: SSAValue, offsets, shape, threads: int, mask: SSAValue | None = None):
        super().__init__(operands=[value, dest, list(offsets), [] if mask is None else [mask]],
                         properties=self.blocked_props(shape, threads))

    def verify_(self) -> None:
        self.check_blocked(self.value, self.WHAT, self.dest.type.element_type)
        if self.mask is not None:
            self.check_blocked(self.mask, "mask", i1)
        if len(self.offsets) != len(self.dest.type.get_shape()) or len(self.tile_shape()) > len(self.offsets):
            fail(self, "give one offset per memref dim; the tile covers the trailing dims")


@irdl_op_definition
class StoreGlobalOp(_GlobalWriteOp):
    """Guarded per-element stores of a tile (see _GlobalWriteOp)."""

    name = "nv.store_global"


@irdl_op_definition
class AtomicAddGlobalOp(_GlobalWriteOp):
    """Per-element atomicAdd of a tile into memory (see _GlobalWriteOp): f32, f64 or i32."""

    name = "nv.atomic_add_global"
    WHAT: ClassVar[str] = "added value"

    def verify_(self) -> None:
        super().verify_()
        if type_name(self.dest.type.element_type) not in ATOMIC_TYPES:
            fail(self, f"atomicAdd takes f32, f64 or i32, not {type_name(self.dest.type.element_type)}")


@irdl_op_definition
class StoreSharedOp(_BlockedOp):
    """Each thread writes its blocked elements to their places in a shared tile of the same shape."""

    name = "nv.store_shared"
    SMEM: ClassVar[str] = "write"
    value = operand_def(VectorType)
    dest = operand_def(SmemType)
    assembly_format = "$value `,` $dest attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue, threads: int):
        super().__init__(operands=[value, dest], properties=self.blocked_props(dest.type.get_shape(), threads))

    def verify_(self) -> None:
        self.check_blocked(self.value, "stored value", self.dest.type.element_type)
        if self.dest.type.get_shape() != self.tile_shape():
            fail(self, f"shape {list(self.tile_shape())} differs from the shared tile {self.dest.type}")


@irdl_op_definition
class LoadSharedOp(_BlockedOp):
    """Blocked element i (multi-index) of the result reads shared element sum(i[d] * strides[d]).

    Strides express a plain read (the buffer's own strides), a transpose
    (strides swapped) or a broadcast (stride 0 along an expanded dim).
    """

    name = "nv.load_shared"
    SMEM: ClassVar[str] = "read"
    source = operand_def(SmemType)
    strides = prop_def(DenseArrayBase)
    result = result_def(VectorType)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: VectorType, shape, threads: int, strides):
        super().__init__(operands=[source], result_types=[result_type],
                         properties=self.blocked_props(shape, threads, strides=i64s(strides)))

    def verify_(self) -> None:
        self.check_blocked(self.result, "result", self.source.type.element_type)
        strides, shape = ints(self.strides), self.tile_shape()
        if len(strides) != len(shape) or min(strides) < 0:
            fail(self, f"strides {list(strides)} must be one non-negative stride per dim of {list(shape)}")
        if sum((d - 1) * s for d, s in zip(shape, strides)) >= self.source.type.extent():
            fail(self, f"strides {list(strides)} reach past the end of {self.source.type}")


REDUCE_KINDS = ("sum", "max", "min")


class _AlongAxisOp(_BlockedOp):
    """Base of ops that read a shared tile along `axis` with a `kind` and give a blocked result (reduce, scan)."""

    source = operand_def(SmemType)
    kind = prop_def(StringAttr)
    axis = prop_def(IntegerAttr)
    result = result_def(VectorType)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"
    KEEPS_AXIS: ClassVar[bool] = True  # the result's shape keeps the axis (scan) or makes it size 1 (reduce)

    def __init__(self, source: SSAValue, result_type: VectorType, threads: int, kind: str, axis: int):
        shape = list(source.type.get_shape())
        if not self.KEEPS_AXIS:
            shape[axis] = 1
        super().__init__(operands=[source], result_types=[result_type],
                         properties=self.blocked_props(shape, threads, kind=StringAttr(kind),
                                                       axis=IntegerAttr(axis, i64)))


@irdl_op_definition
class ReduceSharedOp(_AlongAxisOp):
    """Blocked result element i = reduction `kind` over the shared tile's `axis` at i (axis kept as size 1)."""

    name = "nv.reduce_shared"
    SMEM: ClassVar[str] = "read"
    KEEPS_AXIS: ClassVar[bool] = False

    def verify_(self) -> None:
        self.check_blocked(self.result, "result", self.source.type.element_type)
        axis, src = self.axis.value.data, self.source.type.get_shape()
        want = tuple(1 if d == axis else s for d, s in enumerate(src)) if 0 <= axis < len(src) else None
        if self.kind.data not in REDUCE_KINDS or want != self.tile_shape():
            fail(self, f"kind '{self.kind.data}' (one of {', '.join(REDUCE_KINDS)}) and axis {axis} of "
                       f"{self.source.type} must give shape {list(self.tile_shape())}")


@irdl_op_definition
class ScanSharedOp(_AlongAxisOp):
    """The inclusive prefix sum of the shared tile along `axis`, computed in place (Hillis-Steele: log2 of the
    axis length steps, each a read of the element `d` back, a CTA barrier and a write), then read back blocked."""

    name = "nv.scan_shared"
    SMEM: ClassVar[str] = "write"

    def verify_(self) -> None:
        self.check_blocked(self.result, "result", self.source.type.element_type)
        axis, src = self.axis.value.data, self.source.type.get_shape()
        if self.kind.data != "sum" or not 0 <= axis < len(src) or tuple(src) != self.tile_shape():
            fail(self, f"kind '{self.kind.data}' (sum) and axis {axis} must scan {self.source.type} in place, shape "
                       f"{list(self.tile_shape())}")


@irdl_op_definition
class IotaOp(_BlockedOp):
    """Each blocked element holds its index along `axis` of the tile."""

    name = "nv.iota"
    axis = prop_def(IntegerAttr)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: VectorType, shape, threads: int, axis: int):
        super().__init__(result_types=[result_type],
                         properties=self.blocked_props(shape, threads, axis=IntegerAttr(axis, i64)))

    def verify_(self) -> None:
        self.check_blocked(self.result, "result")
        if not is_int(self.result.type.element_type) or not 0 <= self.axis.value.data < len(self.tile_shape()):
            fail(self, f"needs an integer result and an axis inside {list(self.tile_shape())}")


CUDA_CORE_MMA_TYPES = ("f32", "f64")


@irdl_op_definition
class BlockedMmaOp(_BlockedOp):
    """`%d = nv.blocked_mma %sa, %sb, %acc`: acc + A @ B on CUDA cores, the result blocked over `shape` [M, N].

    A (M x K) and B (K x N) are shared tiles of f32 (or f64). Slot i of
    thread t is element (r, c) = divmod(t + i * threads, N); it starts at the
    incoming `acc` slot and takes one fused multiply-add per k, in k order:
    d = fma(A[r, k], B[k, c], d). This is the exact-precision path for f32
    inputs: tensor cores would round them to tf32 (10 mantissa bits).
    Slots past the tile's end keep their acc value.
    """

    name = "nv.blocked_mma"
    MIN_ARCH: ClassVar[str] = "sm_30"  # FFMA / DFMA: every arch has them
    SMEM: ClassVar[str] = "read"
    a = operand_def(SmemType)
    b = operand_def(SmemType)
    acc = operand_def(VectorType)
    result = result_def(VectorType)
    assembly_format = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc) `->` type($result)"

    def __init__(self, a: SSAValue, b: SSAValue, acc: SSAValue, threads: int, result_type: Attribute | None = None):
        (m, _), (_, n) = a.type.get_shape(), b.type.get_shape()
        super().__init__(operands=[a, b, acc], result_types=[result_type or acc.type],
                         properties=self.blocked_props((m, n), threads))

    def verify_(self) -> None:
        a, b = self.a.type, self.b.type
        if len(a.get_shape()) != 2 or len(b.get_shape()) != 2 or a.get_shape()[1] != b.get_shape()[0] or \
                (a.get_shape()[0], b.get_shape()[1]) != self.tile_shape():
            fail(self, f"a {a} and b {b} must be M x K and K x N shared tiles for the M x N shape "
                       f"{list(self.tile_shape())}")
        if a.element_type != b.element_type or type_name(a.element_type) not in CUDA_CORE_MMA_TYPES:
            fail(self, f"a {a} and b {b} must both hold one of {', '.join(CUDA_CORE_MMA_TYPES)}; 16-bit inputs "
                       "go through fragments and nv.mma_sync")
        self.check_blocked(self.acc, "acc", a.element_type)
        if self.result.type != self.acc.type:
            fail(self, f"result {self.result.type} differs from acc {self.acc.type}")


# --- per-thread elementwise ops on register vectors -------------------------------

# fn -> (arity, floats only)
MAP_FUNCTIONS: dict[str, tuple[int, bool]] = {
    "add": (2, False), "sub": (2, False), "mul": (2, False), "div": (2, False), "max": (2, False),
    "min": (2, False), "neg": (1, False), "abs": (1, False), "exp": (1, True), "exp2": (1, True),
    "log": (1, True), "sqrt": (1, True), "rsqrt": (1, True), "tanh": (1, True), "erf": (1, True),
}
CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class MapOp(NvOp):
    """`%r = nv.map "add" %x, %y`: `fn` on each slot; 16-bit floats compute in f32 and round to nearest even."""

    name = "nv.map"
    T: ClassVar = VarConstraint("T", BaseAttr(VectorType))
    fn = prop_def(StringAttr)
    args = var_operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$fn $args attr-dict `:` type($result)"

    def __init__(self, fn: str, *args: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[list(args)], result_types=[result_type or args[0].type],
                         properties={"fn": StringAttr(fn)})

    def verify_(self) -> None:
        spec = MAP_FUNCTIONS.get(self.fn.data)
        if spec is None or len(self.args) != spec[0]:
            fail(self, f"fn '{self.fn.data}' with {len(self.args)} operands is not one of "
                       f"{', '.join(f'{k}/{a}' for k, (a, _) in MAP_FUNCTIONS.items())}")
        t = expect_vec(self, "result", self.result.type)
        if any(a.type != t for a in self.args):
            fail(self, f"operands {[str(a.type) for a in self.args]} must all be {t}")
        if spec[1] and not is_float(t.element_type):
            fail(self, f"fn '{self.fn.data}' needs float elements, got {t}")


@irdl_op_definition
class CmpOp(NvOp):
    """Slot-wise comparison giving i1 slots (IEEE: every predicate but ne is false on NaN)."""

    name = "nv.cmp"
    T: ClassVar = VarConstraint("T", BaseAttr(VectorType))
    predicate = prop_def(StringAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$predicate $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)"

    def __init__(self, predicate: str, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[lhs, rhs], result_types=[result_type or vec(lhs.type.get_shape()[0], i1)],
                         properties={"predicate": StringAttr(predicate)})

    def verify_(self) -> None:
        t = expect_vec(self, "lhs", self.lhs.type)
        if self.predicate.data not in CMP_PREDICATES or self.rhs.type != t:
            fail(self, f"predicate '{self.predicate.data}' must be one of {', '.join(CMP_PREDICATES)} and rhs "
                       f"{self.rhs.type} must equal lhs {t}")
        expect_vec(self, "result", self.result.type, t.get_shape()[0], i1)


@irdl_op_definition
class SelectOp(NvOp):
    """Slot-wise `cond ? lhs : rhs`."""

    name = "nv.select"
    T: ClassVar = VarConstraint("T", BaseAttr(VectorType))
    cond = operand_def(VectorType)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($result)"

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[cond, lhs, rhs], result_types=[result_type or lhs.type])

    def verify_(self) -> None:
        t = expect_vec(self, "result", self.result.type)
        expect_vec(self, "condition", self.cond.type, t.get_shape()[0], i1)
        if self.lhs.type != t or self.rhs.type != t:
            fail(self, f"values {self.lhs.type} and {self.rhs.type} must both be {t}")


@irdl_op_definition
class ConvertOp(NvOp):
    """Slot-wise element type conversion (floats round to nearest even; float -> int truncates)."""

    name = "nv.convert"
    source = operand_def(VectorType)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: VectorType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        s = expect_vec(self, "source", self.source.type)
        expect_vec(self, "result", self.result.type, s.get_shape()[0])


@irdl_op_definition
class SplatOp(NvOp):
    """Every slot gets the scalar."""

    name = "nv.splat"
    scalar = operand_def()
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$scalar attr-dict `:` type($scalar) `->` type($result)"

    def __init__(self, scalar: SSAValue, result_type: VectorType):
        super().__init__(operands=[scalar], result_types=[result_type])

    def verify_(self) -> None:
        expect_vec(self, "result", self.result.type, None, self.scalar.type)


@irdl_op_definition
class FillOp(NvOp):
    """Every slot gets the constant `value` (an integer value for integer slots)."""

    name = "nv.fill"
    value = prop_def(FloatAttr)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, value: float, result_type: VectorType):
        super().__init__(properties={"value": FloatAttr(float(value), f64)}, result_types=[result_type])

    def verify_(self) -> None:
        t = expect_vec(self, "result", self.result.type)
        v = self.value.value.data
        if is_int(t.element_type) and not (math.isfinite(v) and v == int(v)):
            fail(self, f"value {v} is not an integer for {t}")


@irdl_op_definition
class SlotsOp(NvOp):
    """Thread-local re-slotting: result slot i = source slot (scale * i + offset), on the same thread.

    What a blocked broadcast becomes when every element a thread needs is one it
    holds (a 1 x N row over N threads), so no shared memory or barrier is needed.
    """

    name = "nv.slots"
    source = operand_def(VectorType)
    scale = prop_def(IntegerAttr)
    offset = prop_def(IntegerAttr)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: VectorType, scale: int, offset: int):
        super().__init__(operands=[source], result_types=[result_type],
                         properties={"scale": IntegerAttr(scale, i64), "offset": IntegerAttr(offset, i64)})

    def verify_(self) -> None:
        s = expect_vec(self, "source", self.source.type)
        r = expect_vec(self, "result", self.result.type, None, s.element_type)
        a, b, n = self.scale.value.data, self.offset.value.data, r.get_shape()[0]
        if min(b, a * (n - 1) + b) < 0 or max(b, a * (n - 1) + b) >= s.get_shape()[0]:
            fail(self, f"slots {a} * i + {b} for i < {n} fall outside the {s.get_shape()[0]} source slots")
