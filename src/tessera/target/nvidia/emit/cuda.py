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

import re
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, IntegerAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

from tessera.target.nvidia.emit import c_types as C
from tessera.ir import diagnostics as D

_RESERVED = {"tid", "lane", "warp", "tsr_smem", "tsr_groups", "tsr_sbase", "int", "float", "double", "char", "bool", "long",
             "short", "unsigned", "signed", "void", "const", "auto", "if", "else", "for", "while", "do", "return",
             "break", "continue", "switch", "case", "default", "struct", "class", "union", "enum", "static",
             "extern", "inline", "volatile", "register", "goto", "sizeof", "typedef", "template", "new", "delete",
             "this", "true", "false", "asm", "min", "max", "abs", "exp", "log", "sqrt"}


@dataclass(frozen=True)
class KernelParam:
    """One C parameter: `name` of `ctype`, standing for `role` of func argument `arg`.

    Roles: ptr, size, stride, value (see the module docstring); on sm_90a also
    `tmap` (a TMA tensor map of 2-D memref argument `arg`, read in boxes of
    `box` = (rows, cols) with a `swizzle`-byte swizzle, zero fill out of bounds)
    and `grid` (logical grid size along axis `dim` of a persistent kernel; `arg` is -1), and `scratch`
    (a runtime-owned buffer of `dim` bytes per logical tile and `per_cta` bytes per launched CTA, for split-K's
    and stream-K's partials and counters; `arg` is -1).
    """

    name: str
    ctype: str
    arg: int
    role: str
    dim: int | None = None
    box: tuple[int, ...] = ()
    swizzle: int = 0
    per_cta: int = 0


@dataclass(frozen=True)
class EmittedKernel:
    name: str
    source: str
    arch: str
    num_threads: int
    smem_bytes: int
    params: tuple[KernelParam, ...]
    persistent: bool = False  # launch min(logical CTAs, SMs) CTAs; the logical grid goes in `grid` params
    cluster: int = 1  # CTAs per thread-block cluster (`__cluster_dims__`): the launch grid is a multiple of it
    splitk: int = 1  # units of work per logical CTA of a persistent split-K kernel (more CTAs fill the device)
    streamk: bool = False  # a stream-K kernel: launch a CTA per SM whatever the grid (they share the K steps)
    cluster_axis: int = 0  # the logical-grid axis along which a cluster takes neighbouring tiles


@dataclass(frozen=True)
class Memref:
    """How the body reaches a memref argument: pointer, per-dim size and stride expressions."""

    ptr: str
    sizes: tuple[str, ...]
    strides: tuple[str, ...]
    elem: object


def location(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return D.op_location(op)


class Emitter:
    """The text being built: lines, indentation, C names of SSA values."""

    def __init__(self, threads: int):
        self.threads = threads
        self.lines: list[str] = []
        self.depth = 1
        self.names: dict[SSAValue, str] = {}
        self.taken: set[str] = set(_RESERVED)
        self.memrefs: dict[SSAValue, Memref] = {}
        self.tmaps: dict[SSAValue, str] = {}  # memref argument -> name of its TMA tensor-map parameter
        self.uses_groups = False
        self.fast_windows: dict = {}  # window op -> (base pointer, row-step) names on an interior path
        self.staging: dict = {}  # nv.wgacc_store_tma -> names of its buffers, barrier and thread position

    # -- text ------------------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def comment(self, op: Operation, what: str = "") -> None:
        self.line(f"// {op.name} @ {location(op)}" + (f": {what}" if what else ""))

    @contextmanager
    def block(self, head: str = "", note: str = ""):
        self.line(head + "{" + (f"  // {note}" if note else ""))
        self.depth += 1
        yield
        self.depth -= 1
        self.line("}")

    @contextmanager
    def unrolled(self, var: str, n: int, note: str = ""):
        """A fully unrolled loop: register arrays indexed by `var` see only constants."""
        self.line("#pragma unroll")
        with self.block(f"for (int {var} = 0; {var} < {n}; ++{var}) ", note):
            yield

    # -- names -----------------------------------------------------------------
    def fresh(self, hint: str | None) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint or "v").strip("_") or "v"
        if base[0].isdigit():
            base = "v" + base
        if base.startswith("tsr_"):
            base = "u" + base
        name, n = base, 1
        while name in self.taken:
            name = f"{base}_{n}"
            n += 1
        self.taken.add(name)
        return name

    def define(self, value: SSAValue, name: str | None = None) -> str:
        name = name or self.fresh(value.name_hint)
        self.names[value] = name
        return name

    def __getitem__(self, value: SSAValue) -> str:
        if value not in self.names:
            raise D.TesseraError(D.EMIT_UNSUPPORTED, f"value {value.name_hint or ''} of type {value.type} is used "
                                                     "but was never defined by an emitted op", op=value.owner
                                 if isinstance(value.owner, Operation) else None)
        return self.names[value]

    def memref(self, value: SSAValue, op: Operation) -> Memref:
        if value not in self.memrefs:
            raise D.TesseraError(D.EMIT_UNSUPPORTED, f"{op.name} reads a memref that is not a kernel argument",
                                 op=op)
        return self.memrefs[value]

    # -- ops ---------------------------------------------------------------------
    def emit_ops(self, ops) -> None:
        """Emit ops in order; runs of slot-wise ops become one loop (see emit_nv.emit_run)."""
        from tessera.target.nvidia.emit.nv import NV_EMITTERS, SLOTWISE, emit_run, slots_of
        from tessera.target.nvidia.emit.scalar import SCALAR_EMITTERS

        ops = list(ops)
        i = 0
        while i < len(ops):
            op = ops[i]
            if op.name in SLOTWISE:
                run, hoisted, j = _collect_run(ops, i, SLOTWISE, slots_of)
                self.emit_ops(hoisted)
                emit_run(self, run)
                i = j
                continue
            emit = NV_EMITTERS.get(op.name) or SCALAR_EMITTERS.get(op.name)
            if emit is None:
                raise D.TesseraError(D.EMIT_UNKNOWN_OP, f"no CUDA C++ for {op.name}; emission takes nv, arith, "
                                                        "math, scf.for and func ops", op=op)
            emit(self, op)
            i += 1


