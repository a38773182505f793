"""lower-tile-to-nv{arch=...}: Fragment IR -> nv target ops, one thread's view of the kernel.

The lowering is a dialect conversion (DESIGN sections 2 and 8), in order:

1. `plan`: per kernel, the thread count (func attribute `nv.num_threads`,
   else 32 * wm * wn of the fragment ops' warp grids, which must agree, else
   128) and the shared-memory map (each `tile.alloc` its own 128-byte
   aligned region, then one scratch region reused by every layout change).
   Fragment families are checked against the arch here, before anything
   changes: a wgmma fragment on sm_80 is NV_ARCH_UNSUPPORTED.
2. `lower ops`: each op is rewritten on its own by `nv_lowerings.LOWERINGS`,
   consumers before producers, so every rewrite still sees the original
   fragment and tile types of its operands and results.
3. `convert types`: one isinstance-based sweep retypes what remains (scf.for
   iter_args, block arguments, results): fragment -> its lane-map register
   vector, register tile -> blocked vector, smem tile -> !nv.smem,
   token -> !nv.async_group. The accumulator thus stays one loop-carried value.
4. `drop redundant barriers`, record `nv.num_threads`, `nv.smem_bytes` and
   `nv.arch` on the func, verify, and check every op's MIN_ARCH.

What is supported and what is refused is listed in `nv_lowerings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import AllocOp, FragmentPackOp, FragmentStoreOp, FragmentUnpackOp
from tessera.target.nvidia.ir.ops import (SmemType, arch_satisfies, async_group, blocked_len, check_target_arch, fragment_elem,
                               need_arch, smem_type, vec)
from tessera.ir.types import AsyncTokenType, FragmentType, TileType, type_name
from tessera.ir.verify import verify_module, wrap_unexpected
from tessera.layouts import warp_tile_map
from tessera.target.arch import Arch, parse_arch
from tessera.target.nvidia.passes.barriers import drop_redundant_barriers
from tessera.target.nvidia.passes.lane_index import smem_pitch
from tessera.target.nvidia.ir.types import SMEM_ALIGN, SMEM_LIMIT, elem_bytes
from tessera.passes.pipeline import register_pass, register_pipeline

DEFAULT_THREADS = 128
def _align(n: int) -> int:
    return -(-n // SMEM_ALIGN) * SMEM_ALIGN


@dataclass
class KernelLowering:
    """What the op lowerings of one kernel share: arch, threads, the shared-memory map, the type converter."""

    arch: Arch
    threads: int
    offsets: dict[Operation, int] = field(default_factory=dict)  # tile.alloc -> byte offset
    scratch_base: int = 0
    scratch_bytes: int = 0

    def convert(self, t: Attribute) -> Attribute:
        if isinstance(t, FragmentType):
            lm = warp_tile_map(t.family.data, t.role.data, t.m.data, t.n.data, t.k.data, type_name(t.elem))
            return vec(lm.regs, fragment_elem(t.role.data, t.elem))
        if isinstance(t, TileType):
            if t.space_name == "reg":
                return vec(blocked_len(t.get_shape(), self.threads), t.element_type)
            if t.space_name == "smem":
                return self.smem(t.get_shape(), t.element_type)
        if isinstance(t, AsyncTokenType):
            return async_group
        return t

    def smem(self, shape, elem: Attribute) -> SmemType:
        return smem_type(tuple(shape), elem, smem_pitch(shape[-1], elem_bytes(elem)))

    def scratch(self, shape, elem: Attribute) -> tuple[SmemType, int]:
        """A shared tile in the scratch region (every layout change reuses it, fenced by barriers)."""
        t = self.smem(shape, elem)
        self.scratch_bytes = max(self.scratch_bytes, t.extent() * elem_bytes(elem))
        return t, self.scratch_base

    @property
    def smem_bytes(self) -> int:
        return self.scratch_base + _align(self.scratch_bytes)


def _warp_threads(kernel: func.FuncOp) -> int | None:
    """32 * wm * wn of the fragment ops, or None when there are none; NV_THREADS_MISMATCH if they differ."""
    first: tuple[int, Operation] | None = None
    for op in kernel.walk():
        if isinstance(op, (FragmentPackOp, FragmentStoreOp, FragmentUnpackOp)):
            wm, wn = (v.data for v in op.warps.data)
            if first is None:
                first = (32 * wm * wn, op)
            elif 32 * wm * wn != first[0]:
                raise D.TesseraError(D.NV_THREADS_MISMATCH, f"{op.name} runs on {wm * wn} warps but {first[1].name} "
                                                            f"at {D.op_location(first[1])} on {first[0] // 32} warps; "
                                                            "a kernel has one thread count", op=op)
    return first[0] if first else None


def _check_families(kernel: func.FuncOp, arch: Arch) -> None:
    for op in kernel.walk():
        values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]
        for v in values:
            t = v.type
            if not isinstance(t, FragmentType) or t.family.data == "mma_sync":
                continue
            family = t.family.data
            if family == "wgmma" and not arch_satisfies(arch, need_arch("sm_90a")):
                raise D.TesseraError(D.NV_ARCH_UNSUPPORTED, f"{op.name} makes a wgmma fragment ({t}), but wgmma "
                                                            f"needs sm_90a exactly and the target is {arch}", op=op)
            raise D.TesseraError(D.NV_LOWER_UNSUPPORTED, f"{op.name} makes a {family} fragment ({t}); only "
                                                         "family mma_sync lowers to nv ops today", op=op)


def plan(kernel: func.FuncOp, arch: Arch) -> KernelLowering:
    _check_families(kernel, arch)
    attr = kernel.attributes.get("nv.num_threads")
    threads = attr.value.data if isinstance(attr, IntegerAttr) else _warp_threads(kernel) or DEFAULT_THREADS
    if threads <= 0 or threads % 32 or threads > 1024:
        raise D.TesseraError(D.NV_LOWER_UNSUPPORTED, f"{threads} threads per CTA: need a multiple of 32 up to 1024",
                             op=kernel)
    warp_threads = _warp_threads(kernel)
    if warp_threads is not None and warp_threads != threads:
        raise D.TesseraError(D.NV_THREADS_MISMATCH, f"nv.num_threads = {threads}, but the fragment ops use "
                                                    f"{warp_threads // 32} warps", op=kernel)
    k = KernelLowering(arch, threads)
    top = 0
    for op in kernel.walk():
        if isinstance(op, AllocOp):
            t = k.convert(op.result.type)
            k.offsets[op] = top
            top += _align(t.extent() * elem_bytes(t.element_type))
    k.scratch_base = top
    return k


def lower_ops(kernel: func.FuncOp, k: KernelLowering) -> None:
    from tessera.target.nvidia.passes.lowerings import LOWERINGS, refuse

    ops = list(kernel.walk())
    for op in reversed(ops):  # consumers first: every op still sees its original operand types
        lowering = LOWERINGS.get(type(op))
        if lowering is not None:
            try:
                lowering(op, k)
            except D.TesseraError as err:
                if err.op is None:
                    err.op = op
                raise
        elif op.name.startswith("tile."):
            refuse(op, "it has no nv lowering")


def convert_types(kernel: func.FuncOp, k: KernelLowering) -> None:
    """Retype every remaining result and block argument in one sweep (the 1:1 type conversion)."""
    for op in kernel.walk():
        for res in list(op.results):
            new = k.convert(res.type)
            if new != res.type:
                Rewriter.replace_value_with_new_type(res, new)
        for region in op.regions:
            for block in region.blocks:
                for arg in list(block.args):
                    new = k.convert(arg.type)
                    if new != arg.type:
                        if op is kernel:
                            raise D.TesseraError(D.NV_LOWER_UNSUPPORTED, f"kernel argument #{arg.index} has type "
                                                                         f"{arg.type}; kernels take memrefs and scalars",
                                                 op=kernel)
                        Rewriter.replace_value_with_new_type(arg, new)


def lower_kernel(kernel: func.FuncOp, arch: Arch) -> None:
    k = plan(kernel, arch)
    lower_ops(kernel, k)
    convert_types(kernel, k)
    for block in kernel.body.blocks:
        drop_redundant_barriers(block, entry=True)
    limit = SMEM_LIMIT[(arch.major, arch.minor)]
    if k.smem_bytes > limit:
        raise D.TesseraError(D.NV_SMEM_OVERFLOW, f"the kernel needs {k.smem_bytes} bytes of shared memory "
                                                 f"({k.scratch_base} for tiles, {k.scratch_bytes} scratch); {arch} "
                                                 f"has {limit}", op=kernel)
    kernel.attributes["nv.num_threads"] = IntegerAttr(k.threads, i64)
    kernel.attributes["nv.smem_bytes"] = IntegerAttr(k.smem_bytes, i64)
    kernel.attributes["nv.arch"] = StringAttr(arch.name)


@register_pass
@dataclass(frozen=True)
class LowerTileToNv(ModulePass):
    """Lower Fragment IR to nv target ops (per-thread registers, cp.async, mma.sync, barriers) for `arch`."""

    name = "lower-tile-to-nv"

    arch: str

    def __post_init__(self) -> None:
        parse_arch(self.arch)  # ValueError naming the accepted arches -> OPT_OPTION_INVALID

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = parse_arch(self.arch)
        kernels = [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]
        for kernel in kernels:
            done = kernel.attributes.get("nv.arch")
            if isinstance(done, StringAttr):  # lowered already: nothing to do, the IR stays byte-identical
                if done.data != arch.name:
                    raise D.TesseraError(D.NV_ARCH_UNSUPPORTED, f"kernel @{kernel.sym_name.data} was lowered for "
                                                                f"{done.data}, not {arch}", op=kernel)
                continue
            try:
                lower_kernel(kernel, arch)
            except D.TesseraError:
                raise
            except Exception as err:  # noqa: BLE001 - an internal error still gets a code and a location
                raise wrap_unexpected(err, D.NV_LOWER_UNSUPPORTED, op=kernel) from err
        verify_module(op)
        check_target_arch(op, arch)


register_pipeline("tessera-lower-to-nv",
                  "tile-to-fragments,pipeline-smem{stages=1},warp-specialize{stages=1},lower-tile-to-nv",
                  "Tile IR -> nv target ops: fragments, staged shared memory (sm_90a: TMA + mbarrier ring, "
                  "warp-specialised and persistent), thread-level lowering (give arch=...; stages=N pipelines "
                  "the copies)")
