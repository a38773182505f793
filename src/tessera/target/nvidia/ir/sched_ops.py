"""nv ops that hand a persistent CTA its next tile at run time: a global tile counter and shared-memory words.

A persistent kernel's CTAs walk the logical tiles. Statically (CTA c takes c, c + P, ...) every CTA gets the
same number of tiles, which balances the load only when tiles cost the same; causal attention's tiles run
1 to S/BN key steps, and a static walk leaves some SMs with a quarter more work than others. With dynamic
tiles each CTA starts at its own block index and then takes the next tile from a counter in global memory
(`nv.tile_fetch`: an atomic add), so a CTA that finishes early takes more (FlashAttention-3's dynamic
persistent scheduler). The producer thread fetches and hands the tile number to the consumer warpgroups
through a small ring of shared-memory words (`nv.smem_put` / `nv.smem_get`) guarded by mbarriers.

The counter lives in the runtime's scratch buffer, COUNTER_BYTES before the `tsr_scratch` pointer (the split-K
and stream-K records start at the pointer). It starts at zero, and since every processed tile is followed by
exactly one fetch, a launch makes exactly as many fetches as it has tiles: the fetch that returns tiles - 1 is
the launch's last, and it resets the counter to zero for the next launch on that stream.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def

from tessera.target.nvidia.ir.types import NvOp, check_smem_offset, int_attr


@irdl_op_definition
class TileFetchOp(NvOp):
    """`%next = nv.tile_fetch %total, %ctas`: the next tile this CTA runs, `ctas` + a global counter's old value
    (its first tile is its block index, so the counter hands out tiles from `ctas` on); `next >= total`: none."""

    name = "nv.tile_fetch"
    MIN_ARCH: ClassVar[str] = "sm_80"
    COUNTER_BYTES: ClassVar[int] = 16  # scratch bytes before tsr_scratch: the counter (u32) and padding to 16 B
    total = operand_def(IndexType)
    ctas = operand_def(IndexType)
    result = result_def(IndexType)
    assembly_format = "$total `,` $ctas attr-dict `:` type($result)"

    def __init__(self, total: SSAValue, ctas: SSAValue):
        super().__init__(operands=[total, ctas], result_types=[IndexType()])


@irdl_op_definition
class SmemPutOp(NvOp):
    """`nv.smem_put %value, %slot {base}`: store an index into the 4-byte shared-memory word `base + 4 * slot`."""

    name = "nv.smem_put"
    MIN_ARCH: ClassVar[str] = "sm_80"
    SMEM: ClassVar[str] = "write"
    value = operand_def(IndexType)
    slot = operand_def(IndexType)
    base = prop_def(IntegerAttr)
    assembly_format = "$value `,` $slot attr-dict"

    def __init__(self, value: SSAValue, slot: SSAValue, base: int):
        super().__init__(operands=[value, slot], properties={"base": int_attr(base)})

    def verify_(self) -> None:
        check_smem_offset(self, "word base", self.base.value.data, align=4)


@irdl_op_definition
class SmemGetOp(NvOp):
    """`%v = nv.smem_get %slot {base}`: the index in the 4-byte shared-memory word `base + 4 * slot`."""

    name = "nv.smem_get"
    MIN_ARCH: ClassVar[str] = "sm_80"
    SMEM: ClassVar[str] = "read"
    slot = operand_def(IndexType)
    base = prop_def(IntegerAttr)
    result = result_def(IndexType)
    assembly_format = "$slot attr-dict `:` type($result)"

    def __init__(self, slot: SSAValue, base: int):
        super().__init__(operands=[slot], properties={"base": int_attr(base)}, result_types=[IndexType()])

    def verify_(self) -> None:
        check_smem_offset(self, "word base", self.base.value.data, align=4)


SCHED_OPS = (TileFetchOp, SmemPutOp, SmemGetOp)