_HOISTABLE = ("arith.", "math.", "nv.alloc_shared", "nv.block_id", "nv.grid_dim")
# Slot-wise ops of another slot count that may move before a run they do not depend on (no memory writes).
_LOADS, _STORES = ("nv.load_global", "nv.wgacc_load"), ("nv.store_global", "nv.wgacc_store", "nv.wgacc_store_tma")
_HOIST_SLOTWISE = ("nv.load_global", "nv.map", "nv.cmp", "nv.select", "nv.convert", "nv.splat", "nv.fill",
                   "nv.iota", "nv.slots")


def _collect_run(ops, i, slotwise, slots_of):
    """Slot-wise ops from ops[i] with one slot count; pure scalar ops met on the way are hoisted before the run.

    A run stops at anything else (a barrier, a fragment op, a loop), before a
    global load from a memref that the run already stores to (fusing would let
    an earlier slot read before a later slot's store) and before a second
    staged TMA store.
    """
    run, hoisted, stored = [ops[i]], [], set()
    n = slots_of(ops[i])
    j = i + 1
    if ops[i].name in _STORES:
        stored.add(ops[i].dest)
    produced = {ops[i].results[0]} if ops[i].results else set()
    while j < len(ops):
        op = ops[j]
        if op.name in slotwise and slots_of(op) == n:
            if op.name in _LOADS and op.source in stored:
                break
            if op.name == "nv.wgacc_store_tma" and any(o.name == op.name for o in run):
                break  # one staged store per run: its box loop owns the run's barriers
            if op.name in _STORES:
                stored.add(op.dest)
            run.append(op)
            produced.update(op.results)
        elif op.name.startswith(_HOISTABLE) and not op.regions:
            hoisted.append(op)
        elif op.name in _HOIST_SLOTWISE and not produced.intersection(op.operands) and not (
                op.name in _LOADS and op.source in stored):
            hoisted.append(op)  # e.g. a bias row's load: independent of the run, so it goes first
        else:
            break
        j += 1
    return run, hoisted, j


def _kernel(module: ModuleOp, name: str | None) -> func.FuncOp:
    every = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    kernels = [k for k in every if name is None or k.sym_name.data == name]
    if len(kernels) != 1:
        names = ", ".join(k.sym_name.data for k in every) or "none"
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"expected one kernel{f' named {name}' if name else ''} in the "
                                                 f"module; it has: {names}")
    return kernels[0]


def _written_memrefs(kernel: func.FuncOp) -> set[SSAValue]:
    from tessera.target.nvidia.ir.hopper_ops import WgaccStoreOp, WgaccStoreTmaOp
    from tessera.target.nvidia.ir.ops import StFragGlobalOp, StoreGlobalOp

    return {op.dest for op in kernel.walk()
            if isinstance(op, (StoreGlobalOp, StFragGlobalOp, WgaccStoreOp, WgaccStoreTmaOp))}


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
        params.append(KernelParam("tsr_scratch", "unsigned char*", -1, "scratch", record[0], per_cta=record[1]))
    return params


def _scratch_record(kernel: func.FuncOp) -> tuple[int, int] | None:
    """(bytes per logical tile, bytes per launched CTA) of scratch that the kernel's nv.splitk_fixup or
    nv.streamk_fixup ops address (None: none); a kernel has one layout."""
    from tessera.target.nvidia.ir.hopper_ops import SplitkFixupOp, StreamkFixupOp

    sizes = {}
    for op in kernel.walk():
        if isinstance(op, SplitkFixupOp):
            sizes[(op.record_bytes(op.n.value.data, op.splits.value.data, op.blocks.value.data), 0)] = op
        elif isinstance(op, StreamkFixupOp):
            sizes[(op.COUNTER_BYTES, 2 * op.slot_bytes(op.n.value.data, op.blocks.value.data))] = op
    if len(sizes) > 1:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"the fixup ops of @{kernel.sym_name.data} disagree on the scratch "
                                                 f"layout ({sorted(sizes)} bytes per tile and per CTA): a kernel has "
                                                 "one", op=list(sizes.values())[1])
    return next(iter(sizes), None)


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
    e = Emitter(threads)
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
                         streamk=bool(_int_attr(attrs, "nv.streamk", 0)))


def _int_attr(attrs, name: str, default: int) -> int:
    return attrs[name].value.data if isinstance(attrs.get(name), IntegerAttr) else default
