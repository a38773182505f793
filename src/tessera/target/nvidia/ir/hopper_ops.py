"""nv ops for Hopper (sm_90 / sm_90a): mbarriers, TMA, wgmma, register reallocation, persistent grids.

These are what `warp-specialize` lowers a wgmma K-loop kernel to (see
`tessera.target.nvidia.passes.warp_specialize`). Shared memory is addressed by byte
offsets into the kernel's one dynamic shared block (1024-byte aligned: the
128-byte swizzle repeats every 1024 bytes and the wgmma descriptors assume
tiles start on that period). A pipeline stage `s` of a buffer at `base`
with `stage_bytes` per stage lives at `base + s * stage_bytes`; an mbarrier
array at `base` has one 8-byte barrier per stage.

The accumulator of one consumer warpgroup is a `vector<N/2 x f32>` in
wgmma's m64nNk16 D layout: thread t of the warpgroup (warp w = t/32, lane l)
holds, in slot i, element (16w + l/4 + 8*((i/2)%2), 8*(i/4) + 2*(l%4) + i%2)
of its 64 x N tile (`tessera.layouts.wgmma`, checked against the PTX ISA).
`nv.wgacc_load`/`nv.wgacc_store`/`nv.wgacc_store_tma` (in `nv_wgacc_ops`,
re-exported here) move such vectors to and from global memory for fused epilogues.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IndexType, IntegerAttr, MemRefType, StringAttr, VectorType, f32, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict, irdl_op_definition, operand_def,
                       opt_operand_def, opt_prop_def, prop_def, result_def, traits_def, var_operand_def)
from xdsl.irdl.declarative_assembly_format import (CustomDirective, OperandVariable, ParsingState, PrintingState,
                                                   VariadicOperandVariable, irdl_custom_directive)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from tessera.target.nvidia.ir.types import NvOp, check_smem_offset, expect_vec, fail, i64s, int_attr, ints
from tessera.ir.types import type_name
from tessera.target.nvidia.ir.wgacc_ops import (ClusterSplitkFixupOp, SplitkFixupOp, StreamkFixupOp, TmaStoreDrainOp,
                                                WgaccLoadOp, WgaccAtomicAddOp, WgaccStoreOp, WgaccStoreTmaOp)

SWIZZLES = (0, 32, 64, 128)
MAX_CLUSTER = 2  # CTAs per cluster that the lowering and the runtime take (pairs along the tile rows)
WGMMA_TYPES = ("bf16", "f16")


# --- thread and grid identity -------------------------------------------------------


class _IndexValueOp(NvOp):
    """A pure op with no operands whose one result is an index the hardware knows (`%v = nv.op : index`)."""

    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class ThreadIdOp(_IndexValueOp):
    """threadIdx.x: the thread's index in the CTA."""

    name = "nv.thread_id"


@irdl_op_definition
class LogicalGridOp(NvOp):
    """The logical grid along `axis` of a persistent kernel (the launch grid the caller asked for).

    A persistent kernel runs min(logical CTAs, SMs) CTAs that loop over the
    logical tiles; the runtime passes the logical grid as kernel parameters.
    """

    name = "nv.logical_grid"
    axis = prop_def(IntegerAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, axis: int):
        super().__init__(properties={"axis": int_attr(axis)}, result_types=[IndexType()])

    def verify_(self) -> None:
        if self.axis.value.data not in (0, 1, 2):
            fail(self, f"axis {self.axis.value.data} is not 0, 1 or 2")


@irdl_op_definition
class ClusterRankOp(_IndexValueOp):
    """%cluster_ctarank: this CTA's rank in its thread-block cluster (0 outside a cluster launch)."""

    name = "nv.cluster_rank"
    MIN_ARCH: ClassVar[str] = "sm_90"


