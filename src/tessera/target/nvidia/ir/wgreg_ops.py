"""nv ops on a consumer warpgroup's registers in wgmma's layouts: row reductions, row broadcasts, indices, RS wgmma.

A warpgroup holds a 64 x n tile in wgmma's D (accumulator) layout: thread t
(warp w = t / 32, lane l) has `vector<n/2 x T>` whose slot i is element
(16 w + l/4 + 8 ((i/2) % 2), 8 (i/4) + 2 (l % 4) + i % 2). A *row vector*
of the tile (a [64, 1] value: a row max, a row sum) is `vector<2 x T>` in the
matching rows layout: slot j is row 16 w + l/4 + 8 j, the two rows whose
elements the thread holds; the four lanes of a quad hold the same rows.

* `nv.wgacc_reduce_rows` folds a D-layout tile along its columns into a row vector: each thread folds its
  n/4 slots of each row, then the quad combines them with two xor shuffles (lane masks 1 and 2, the
  butterfly `tessera.layouts` derives from the D lane map).
* `nv.wgrows_broadcast` is a row vector spread over the columns of a D-layout tile (no data movement: slot i
  reads row slot (i/2) % 2).
* `nv.wgacc_index` gives each slot its row (axis 0, within the 64 rows) or column (axis 1) index;
  `nv.wgrows_index` each row slot its row.
* `nv.wgrows_store` writes a row vector as a run of a memref's last dim (a [64, 1] value stored transposed,
  e.g. the log-sum-exp row of attention): one lane of each quad stores its two rows.
* `nv.wgmma_rs` is wgmma with A from registers: the 64 x k A operand is a `vector<k/2 x bf16|f16>` in the D
  layout of a 64 x k tile, which is wgmma's register-A fragment slot for slot (the k16 step s reads slots
  8s .. 8s+7 as four 32-bit registers), so an accumulator converted to 16 bits feeds the next wgmma with no
  shuffle. B comes from shared memory, K-major or MN-major, as for `nv.wgmma`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IndexType, IntegerAttr, MemRefType, StringAttr, VectorType, f32, i32
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def, traits_def, var_operand_def
from xdsl.traits import Pure

from tessera.ir.types import is_float, type_name
from tessera.target.nvidia.ir.types import NvOp, expect_vec, fail, i64s, int_attr, ints, vec

ROW_SLOTS = 2  # rows of the 64-row D layout one thread holds: 16 w + l/4 and 8 below it
REDUCE_KINDS = ("max", "min", "sum")
WGMMA_TYPES = ("bf16", "f16")
SWIZZLES = (0, 32, 64, 128)


def _check_n(op, n: int) -> None:
    if n % 8 or not 8 <= n <= 256:
        fail(op, f"n={n} must be a multiple of 8 in [8, 256] (a wgmma D tile of 64 x n)")


@irdl_op_definition
class WgaccReduceRowsOp(NvOp):
    """`%m = nv.wgacc_reduce_rows "max" %s {n = 128}`: each row of a 64 x n D-layout tile folded to its row slot."""

    name = "nv.wgacc_reduce_rows"
    kind = prop_def(StringAttr)
    n = prop_def(IntegerAttr)
    source = operand_def(VectorType)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$kind $source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, kind: str, source: SSAValue, n: int):
        super().__init__(operands=[source], result_types=[vec(ROW_SLOTS, source.type.element_type)],
                         properties={"kind": StringAttr(kind), "n": int_attr(n)})

    def verify_(self) -> None:
        n = self.n.value.data
        _check_n(self, n)
        if self.kind.data not in REDUCE_KINDS:
            fail(self, f"kind \"{self.kind.data}\" is not one of {', '.join(REDUCE_KINDS)}")
        t = expect_vec(self, "source", self.source.type, n // 2)
        if not is_float(t.element_type):
            fail(self, f"source {t}: row reductions here fold float slots")
        expect_vec(self, "result", self.result.type, ROW_SLOTS, t.element_type)


@irdl_op_definition
class WgrowsBroadcastOp(NvOp):
    """`%t = nv.wgrows_broadcast %r {n = 128}`: a row vector as a 64 x n D-layout tile (every column)."""

    name = "nv.wgrows_broadcast"
    n = prop_def(IntegerAttr)
    source = operand_def(VectorType)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, n: int):
        super().__init__(operands=[source], result_types=[vec(n // 2, source.type.element_type)],
                         properties={"n": int_attr(n)})

    def verify_(self) -> None:
        n = self.n.value.data
        _check_n(self, n)
        t = expect_vec(self, "source", self.source.type, ROW_SLOTS)
        expect_vec(self, "result", self.result.type, n // 2, t.element_type)


@irdl_op_definition
class WgaccIndexOp(NvOp):
    """`%c = nv.wgacc_index {axis = 1, n = 128} : vector<64xi32>`: each slot's column (axis 1) or row (axis 0, 0..63)."""

    name = "nv.wgacc_index"
    axis = prop_def(IntegerAttr)
    n = prop_def(IntegerAttr)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, axis: int, n: int):
        super().__init__(result_types=[vec(n // 2, i32)], properties={"axis": int_attr(axis), "n": int_attr(n)})

    def verify_(self) -> None:
        n = self.n.value.data
        _check_n(self, n)
        if self.axis.value.data not in (0, 1):
            fail(self, f"axis {self.axis.value.data} must be 0 (row) or 1 (column)")
        expect_vec(self, "result", self.result.type, n // 2, i32)


@irdl_op_definition
class WgrowsIndexOp(NvOp):
    """`%r = nv.wgrows_index : vector<2xi32>`: the rows (0..63) of the thread's two row slots."""

    name = "nv.wgrows_index"
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[vec(ROW_SLOTS, i32)])

    def verify_(self) -> None:
        expect_vec(self, "result", self.result.type, ROW_SLOTS, i32)


@irdl_op_definition
class WgrowsStoreOp(NvOp):
    """`nv.wgrows_store %r, %LSE[%b, %h, %row]`: the 64 rows' values at [..., row + r] of the last dim.

    One lane per quad writes (the quad's lanes hold the same rows); entries past the last dim's size are dropped.
    """

    name = "nv.wgrows_store"
    value = operand_def(VectorType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    assembly_format = "$value `,` $dest `[` $offsets `]` attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue, offsets: Sequence[SSAValue]):
        super().__init__(operands=[value, dest, list(offsets)])

    def verify_(self) -> None:
        t = expect_vec(self, "value", self.value.type, ROW_SLOTS)
        mem = self.dest.type
        if len(self.offsets) != len(mem.get_shape()) or not self.offsets:
            fail(self, f"memref {mem} takes {len(mem.get_shape())} offsets, got {len(self.offsets)}")
        if t.element_type != mem.element_type:
            fail(self, f"value {t} and memref {mem} differ in element type")


@irdl_op_definition
class WgmmaRsOp(NvOp):
    """acc += A @ B^T over k with A in registers: k/16 `wgmma.mma_async` m64nNk16 (RS form), committed.

    `a` is `vector<k/2 x dtype>` in the D layout of this warpgroup's 64 x k A tile (see the module docstring);
    B (N x k) is read from shared memory at `b` = [base, stage_bytes, rows] + stage * stage_bytes in the
    canonical `swizzle` layout, K-major unless `b_major` is "mn" (stored k x N; imm-trans-b). Asynchronous:
    the result, and `a`'s registers, may be touched only after `nv.wgmma_wait`.
    """

    name = "nv.wgmma_rs"
    MIN_ARCH: ClassVar[str] = "sm_90a"
    SMEM: ClassVar[str] = "read"
    acc = operand_def(VectorType)
    a = operand_def(VectorType)
    stage = operand_def(IndexType)
    n = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr)
    dtype = prop_def(Attribute)
    b = prop_def(DenseArrayBase)
    swizzle = prop_def(IntegerAttr)
    b_major = opt_prop_def(StringAttr)
    result = result_def(VectorType)
    assembly_format = "$acc `,` $a `,` $stage attr-dict `:` type($acc) `,` type($a) `->` type($result)"

    def __init__(self, acc: SSAValue, a: SSAValue, stage: SSAValue, *, n: int, k: int, dtype: Attribute,
                 b: tuple[int, int, int], swizzle: int, b_major: str = "k"):
        props = {"n": int_attr(n), "k": int_attr(k), "dtype": dtype, "b": i64s(b), "swizzle": int_attr(swizzle)}
        if b_major != "k":
            props["b_major"] = StringAttr(b_major)
        super().__init__(operands=[acc, a, stage], result_types=[acc.type], properties=props)

    def major(self, role: str) -> str:
        if role == "a":
            return "k"
        return "k" if self.b_major is None else self.b_major.data

    def verify_(self) -> None:
        n, k = self.n.value.data, self.k.value.data
        _check_n(self, n)
        if k % 16 or k <= 0:
            fail(self, f"k={k} must be a positive multiple of 16")
        if type_name(self.dtype) not in WGMMA_TYPES:
            fail(self, f"dtype {type_name(self.dtype)} is not one of {', '.join(WGMMA_TYPES)}")
        expect_vec(self, "acc", self.acc.type, n // 2, f32)
        expect_vec(self, "a", self.a.type, k // 2, self.dtype)
        if self.result.type != self.acc.type:
            fail(self, f"result {self.result.type} differs from acc {self.acc.type}")
        if len(ints(self.b)) != 3:
            fail(self, "b must be [base, stage_bytes, rows]")
        if self.swizzle.value.data not in SWIZZLES:
            fail(self, f"swizzle={self.swizzle.value.data} is not one of {SWIZZLES}")
        if self.major("b") not in ("k", "mn"):
            fail(self, f"b_major=\"{self.major('b')}\" is not one of \"k\", \"mn\"")
        if self.major("b") == "mn" and self.swizzle.value.data == 0:
            fail(self, "b_major=\"mn\" needs a swizzled layout (swizzle 32, 64 or 128)")


WGREG_OPS = [WgaccReduceRowsOp, WgrowsBroadcastOp, WgaccIndexOp, WgrowsIndexOp, WgrowsStoreOp, WgmmaRsOp]
