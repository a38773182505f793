"""`CompiledKernel`: one compiled specialisation, its launch signature, and launches through the runtime.

The launch signature is derived from the func.func signature by the
emitter's ABI (`tessera.target.nvidia.emit.cuda`): each memref argument becomes a
pointer parameter followed by one `long long` size and one `long long`
stride (in elements) per dim; index scalars are `long long`, i32 `int`, f32
`float`. Block = (nv.num_threads, 1, 1), dynamic shared memory =
nv.smem_bytes (the runtime raises the opt-in limit above 48 KiB).

`launch(grid, args)` takes one argument per func.func argument -- arrays for
memrefs (torch / __cuda_array_interface__ arrays in place, numpy arrays
copied in and out), numbers for scalars -- checks them with the rules the
reference lane applies too (`tessera.ir.argcheck`: dtype, rank, contiguity,
static dims, equal symbolic dims, 32-bit dims and index scalars, scalar
ranges, no read-only or aliased output), then the device's own (device,
alignment), and fills the sizes and strides itself. `launch_values(grid,
values)` takes the C parameter list directly; `tessera.ops` uses it after
its own checks, so a warm op call reads each array once. Loading is lazy:
compiling needs no GPU.

sm_90a kernels may add two kinds of parameter (emit_cuda's KernelParam):
`tmap`, a TMA tensor map (128 bytes, `__grid_constant__`) of a memref
argument of rank 2 to 5, encoded here from that argument's pointer, sizes
and strides (`tessera.runtime.tma`, cached per array); and `grid`, the logical grid of
a persistent kernel, which is launched on min(CTAs, SMs) CTAs
(`tessera.runtime.persistent`). Neither is the caller's business: `launch`
fills both, and `launch_values` fills the slots left None (or absent). The
g++ host emulator cannot run such kernels and says so (RUNTIME_LOAD_FAILED).
"""

from __future__ import annotations

from functools import cached_property, partial
from typing import TYPE_CHECKING, Callable

from tessera.target.nvidia.emit.abi import EmittedKernel
from tessera.target.nvidia.toolchain.nvrtc import CompiledArtifact
from tessera.ir import argcheck
from tessera.ir import diagnostics as D
from tessera.runtime import tma
from tessera.runtime.args import Param, ptr, scalar, tmap
from tessera.runtime.derived import DerivedParams
from tessera.runtime.errors import RuntimeLaunchError
from tessera.runtime.launch import LaunchResult

from tessera.compiler import arrays, testing

if TYPE_CHECKING:
    from tessera.dsl.kernel import TracedKernel

_VALUE_KINDS = {"long long": "i64", "int": "i32", "float": "f32", "double": "f64"}
INDEX_LIMIT = argcheck.INDEX_LIMIT  # index values are 32-bit inside the kernel (emit_cuda's ABI)
WARM_ENTRIES = 256  # argument signatures a CompiledKernel remembers (a warm launch sees few)


def _unsupported(p, why: str) -> D.TesseraError:
    return D.TesseraError(D.EMIT_UNSUPPORTED, f"kernel parameter {p.name} ({p.role} of argument {p.arg}) {why}")