@irdl_op_definition
class ClusterSyncOp(NvOp):
    """Every thread of every CTA of the cluster arrives (release) and waits (acquire).

    Needed after mbarrier initialisation (a peer may signal this CTA's barriers
    only once they exist) and before exit (no CTA may leave while a peer can
    still write its shared memory or arrive on its barriers).
    """

    name = "nv.cluster_sync"
    MIN_ARCH: ClassVar[str] = "sm_90"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class SetMaxNRegOp(NvOp):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 regs`: warpgroup register reallocation (producer gives, consumers take)."""

    name = "nv.setmaxnreg"
    MIN_ARCH: ClassVar[str] = "sm_90a"
    regs = prop_def(IntegerAttr)
    action = prop_def(StringAttr)
    assembly_format = "attr-dict"

    def __init__(self, regs: int, action: str):
        super().__init__(properties={"regs": int_attr(regs), "action": StringAttr(action)})

    def verify_(self) -> None:
        r = self.regs.value.data
        if self.action.data not in ("inc", "dec"):
            fail(self, f"action '{self.action.data}' is not inc or dec")
        if not 24 <= r <= 256 or r % 8:
            fail(self, f"regs={r} must be a multiple of 8 in [24, 256]")


@irdl_op_definition
class NamedBarrierOp(NvOp):
    """`bar.sync id, threads` (mode "sync": arrive and wait) or `bar.arrive id, threads` (mode "arrive": count
    without waiting) on hardware barrier `id` (1 to 15; 0 is __syncthreads). A barrier completes once `threads`
    threads have arrived or synced on it, so warpgroups can hand each other a turn: one arrives, the other syncs
    (FlashAttention-3's warp-scheduler barriers)."""

    name = "nv.named_barrier"
    MIN_ARCH: ClassVar[str] = "sm_80"
    id = operand_def(IndexType)
    threads = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    assembly_format = "$id attr-dict"

    def __init__(self, id: SSAValue, threads: int, mode: str):
        super().__init__(operands=[id], properties={"threads": int_attr(threads), "mode": StringAttr(mode)})

    def verify_(self) -> None:
        t = self.threads.value.data
        if self.mode.data not in ("sync", "arrive"):
            fail(self, f"mode '{self.mode.data}' is not sync or arrive")
        if not 32 <= t <= 1024 or t % 32:
            fail(self, f"threads={t} must be a multiple of 32 (whole warps) in [32, 1024]")


# --- mbarriers ------------------------------------------------------------------------


class _BarrierOp(NvOp):
    MIN_ARCH: ClassVar[str] = "sm_90"
    SMEM: ClassVar[str] = "write"
    base = prop_def(IntegerAttr)

    def verify_(self) -> None:
        check_smem_offset(self, "barrier base", self.base.value.data)


@irdl_op_definition
class MbarrierInitOp(_BarrierOp):
    """Thread 0 initialises `count` mbarriers at `base` for `arrivals` arrivals each; then a CTA barrier."""

    name = "nv.mbarrier_init"
    count = prop_def(IntegerAttr)
    arrivals = prop_def(IntegerAttr)
    assembly_format = "attr-dict"

    def __init__(self, base: int, count: int, arrivals: int):
        super().__init__(properties={"base": int_attr(base), "count": int_attr(count), "arrivals": int_attr(arrivals)})

    def verify_(self) -> None:
        super().verify_()
        if not 1 <= self.count.value.data <= 64 or not 1 <= self.arrivals.value.data <= 1024:
            fail(self, f"count={self.count.value.data} must be in [1, 64] and arrivals="
                       f"{self.arrivals.value.data} in [1, 1024]")


@irdl_op_definition
class MbarrierWaitOp(_BarrierOp):
    """Spin until the phase with parity `phase` of barrier `stage` has completed (try_wait.parity)."""

    name = "nv.mbarrier_wait"
    stage = operand_def(IndexType)
    phase = operand_def(IndexType)
    assembly_format = "$stage `,` $phase attr-dict"

    def __init__(self, stage: SSAValue, phase: SSAValue, base: int):
        super().__init__(operands=[stage, phase], properties={"base": int_attr(base)})


@irdl_op_definition
class MbarrierArriveOp(_BarrierOp):
    """Arrive on barrier `stage`: once per warpgroup (its thread 0) or by the calling thread (`per`)."""

    name = "nv.mbarrier_arrive"
    stage = operand_def(IndexType)
    per = prop_def(StringAttr)
    cluster = opt_prop_def(IntegerAttr)  # n: arrive on barrier `stage` of each of the cluster's n CTAs
    assembly_format = "$stage attr-dict"

    def __init__(self, stage: SSAValue, base: int, per: str = "warpgroup", cluster: int | None = None):
        props = {"base": int_attr(base), "per": StringAttr(per)}
        if cluster is not None:
            props["cluster"] = int_attr(cluster)
        super().__init__(operands=[stage], properties=props)

    def verify_(self) -> None:
        super().verify_()
        if self.per.data not in ("warpgroup", "thread"):
            fail(self, f"per='{self.per.data}' is not warpgroup or thread")
        if self.cluster is not None and not 2 <= self.cluster.value.data <= MAX_CLUSTER:
            fail(self, f"cluster={self.cluster.value.data} must be in [2, {MAX_CLUSTER}]")


@irdl_op_definition
class MbarrierExpectTxOp(_BarrierOp):
    """Arrive on barrier `stage` and expect `bytes` of TMA transactions before its phase completes."""

    name = "nv.mbarrier_expect_tx"
    stage = operand_def(IndexType)
    bytes = prop_def(IntegerAttr)
    assembly_format = "$stage attr-dict"

    def __init__(self, stage: SSAValue, base: int, nbytes: int):
        super().__init__(operands=[stage], properties={"base": int_attr(base), "bytes": int_attr(nbytes)})

    def verify_(self) -> None:
        super().verify_()
        if not 0 < self.bytes.value.data < 1 << 20:
            fail(self, f"bytes={self.bytes.value.data} must be in (0, 2**20)")


# --- TMA ------------------------------------------------------------------------------


@irdl_custom_directive
class TmaCoords(CustomDirective):
    """`[%outer..., %row, %col]`: the box's coordinates, one per memref dim, outermost first.

    A 2-D load prints `[%row, %col]` as it always has; the leading coordinates (`outer`) are what is left
    before the last two, so the split is fixed by the count alone.
    """

    outer: VariadicOperandVariable
    row: OperandVariable
    col: OperandVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        coords = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        if len(coords) < 2:
            parser.raise_error(f"nv.tma_load needs at least [row, col], got {len(coords)} coordinate(s)")
        self.outer.set(state, coords[:-2])
        self.row.set(state, coords[-2])
        self.col.set(state, coords[-1])

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_list([*self.outer.get(op), self.row.get(op), self.col.get(op)], printer.print_ssa_value)


@irdl_op_definition
class TmaLoadOp(NvOp):
    """One TMA box of a memref at [outer..., row, col] -> shared `dst + stage * stage_bytes`, completing on a barrier.

    `box` = [rows, cols] of the last two dims; a memref of rank 3 to 5 (attention's [B, H, S, D]) takes one
    leading coordinate per outer dim (`outer`, outermost first), read with a box extent of 1 there, so rows
    past the edge of its row dim read zero (never the next outer index's rows), as in 2-D.
    With a `swizzle` (bytes) of 32/64/128 the box's rows
    are cols * elem bytes <= swizzle wide and land swizzled (Swizzle<b,4,3>).
    Elements past the memref edge arrive as zero (the tile.load pad 0.0).
    Issued by one thread; the runtime passes the tensor map of the memref.
    With `evict_first` (an i1, decided at run time) the box is read with an L2 evict-first hint: for an
    operand that no other CTA will read again (B when there is one row of tiles), so it does not push
    the operand every CTA shares out of L2. A `multicast` box is 2-D only.
    """

    name = "nv.tma_load"
    MIN_ARCH: ClassVar[str] = "sm_90"
    SMEM: ClassVar[str] = "write"
    MAX_RANK: ClassVar[int] = 5  # cp.async.bulk.tensor copies boxes of tensors of at most 5 dims
    source = operand_def(MemRefType)
    outer = var_operand_def(IndexType)  # coordinates of the dims before the last two (rank 3..5), outermost first
    row = operand_def(IndexType)
    col = operand_def(IndexType)
    stage = operand_def(IndexType)
    dst = prop_def(IntegerAttr)
    stage_bytes = prop_def(IntegerAttr)
    bar = prop_def(IntegerAttr)
    box = prop_def(DenseArrayBase)
    swizzle = prop_def(IntegerAttr)
    multicast = opt_prop_def(IntegerAttr)  # a mask of cluster ranks: the box lands in each (same offsets)
    evict_first = opt_operand_def(i1)
    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    custom_directives = (TmaCoords,)
    assembly_format = ("$source `[` custom<TmaCoords>($outer, $row, $col) `]` `,` $stage "
                       "(`evict_first` $evict_first^)? attr-dict `:` type($source)")

    def __init__(self, source: SSAValue, row: SSAValue, col: SSAValue, stage: SSAValue, *, dst: int,
                 stage_bytes: int, bar: int, box: tuple[int, int], swizzle: int, multicast: int | None = None,
                 evict_first: SSAValue | None = None, outer: Sequence[SSAValue] = ()):
        props = {"dst": int_attr(dst), "stage_bytes": int_attr(stage_bytes), "bar": int_attr(bar), "box": i64s(box),
                 "swizzle": int_attr(swizzle)}
        if multicast is not None:
            props["multicast"] = int_attr(multicast)
        super().__init__(operands=[source, list(outer), row, col, stage,
                                   [evict_first] if evict_first is not None else []], properties=props)

    def elem_bytes(self) -> int:
        return 4 if type_name(self.source.type.element_type) == "f32" else 2

    def rank(self) -> int:
        """The source memref's rank: 2, or 3 to 5 with `outer` coordinates."""
        return len(self.source.type.get_shape())

    def map_box(self) -> tuple[int, ...]:
        """The tensor map's box, one extent per memref dim: (1, ..., 1, rows, cols)."""
        return (1,) * (self.rank() - 2) + tuple(ints(self.box))

    def verify_(self) -> None:
        mem, rank = self.source.type, self.rank()
        if not 2 <= rank <= self.MAX_RANK or type_name(mem.element_type) not in ("bf16", "f16", "f32"):
            fail(self, f"source {mem} must be a 2-D bf16, f16 or f32 memref, or one of rank 3 to {self.MAX_RANK} "
                       "read at [outer..., row, col]")
        if len(self.outer) != rank - 2:
            fail(self, f"source {mem} has rank {rank}: it is read at {rank} coordinates [outer..., row, col] "
                       f"({rank - 2} before row and col), got {len(self.outer) + 2}")
        box, sw = ints(self.box), self.swizzle.value.data
        if len(box) != 2 or not all(1 <= b <= 256 for b in box):
            fail(self, f"box {list(box)} must be two sizes in [1, 256]")
        if sw not in SWIZZLES:
            fail(self, f"swizzle={sw} is not one of {SWIZZLES}")
        if sw and box[1] * self.elem_bytes() > sw:
            fail(self, f"a {box[1]}-element box row is wider than the {sw}-byte swizzle")
        if (box[1] * self.elem_bytes()) % 16:
            fail(self, f"a box row of {box[1]} elements is not a multiple of 16 bytes")
        check_smem_offset(self, "dst", self.dst.value.data, 1024 if sw == 128 else 128)
        check_smem_offset(self, "stage_bytes", self.stage_bytes.value.data, 1024 if sw == 128 else 128)
        check_smem_offset(self, "bar", self.bar.value.data)
        if self.multicast is not None and not 1 <= self.multicast.value.data < 1 << MAX_CLUSTER:
            fail(self, f"multicast mask {self.multicast.value.data} names no rank, or a rank past a "
                       f"{MAX_CLUSTER}-CTA cluster")
        if self.multicast is not None and self.evict_first is not None:
            fail(self, "evict_first with a multicast box: the hint is for a box one CTA reads once")
        if self.multicast is not None and rank > 2:
            fail(self, f"a multicast box of the rank-{rank} source {mem}: multicast loads are 2-D only")


# --- wgmma ----------------------------------------------------------------------------


@irdl_op_definition
class WgmmaOp(NvOp):
    """acc += A @ B^T over k (a multiple of 16) on one warpgroup: k/16 `wgmma.mma_async` m64nNk16, committed.

    A (64 x k rows of this warpgroup, K-major) starts at `a` = [base, stage_bytes,
    rows, warpgroup_bytes]: byte `base + stage * stage_bytes + wg * warpgroup_bytes`
    of a `rows` x k tile; B (N x k) at `b` = [base, stage_bytes, rows]. Both use
    the canonical `swizzle` layout (tessera.layouts.smem_swizzle), whose
    descriptors the emitter builds: K-major unless `a_major` / `b_major` is
    "mn" (A stored k x M, B stored k x N, as TMA boxes of k rows; the
    instruction's imm-trans-a / imm-trans-b). The instructions are
    asynchronous: the result may be read only after `nv.wgmma_wait`.
    `a_slot`, when given, picks A's slot instead of `stage` (A and B in rings
    of their own: a once-per-tile operand double-buffered by tile parity
    beside a per-step ring); A's stage_bytes must then be non-zero.
    """

    name = "nv.wgmma"
    MIN_ARCH: ClassVar[str] = "sm_90a"
    SMEM: ClassVar[str] = "read"
    acc = operand_def(VectorType)
    stage = operand_def(IndexType)
    wg = operand_def(IndexType)
    a_slot = opt_operand_def(IndexType)
    n = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr)
    dtype = prop_def(Attribute)
    a = prop_def(DenseArrayBase)
    b = prop_def(DenseArrayBase)
    swizzle = prop_def(IntegerAttr)
    a_major = opt_prop_def(StringAttr)  # "mn": A is stored M-contiguous (imm-trans-a 1); absent: K-major
    b_major = opt_prop_def(StringAttr)  # "mn": B is stored N-contiguous (imm-trans-b 1); absent: K-major
    result = result_def(VectorType)
    assembly_format = "$acc `,` $stage `,` $wg (`a_slot` $a_slot^)? attr-dict `:` type($acc) `->` type($result)"
    MAJORS: ClassVar[tuple[str, ...]] = ("k", "mn")

    def __init__(self, acc: SSAValue, stage: SSAValue, wg: SSAValue, *, n: int, k: int, dtype: Attribute,
                 a: tuple[int, int, int, int], b: tuple[int, int, int], swizzle: int, a_major: str = "k",
                 b_major: str = "k", a_slot: SSAValue | None = None):
        props = {"n": int_attr(n), "k": int_attr(k), "dtype": dtype, "a": i64s(a), "b": i64s(b),
                 "swizzle": int_attr(swizzle)}
        props.update({name: StringAttr(v) for name, v in (("a_major", a_major), ("b_major", b_major)) if v != "k"})
        super().__init__(operands=[acc, stage, wg, [] if a_slot is None else [a_slot]], result_types=[acc.type],
                         properties=props)

    def major(self, role: str) -> str:
        """"k" or "mn": how operand `role` ("a" or "b") is stored."""
        attr = self.a_major if role == "a" else self.b_major
        return "k" if attr is None else attr.data

    def verify_(self) -> None:
        n, k = self.n.value.data, self.k.value.data
        if n % 8 or not 8 <= n <= 256:
            fail(self, f"n={n} must be a multiple of 8 in [8, 256]")
        if k % 16 or k <= 0:
            fail(self, f"k={k} must be a positive multiple of 16")
        if type_name(self.dtype) not in WGMMA_TYPES:
            fail(self, f"dtype {type_name(self.dtype)} is not one of {', '.join(WGMMA_TYPES)}")
        expect_vec(self, "acc", self.acc.type, n // 2, f32)
        if self.result.type != self.acc.type:
            fail(self, f"result {self.result.type} differs from acc {self.acc.type}")
        if len(ints(self.a)) != 4 or len(ints(self.b)) != 3:
            fail(self, "a must be [base, stage_bytes, rows, warpgroup_bytes] and b [base, stage_bytes, rows]")
        if self.a_slot is not None and ints(self.a)[1] <= 0:
            fail(self, "a_slot picks one of A's slots, but A's stage_bytes is 0 (one slot): give A's slot size")
        if self.swizzle.value.data not in SWIZZLES:
            fail(self, f"swizzle={self.swizzle.value.data} is not one of {SWIZZLES}")
        for role in ("a", "b"):
            if self.major(role) not in self.MAJORS:
                fail(self, f"{role}_major=\"{self.major(role)}\" is not one of \"k\", \"mn\"")
            if self.major(role) == "mn" and self.swizzle.value.data == 0:
                fail(self, f"{role}_major=\"mn\" needs a swizzled layout (swizzle 32, 64 or 128): the interleaved "
                           "MN-major layout is not lowered")


@irdl_op_definition
class WgmmaWaitOp(NvOp):
    """`wgmma.wait_group.sync.aligned pending`: all but the newest `pending` wgmma groups have finished.

    Takes and returns the accumulator so that no read of it moves above the wait. `hold`, for a group whose
    wgmma read A from registers (nv.wgmma_rs), names those registers too: the hardware reads them until the
    group is done, so no other value may take them before the wait (else ptxas serialises every wgmma).
    """

    name = "nv.wgmma_wait"
    MIN_ARCH: ClassVar[str] = "sm_90a"
    acc = operand_def(VectorType)
    hold = opt_operand_def(VectorType)
    pending = prop_def(IntegerAttr)
    result = result_def(VectorType)
    assembly_format = "$acc (`hold` $hold^ `:` type($hold))? attr-dict `:` type($acc) `->` type($result)"

    def __init__(self, acc: SSAValue, pending: int, hold: SSAValue | None = None):
        super().__init__(operands=[acc, [hold] if hold is not None else []], result_types=[acc.type],
                         properties={"pending": int_attr(pending)})

    def verify_(self) -> None:
        expect_vec(self, "acc", self.acc.type, None, f32)
        if self.result.type != self.acc.type:
            fail(self, f"result {self.result.type} differs from acc {self.acc.type}")
        if not 0 <= self.pending.value.data <= 7:
            fail(self, f"pending={self.pending.value.data} must be in [0, 7]")
        if self.hold is not None and type_name(self.hold.type.element_type) not in WGMMA_TYPES:
            fail(self, f"hold {self.hold.type} is not a register A operand (a vector of bf16 or f16)")


HOPPER_OPS = (ThreadIdOp, LogicalGridOp, ClusterRankOp, ClusterSyncOp, SetMaxNRegOp, NamedBarrierOp, MbarrierInitOp,
              MbarrierWaitOp, MbarrierArriveOp, MbarrierExpectTxOp, TmaLoadOp, WgmmaOp, WgmmaWaitOp, WgaccLoadOp,
              WgaccStoreOp, WgaccAtomicAddOp, WgaccStoreTmaOp, TmaStoreDrainOp, SplitkFixupOp, StreamkFixupOp,
              ClusterSplitkFixupOp)
