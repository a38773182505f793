"""nv target IR -> one readable CUDA C++ kernel (`extern "C" __global__`), table-driven.

Each op kind has an entry in a table (`tessera.target.nvidia.emit.nv.NV_EMITTERS`
for nv ops, `emit_scalar.SCALAR_EMITTERS` for arith/math/scf/func) that
appends statements, one per line, under a comment naming the op and its
source location. Runs of slot-wise ops on blocked register tiles are fused
into one unrolled loop (see `emit_nv`). Any other op, notably a leftover
`tile.*` op, is refused with EMIT_UNKNOWN_OP (DESIGN lesson 2). Emitting
twice gives identical text. `tessera.runtime.host_emulator` runs the same text
on the CPU for tests.

Kernel ABI (what the runtime passes, in this order), for each func.func
argument in order:

* `memref<d0 x ... x T>` -> `T* NAME` (a `const ... __restrict__` pointer if
  the kernel never writes it), then `long long NAME_size0 .. NAME_size{r-1}`,
  then `long long NAME_stride0 .. NAME_stride{r-1}` (in elements). Sizes and
  strides are passed for static dims too; a static size is not read. T is
  `tsr_u16` (raw bits) for bf16/f16, `float` for f32, `int` for i32, ...
  Pointers must be 16-byte aligned for the vector copy path; an unaligned
  pointer, stride or offset takes the element-wise path (slower, correct).
  Arrays the kernel writes must not overlap arrays it reads.
* `index` and `i64` -> `long long`; `i32` -> `int`; `f32` -> `float`; `f64` -> `double`.
  (Inside the kernel index values are 32-bit: every dim must be below 2**31.)

Launch: grid = whatever the caller chose (`tile.program_id` axis a is
blockIdx a), block = (`num_threads`, 1, 1), dynamic shared memory =
`smem_bytes` (above 48 KiB the runtime must raise
cudaFuncAttributeMaxDynamicSharedMemorySize first). `EmittedKernel` carries
these numbers and the parameter list.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import SSAValue

from tessera.target.nvidia.emit import c_types as C
from tessera.ir import diagnostics as D
from tessera.target.nvidia.emit.emitter import EmittedKernel, Emitter, KernelParam, Memref, OpTable
from tessera.target.nvidia.emit.nv import NV_EMITTERS, SLOTWISE, emit_run, slots_of
from tessera.target.nvidia.emit.scalar import SCALAR_EMITTERS

TABLE = OpTable({**SCALAR_EMITTERS, **NV_EMITTERS}, frozenset(SLOTWISE), emit_run, slots_of)


def _kernel(module: ModuleOp, name: str | None) -> func.FuncOp:
    every = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    kernels = [k for k in every if name is None or k.sym_name.data == name]
    if len(kernels) != 1:
        names = ", ".join(k.sym_name.data for k in every) or "none"
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"expected one kernel{f' named {name}' if name else ''} in the "
                                                 f"module; it has: {names}")
    return kernels[0]


def _written_memrefs(kernel: func.FuncOp) -> set[SSAValue]:
    from tessera.target.nvidia.ir.hopper_ops import WgaccAtomicAddOp, WgaccStoreOp, WgaccStoreTmaOp
    from tessera.target.nvidia.ir.ops import AtomicAddGlobalOp, StFragGlobalOp, StoreGlobalOp
    from tessera.target.nvidia.ir.wgreg_ops import WgrowsStoreOp

    return {op.dest for op in kernel.walk()
            if isinstance(op, (StoreGlobalOp, AtomicAddGlobalOp, StFragGlobalOp, WgaccStoreOp, WgaccAtomicAddOp,
                               WgaccStoreTmaOp, WgrowsStoreOp))}


def _tma_boxes(kernel: func.FuncOp) -> dict[SSAValue, tuple[tuple[int, ...], int]]:
    """memref argument -> (box, swizzle) of the TMA ops on it (nv.tma_load, nv.wgacc_store_tma); one tensor map
    each, so they must agree."""
    from tessera.target.nvidia.ir.hopper_ops import TmaLoadOp, WgaccStoreTmaOp

    boxes: dict[SSAValue, tuple[tuple[int, ...], int]] = {}
    for op in kernel.walk():
        if isinstance(op, TmaLoadOp):
            mem, geo = op.source, (tuple(op.box.get_values()), op.swizzle.value.data)
        elif isinstance(op, WgaccStoreTmaOp):
            mem, geo = op.dest, (op.box(), op.swizzle())
        else:
            continue
        if boxes.setdefault(mem, geo) != geo:
            raise D.TesseraError(D.EMIT_UNSUPPORTED, f"{op.name} uses a memref with box {geo} that another TMA op "
                                                     f"uses with {boxes[mem]}: a memref has one tensor map", op=op)
    return boxes


def _grid_axes(kernel: func.FuncOp) -> list[int]:
    from tessera.target.nvidia.ir.hopper_ops import LogicalGridOp

    return sorted({op.axis.value.data for op in kernel.walk() if isinstance(op, LogicalGridOp)})


def _signature(e: Emitter, kernel: func.FuncOp) -> list[KernelParam]:
    params: list[KernelParam] = []
    written = _written_memrefs(kernel)
    boxes = _tma_boxes(kernel)
    for i, arg in enumerate(kernel.body.block.args):
        name = e.define(arg)
        t = arg.type
        if isinstance(t, MemRefType):
            elem = C.mem_type(t.element_type)
            rank = len(t.get_shape())
            ptr = f"{elem}* __restrict__" if arg in written else f"const {elem}* __restrict__"
            params.append(KernelParam(name, ptr, i, "ptr"))
            sizes = [e.fresh(f"{name}_size{d}") for d in range(rank)]
            strides = [e.fresh(f"{name}_stride{d}") for d in range(rank)]
            params += [KernelParam(s, "long long", i, "size", d) for d, s in enumerate(sizes)]
            params += [KernelParam(s, "long long", i, "stride", d) for d, s in enumerate(strides)]
            shown = tuple(str(d) if d >= 0 else f"(int){s}" for d, s in zip(t.get_shape(), sizes))
            e.memrefs[arg] = Memref(name, shown, tuple(strides), t.element_type)
            if arg in boxes:
                box, swizzle = boxes[arg]
                e.tmaps[arg] = e.fresh(f"{name}_tmap")
                params.append(KernelParam(e.tmaps[arg], "const __grid_constant__ tsr_tensormap", i, "tmap",
                                          box=box, swizzle=swizzle))
        else:
            try:
                ctype = "long long" if C.name_of(t) == "index" else C.compute_type(t)  # the ABI's index is 64-bit
            except D.TesseraError:
                raise D.TesseraError(D.EMIT_UNSUPPORTED, f"kernel argument #{i} has type {t}; kernel arguments are "
                                                         "memrefs and index/integer/float scalars", op=kernel) from None
            params.append(KernelParam(name, ctype, i, "value"))
    for axis in _grid_axes(kernel):
        e.taken.add(f"tsr_grid{axis}")
        params.append(KernelParam(f"tsr_grid{axis}", "int", -1, "grid", axis))
    record = _scratch_record(kernel)
    if record:
        e.taken.add("tsr_scratch")
        params.append(KernelParam("tsr_scratch", "unsigned char*", -1, "scratch", record[0], per_cta=record[1],
                                  head=record[2]))
    return params


def _scratch_record(kernel: func.FuncOp) -> tuple[int, int, int] | None:
    """(bytes per logical tile, bytes per launched CTA, bytes before the pointer) of scratch that the kernel's
    nv.splitk_fixup or nv.streamk_fixup ops and its nv.tile_fetch address (None: none); a kernel has one layout."""
    from tessera.target.nvidia.ir.hopper_ops import SplitkFixupOp, StreamkFixupOp
    from tessera.target.nvidia.ir.sched_ops import TileFetchOp

    sizes = {}
    head = 0
    for op in kernel.walk():
        if isinstance(op, SplitkFixupOp):
            sizes[(op.record_bytes(op.n.value.data, op.splits.value.data, op.blocks.value.data), 0)] = op
        elif isinstance(op, StreamkFixupOp):
            sizes[(op.COUNTER_BYTES, 2 * op.slot_bytes(op.n.value.data, op.blocks.value.data))] = op
        elif isinstance(op, TileFetchOp):
            head = op.COUNTER_BYTES
    if len(sizes) > 1:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"the fixup ops of @{kernel.sym_name.data} disagree on the scratch "
                                                 f"layout ({sorted(sizes)} bytes per tile and per CTA): a kernel has "
                                                 "one", op=list(sizes.values())[1])
    if not sizes and not head:
        return None
    return (*next(iter(sizes), (0, 0)), head)


def emit_cuda(module: ModuleOp, name: str | None = None) -> EmittedKernel:
    """CUDA C++ for the one kernel (or the kernel `name`) of a module lowered by lower-tile-to-nv.

    Raises EMIT_UNKNOWN_OP for an op without a CUDA form (a `tile.*` op means
    lower-tile-to-nv did not run) and EMIT_UNSUPPORTED for values the ABI cannot carry.
    """
    kernel = _kernel(module, name)
    attrs = kernel.attributes
    if not isinstance(attrs.get("nv.num_threads"), IntegerAttr) or not isinstance(attrs.get("nv.arch"), StringAttr):
        bad = next((op for op in kernel.walk() if op.name.startswith("tile.")), kernel)
        raise D.TesseraError(D.EMIT_UNKNOWN_OP if bad is not kernel else D.EMIT_UNSUPPORTED,
                             f"kernel @{kernel.sym_name.data} was not lowered by lower-tile-to-nv (no nv.num_threads"
                             f"/nv.arch attributes){f'; it still has {bad.name}' if bad is not kernel else ''}",
                             op=bad)
    threads = attrs["nv.num_threads"].value.data
    smem = attrs["nv.smem_bytes"].value.data if isinstance(attrs.get("nv.smem_bytes"), IntegerAttr) else 0
    arch = attrs["nv.arch"].data
    e = Emitter(threads, TABLE)
    params = _signature(e, kernel)
    body_start = len(e.lines)
    e.emit_ops(kernel.body.block.ops)
    body = e.lines[body_start:]
    kname = kernel.sym_name.data
    head = [f"// Generated by tessera.target.nvidia.emit.cuda from @{kname} (nv IR for {arch}). Do not edit.",
            f"// Launch: block = ({threads}, 1, 1), dynamic shared memory = {smem} bytes.", ""]
    sig = ",\n".join(f"    {p.ctype} {p.name}" for p in params)
    prelude = [C.PRELUDE[s] + "\n" for s in C.used_snippets(sig + "\n" + "\n".join(body))]
    cluster = _int_attr(attrs, "nv.cluster", 1)
    dims = f"__cluster_dims__({cluster}, 1, 1) " if cluster > 1 else ""
    text = head + prelude + [f'extern "C" __global__ void {dims}__launch_bounds__({threads}, 1) {kname}(\n{sig}) {{']
    hopper = any(p.role == "tmap" for p in params) or "tsr_sbase" in "\n".join(body)
    if smem:  # 1024-byte alignment: the 128-byte swizzle pattern repeats every 1024 bytes (TMA, wgmma)
        text.append(f"  extern __shared__ __align__({1024 if hopper else 128}) unsigned char tsr_smem[];")
    text += ["  const int tid = threadIdx.x;", "  const int lane = tid & 31;", "  const int warp = tid >> 5;"]
    if hopper:
        text.append("  const unsigned tsr_sbase = (unsigned)__cvta_generic_to_shared(tsr_smem);")
    if e.uses_groups:
        text.append("  int tsr_groups = 0;  // cp.async groups this thread has committed")
    source = "\n".join(text + body + ["}", ""])
    return EmittedKernel(kname, source, arch, threads, smem, tuple(params),
                         persistent=any(p.role == "grid" for p in params), cluster=cluster,
                         splitk=_int_attr(attrs, "nv.splitk", 1), cluster_axis=_int_attr(attrs, "nv.cluster_axis", 0),
                         streamk=bool(_int_attr(attrs, "nv.streamk", 0)),
                         coresident=bool(_int_attr(attrs, "nv.coresident", 0)))


def _int_attr(attrs, name: str, default: int) -> int:
    return attrs[name].value.data if isinstance(attrs.get(name), IntegerAttr) else default