def launch_signature(emitted: EmittedKernel, arg_types) -> tuple[Param, ...]:
    """The runtime signature of an emitted kernel; `arg_types` are the func.func argument types."""
    from tessera.ir.types import type_name

    named = {(p.arg, p.role, p.dim): p.name for p in emitted.params}
    sizes: dict[int, list[str]] = {}
    for p in emitted.params:
        if p.role == "size":
            sizes.setdefault(p.arg, []).append(p.name)
    out = []
    for p in emitted.params:
        if p.role == "ptr":
            elem = type_name(arg_types[p.arg].element_type)
            intent = "in" if p.ctype.startswith("const ") else "inout"
            out.append(ptr(p.name, elem, tuple(sizes.get(p.arg, ())), intent))
        elif p.role in ("size", "stride"):
            out.append(scalar(p.name, "i64"))
        elif p.role == "tmap":
            shape = getattr(arg_types[p.arg], "get_shape", None)  # a memref's; a scalar has none
            rank = len(shape()) if shape is not None else 0
            keys = [(p.arg, "ptr", None)] + [(p.arg, r, d) for r in ("size", "stride") for d in range(rank)]
            if not all(k in named for k in keys) or not 2 <= rank <= tma.MAX_RANK:
                raise _unsupported(p, f"is a tensor map of something other than a memref argument of rank 2 to "
                                      f"{tma.MAX_RANK}")
            parts = [named[k] for k in keys]
            out.append(tmap(p.name, type_name(arg_types[p.arg].element_type), tuple(parts), tuple(p.box), p.swizzle))
        elif p.role == "scratch":
            head = getattr(p, "head", 0)
            if (p.ctype != "unsigned char*" or not isinstance(p.dim, int) or p.dim < 0 or not isinstance(head, int)
                    or head < 0 or p.dim + p.per_cta + head <= 0):
                raise _unsupported(p, f"must be an unsigned char* with byte counts per tile, per CTA and before it "
                                      f"(not negative, not all 0), not {p.ctype} of {p.dim}, {p.per_cta}, {head}")
            out.append(ptr(p.name, "u8", (), "inout"))
        elif p.role == "grid":
            if p.dim not in (0, 1, 2) or p.ctype != "int":
                raise _unsupported(p, f"must be an int grid size of axis 0, 1 or 2, not {p.ctype} of axis {p.dim}")
            out.append(scalar(p.name, "i32"))
        elif p.ctype in _VALUE_KINDS:
            out.append(scalar(p.name, _VALUE_KINDS[p.ctype]))
        else:
            raise D.TesseraError(D.EMIT_UNSUPPORTED, f"kernel parameter {p.name} has C type {p.ctype}, which the "
                                                     "runtime cannot pass")
    return tuple(out)


class CompiledKernel:
    """A traced kernel lowered, emitted and compiled for one arch; see the module docstring.

    Attributes: `traced` (the TracedKernel), `emitted` (EmittedKernel: source,
    parameters, threads, shared memory), `artifact` (CompiledArtifact: cubin,
    hashes, toolchain), `arch`, `pipeline` (the canonical pipeline text that
    ran), `cache_key`, `signature` (runtime Params), `block`, `smem_bytes`,
    `report` (the CompileReport: registers, occupancy, SASS mix, warnings).
    """

    def __init__(self, traced: TracedKernel, emitted: EmittedKernel, artifact: CompiledArtifact, pipeline: str,
                 cache_key: str, arg_types):
        written = {p.arg for p in emitted.params if p.role == "ptr" and not p.ctype.startswith("const ")}
        decl = argcheck.declare(tuple(arg_types), traced.arg_names, specs=traced.arg_specs, written=written)
        self._setup(traced, emitted, artifact, pipeline, cache_key, launch_signature(emitted, arg_types), decl)

    @classmethod
    def restore(cls, emitted: EmittedKernel, artifact: CompiledArtifact, pipeline: str, cache_key: str, signature,
                decl, retrace: Callable[[], TracedKernel]) -> "CompiledKernel":
        """A kernel rebuilt from what a launch needs (`tessera.compiler.records`), with no tracing: `traced` is
        made by `retrace()` the first time something asks for it (the reference lane, the compile report)."""
        ck = cls.__new__(cls)
        ck._setup(None, emitted, artifact, pipeline, cache_key, tuple(signature), tuple(decl))
        ck._retrace = retrace
        return ck

    @property
    def traced(self) -> TracedKernel:
        if self._traced is None:
            self._traced = self._retrace()
        return self._traced

    def _setup(self, traced, emitted, artifact, pipeline, cache_key, signature, decl) -> None:
        self._traced, self.emitted, self.artifact = traced, emitted, artifact
        self.pipeline, self.cache_key, self.arch = pipeline, cache_key, artifact.arch
        self.name = emitted.name
        self.block = (emitted.num_threads, 1, 1)
        self.smem_bytes = emitted.smem_bytes
        self.signature = signature
        self.persistent = emitted.persistent
        self._decl = decl
        self._arrays = tuple(isinstance(a, argcheck.ArrayArg) for a in self._decl)  # which arguments are memrefs
        self._at = {(p.arg, p.role, p.dim): i for i, p in enumerate(emitted.params)}  # where each value goes
        self._derived = DerivedParams(emitted.params, self.signature, emitted.persistent, self.name,
                                      _sms_of(emitted), emitted.cluster, emitted.splitk,
                                      emitted.cluster_axis, emitted.streamk)
        self._warm: dict = {}  # argument keys -> (device, per-argument steps); see _warm_values
        self._loaded: dict = {}

    # -- what was built --------------------------------------------------------
    @property
    def source(self) -> str:
        return self.emitted.source

    @property
    def cubin(self) -> bytes:
        return self.artifact.cubin

    @property
    def artifact_hash(self) -> str:
        return self.artifact.sha256

    def sass(self, tool: str = "cuobjdump") -> str:
        """The cubin's SASS text (cuobjdump -sass, or nvdisasm -c)."""
        from tessera.target.nvidia.toolchain.sass import disassemble
        return disassemble(self.artifact.cubin, tool)

    @cached_property
    def report(self):
        """The CompileReport (tessera.compiler.report), built on first use: it disassembles the cubin."""
        from tessera.compiler.report import report
        return report(self)

    def with_artifact(self, artifact: CompiledArtifact) -> "CompiledKernel":
        """The same kernel with another artifact (fault-injection tests load a damaged cubin this way)."""
        ck = CompiledKernel.restore(self.emitted, artifact, self.pipeline, self.cache_key, self.signature, self._decl,
                                    lambda: self.traced)
        ck._traced = self._traced
        return ck

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.name} {self.arch} {self.artifact.sha256[:12]}>"

    # -- loading -----------------------------------------------------------------
    def loaded(self, device: int = 0):
        """The runtime's LoadedKernel on `device` (or the host emulator's, inside `testing.emulate_on_host`)."""
        backend = testing.backend()
        key = (device, backend)
        hit = self._loaded.get(key)
        if hit is None:
            if backend is not None:
                hit = backend.load(self)
            else:
                from tessera.runtime.launch import load
                co = {"cooperative": True} if self.emitted.coresident else {}  # its CTAs wait for each other
                hit = load(self.artifact, self.name, self.signature, device=device, **co)
            self._loaded[key] = hit
        return hit

    # -- launching ---------------------------------------------------------------
    def launch_values(self, grid, values, stream=None, *, sync: bool = False, device: int = 0) -> LaunchResult:
        """Launch with `values` in C parameter order (pointers as ints or numpy arrays, then sizes, strides).

        Tensor-map and grid parameters are the runtime's: leave them None, or leave them out (a list
        of the other parameters only); `grid` is the logical grid, also for a persistent kernel.
        """
        return self._launch_list(grid, values, stream, sync, device, False)

    def _launch_list(self, grid, values, stream, sync: bool, device: int, owned: bool) -> LaunchResult:
        """launch_values; `owned`: `values` is a fresh list the runtime's slots may be written into."""
        loaded = self._loaded.get((device, testing.backend()))
        if loaded is None:
            loaded = self.loaded(device)
        if self._derived.active:
            grid, values = self._derived.complete(grid, values, device, owned, testing.backend() is not None, stream)
        try:
            return loaded.launch(grid, self.block, self.smem_bytes, values, stream, sync=sync)
        except Exception as err:
            self._after_failure(err)
            raise

    def _after_failure(self, err: Exception) -> None:
        """A refused argument never reached the GPU; any other failed launch may leave scratch counters raised,
        so the buffers are replaced (not zeroed in place: an earlier launch on the stream may still use them)."""
        if self._derived.scratch_params and getattr(err, "code", None) != D.RUNTIME_ARG_INVALID:
            self._derived.scratch.drop()

    def prepare(self, grid, values, stream=None, *, device: int = 0):
        """A function of no arguments that repeats `launch_values(grid, values, stream, device=device)` with
        every check, tensor map and conversion done once, now; None where that cannot hold (the host emulator,
        arguments the launch converts). Launches nothing itself.

        A kernel with runtime scratch (split-K's, stream-K's, the dynamic tile counter) keeps the buffer's
        address: each complete launch leaves its counters at zero, and a failed one drops the buffer (its
        counters may be raised), after which the prepared launch takes the full path to a fresh one."""
        if testing.backend() is not None:
            return None
        loaded = self._loaded.get((device, None))
        if loaded is None:
            loaded = self.loaded(device)
        given, grid0 = list(values), grid
        if self._derived.active:
            grid, values = self._derived.complete(grid, values, device, False, False, stream)
        # a value left None for the binder (a map of an array it converts first) fails prepare's type check: None
        fire = loaded.prepare(grid, self.block, self.smem_bytes, values, stream)
        if fire is None or not self._derived.scratch_params:
            return fire
        scratch, generation = self._derived.scratch, self._derived.scratch.generation

        def fire_with_scratch():
            if scratch.generation != generation:  # dropped after a failed launch: the full path takes a new one
                return self._launch_list(grid0, list(given), stream, False, device, True)
            try:
                return fire()
            except Exception as err:
                self._after_failure(err)
                raise
        return fire_with_scratch

    def launch_grid(self, grid, device: int = 0) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(physical grid, logical grid) of a launch over `grid`: a persistent kernel gets min(CTAs, SMs) CTAs."""
        return self._derived.launch_grid(grid, device)

    def launch(self, grid, args, stream=None, *, sync: bool = False, device: int | None = None) -> LaunchResult:
        """Check `args` (one per func.func argument) and launch over `grid`; returns the runtime's LaunchResult.

        Errors are RUNTIME_ARG_INVALID naming the argument, before anything is
        written; load and launch failures are the runtime's coded errors.
        """
        warm = self._warm_values(args)
        values, found = self.values(args) if warm is None else warm
        dev = found if device is None else device
        if found is not None and device is not None and found != device:
            raise self._fail(None, f"the arrays live on device {found}, the launch asked for device {device}")
        return self._launch_list(grid, values, stream, sync, dev or 0, True)

    def _fail(self, name: str | None, message: str, hint: str | None = None) -> RuntimeLaunchError:
        where = f"argument {name!r} " if name is not None else ""
        return RuntimeLaunchError(D.RUNTIME_ARG_INVALID, f"{where}{message}", kernel=self.name, hint=hint)

    def values(self, args) -> tuple[list, int | None]:
        """(C parameter values, device of the device arrays or None) for func.func arguments `args`."""
        try:
            checked = argcheck.check_call(self._decl, args, arrays.view)
        except argcheck.ArgProblem as err:
            if err.index is None:
                raise self._fail(None, f"{self.name} {err.message}") from None
            raise self._fail(self._decl[err.index].name, err.message, err.hint) from None
        values, device, host, devarg = [None] * len(self.emitted.params), None, None, None
        at = self._at
        for i, (arg, a, v) in enumerate(zip(self._decl, args, checked)):
            if not isinstance(arg, argcheck.ArrayArg):
                values[at[(i, "value", None)]] = v
                continue
            name, elem = arg.name, arg.elem
            if v.ptr is None:
                if v.source != "numpy":
                    raise self._fail(name, "is a host tensor: pass a CUDA tensor or a numpy array")
                host = name
                values[at[(i, "ptr", None)]] = a
            else:
                if v.ptr % arrays.ITEMSIZE[elem]:
                    raise self._fail(name, f"address {v.ptr:#x} is not aligned to its {elem} element size")
                if v.device is not None:
                    if device is not None and v.device != device:
                        raise self._fail(name, f"lives on device {v.device}, another argument on device {device}")
                    device = v.device
                devarg = devarg or name
                values[at[(i, "ptr", None)]] = v.ptr
            for d, (size, stride) in enumerate(zip(v.shape, arrays.c_strides(v.shape))):
                values[at[(i, "size", d)]] = size
                values[at[(i, "stride", d)]] = stride
        if host is not None and devarg is not None:  # (a bare __cuda_array_interface__ names no device)
            raise self._fail(None, f"argument {host!r} is a numpy array and {devarg!r} a device array: pass all "
                                   "device arrays, or all numpy arrays (copied in and out)")
        if host is None:
            self._remember(args, values, device, checked)
        return values, device

    # -- the warm path ------------------------------------------------------------------------------
    def _keys(self, args):
        """(key, dynamic values) of `args`: the tuple of `arrays.probe` keys (memrefs) and exact types
        (scalars), and per argument its address or the scalar itself; None when an array has no probe
        (numpy) or the count is wrong (the full path reports both)."""
        if len(args) != len(self._arrays):
            return None
        probes, keys, dynamic = arrays.PROBES, [], []
        for is_array, a in zip(self._arrays, args):
            if is_array:
                p = probes.get(a.__class__)
                found = p(a) if p is not None else arrays.probe(a)
                if found is None:
                    return None
                keys.append(found[0])
                dynamic.append(found[1])
            else:
                keys.append(a.__class__)
                dynamic.append(a)
        return tuple(keys), dynamic

    def _warm_values(self, args):
        """`values(args)` from the verdict `values` left for arguments of equal keys, or None (take the full path).

        Everything `values` checks is a function of the keys (dtype, rank, dims, strides, device, scalar
        types) except each address and scalar value: alignment, the overlap of a written array with another
        and the scalars' ranges are checked here, and a failure takes the full path, which names it. A hit
        copies the remembered parameter list and writes in the addresses and scalars.
        """
        found = self._keys(args)
        if found is None:
            return None
        try:
            entry = self._warm.get(found[0])
        except TypeError:  # an unhashable key part (a list shape in an interface dict)
            return None
        if entry is None:
            return None
        device, template, fills, overlaps = entry
        values, dynamic = template.copy(), found[1]
        try:
            for (at, itemsize, convert), x in zip(fills, dynamic):
                if itemsize:  # an address: a plain int, aligned to its element
                    if x.__class__ is not int or x % itemsize:
                        return None
                    values[at] = x
                else:
                    values[at] = convert(x)
        except argcheck.ArgProblem:
            return None
        for i, j, size_i, size_j in overlaps:  # a written array's bytes against another's
            if dynamic[i] < dynamic[j] + size_j and dynamic[j] < dynamic[i] + size_i:
                return None
        return values, device

    def _remember(self, args, values, device, views) -> None:
        """Keep the verdict of a successful `values(args)` (`views`: what the checker read) for `_warm_values`
        (device arrays only)."""
        found = self._keys(args)
        if found is None:
            return
        fills, overlaps = [], []
        for i, arg in enumerate(self._decl):
            if isinstance(arg, argcheck.ArrayArg):
                fills.append((self._at[(i, "ptr", None)], arrays.ITEMSIZE[arg.elem], None))
                if arg.written and views[i].nbytes:
                    overlaps += [(i, j, views[i].nbytes, views[j].nbytes) for j, other in enumerate(self._decl)
                                 if j != i and isinstance(other, argcheck.ArrayArg) and views[j].nbytes]
            else:
                fills.append((self._at[(i, "value", None)], 0, partial(argcheck.scalar_value, arg.kind)))
        if len(self._warm) >= WARM_ENTRIES:
            self._warm.clear()
        try:
            self._warm[found[0]] = (device, list(values), tuple(fills), tuple(overlaps))
        except TypeError:
            pass


def _sms_of(emitted: EmittedKernel):
    """device -> the CTAs `emitted` may launch at most: the device's SMs, or on the host emulator the count its
    own launch uses (`host_emulator.emulated_sms`), so the derived grid and scratch match what runs there."""
    def sms(device: int) -> int:
        if testing.backend() is not None:
            from tessera.runtime.host_emulator import emulated_sms
            return emulated_sms(emitted)
        return _sm_count(device)
    return sms


def _sm_count(device: int) -> int:
    """SMs of `device`: how many CTAs a persistent kernel launches at most."""
    from tessera.runtime.device import device_info
    return device_info(device).sm_count
