"""Load a verified cubin and launch it with strict dispatch.

`load` refuses, with RUNTIME_LOAD_FAILED, a cubin whose bytes do not match
its hash, one built for an arch the device cannot run, one the driver rejects,
and a kernel whose parameter list differs from the declared signature. A
`LoadedKernel.launch` either enqueues exactly that kernel and returns a
`LaunchResult` naming lane 'cuda', the artifact hash and the kernel, or raises
a coded `RuntimeLaunchError`; there is no fallback (DESIGN.md section 3, lesson 5).

Launches go through the driver's cuLaunchKernel with a parameter block built
once at load time (one slot per parameter -- 8 bytes, 8-aligned, or 128 bytes,
64-aligned, for a TMA tensor map -- and the array of their addresses): a warm
launch only writes the slots. cuda.core's generic `launch`
re-inspects every argument's Python type on every call, which is the overhead
this module exists to avoid. The driver's library API loads the cubin
(cuLibraryLoadData), and `runtime.device` makes the primary context current.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from dataclasses import dataclass

from tessera.runtime.cubin_check import cubin_problem
from tessera.target.nvidia.toolchain.nvrtc import CompiledArtifact
from tessera.ir.diagnostics import (RUNTIME_ARG_INVALID, RUNTIME_LAUNCH_FAILED, RUNTIME_LAUNCH_TIMEOUT,
                                   RUNTIME_LOAD_FAILED)
from tessera.runtime.args import ArgBinder
from tessera.runtime.device import can_run, device_info, ensure_current
from tessera.runtime.errors import RuntimeLaunchError, driver_error_name
from tessera.runtime import wait
from tessera.runtime.tma import TMAP_ALIGN, TMAP_BYTES, TensorMap

DEFAULT_DYNAMIC_SMEM = 48 * 1024  # what a kernel may use before it must opt in
GRID_LIMITS = (2**31 - 1, 65535, 65535)
# struct code of each parameter kind; every parameter gets its own 8-byte, 8-aligned slot, but a tensor map
# (a CUtensorMap, passed by value as a __grid_constant__ parameter) gets 128 bytes at 64-byte alignment
SLOT_FORMATS = {"ptr": "Q", "u64": "Q", "i64": "q", "f64": "d", "i32": "i4x", "u32": "I4x", "f32": "f4x",
                "tmap": f"{TMAP_BYTES}s"}
SLOT_SIZES = {kind: (TMAP_BYTES, TMAP_ALIGN) if kind == "tmap" else (8, 8) for kind in SLOT_FORMATS}
PLAIN_TYPES = {"f32": float, "f64": float, "tmap": TensorMap}  # exact types a warm call passes; others int
BLOCK_LIMITS = (1024, 1024, 64)


@dataclass(frozen=True)
class LaunchResult:
    """What ran: always lane 'cuda' here; `synchronized` says whether completion was checked."""

    lane: str
    artifact_hash: str
    kernel: str
    arch: str
    synchronized: bool


def _driver():
    from cuda.bindings import driver
    return driver


def _describe(driver, err) -> str:
    try:
        code, text = driver.cuGetErrorString(err)
        detail = text.decode() if code == driver.CUresult.CUDA_SUCCESS and text else ""
    except Exception:  # the name alone still says what went wrong
        detail = ""
    return f"{driver_error_name(err)}" + (f" ({detail})" if detail else "")


def _dims(value, what: str, limits, kernel: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) else None
    if dims is None or not 1 <= len(dims) <= 3 or not all(type(d) is int and d >= 1 for d in dims):
        raise RuntimeLaunchError(RUNTIME_LAUNCH_FAILED, f"{what} must be a positive int or 1 to 3 positive ints, "
                                 f"got {value!r}", kernel=kernel)
    dims = dims + (1,) * (3 - len(dims))
    for d, limit, axis in zip(dims, limits, "xyz"):
        if d > limit:
            raise RuntimeLaunchError(RUNTIME_LAUNCH_FAILED, f"{what}.{axis} = {d} exceeds the limit {limit}",
                                     kernel=kernel)
    return dims


def slot_layout(kinds) -> tuple[str, tuple[int, ...], int]:
    """(struct format, byte offset of each slot, total bytes) of a parameter block, offsets from a 64-aligned base."""
    fmt, offsets, at = "<", [], 0
    for kind in kinds:
        size, align = SLOT_SIZES[kind]
        pad = -at % align
        fmt += f"{pad}x" if pad else ""
        offsets.append(at + pad)
        fmt += SLOT_FORMATS[kind]
        at += pad + size
    return fmt, tuple(offsets), at


def _stream_handle(driver, stream, kernel: str):
    """A CUstream for None, an int handle, a CUstream, or a cuda.core/torch/cupy stream object."""
    if isinstance(stream, driver.CUstream):
        return stream
    if type(stream) is int:
        return driver.CUstream(stream)
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return driver.CUstream(int((proto() if callable(proto) else proto)[1]))
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return driver.CUstream(handle)
    raise RuntimeLaunchError(RUNTIME_ARG_INVALID, f"stream {stream!r} is not a CUDA stream", kernel=kernel)


class LoadedKernel:
    """One kernel of a loaded cubin, its signature bound; see `launch`."""

    def __init__(self, artifact: CompiledArtifact, name: str, binder: ArgBinder, device: int, module, kernel,
                 attributes: dict, cooperative: bool = False):
        driver = _driver()
        self.artifact, self.name, self.device = artifact, name, device
        self._binder, self._module, self._kernel = binder, module, kernel  # the module must outlive launches
        self.num_regs = attributes["num_regs"]
        self.local_size_bytes = attributes["local_size_bytes"]
        self.shared_size_bytes = attributes["shared_size_bytes"]
        self.max_threads_per_block = attributes["max_threads_per_block"]
        self._driver = driver
        self._ok_code = driver.CUresult.CUDA_SUCCESS
        self._not_ready = driver.CUresult.CUDA_ERROR_NOT_READY
        self._launch_kernel = driver.cuLaunchKernel
        self.cooperative = cooperative
        if cooperative:  # the driver launches every CTA at once or refuses (a kernel whose CTAs wait for each other)
            coop = driver.cuLaunchCooperativeKernel
            self._launch_kernel = lambda f, gx, gy, gz, bx, by, bz, smem, stream, params, _extra: coop(
                f, gx, gy, gz, bx, by, bz, smem, stream, params)
        self._func = driver.CUfunction(int(kernel.handle))  # a CUkernel may be launched as a CUfunction
        self._null_stream = driver.CUstream(0)
        self._streams: dict[int, object] = {}  # raw stream handle -> its CUstream
        # The parameter block: one packed buffer of slots and the array of slot addresses
        # cuLaunchKernel reads; a launch packs the values with one struct call.
        params = binder.params
        fmt, offsets, size = slot_layout(p.kind for p in params)
        words = max(1, size // 8)
        self._memory = (ctypes.c_uint64 * (words + TMAP_ALIGN // 8))()  # owns the block; _slots is its 64-aligned part
        address = ctypes.addressof(self._memory)
        address += -address % TMAP_ALIGN
        self._slots = (ctypes.c_uint64 * words).from_address(address)  # writable through the buffer protocol
        self._pack_into = struct.Struct(fmt).pack_into
        self._param_array = (ctypes.c_void_p * max(1, len(params)))(*(address + off for off in offsets))
        self._params_addr = ctypes.addressof(self._param_array) if params else None
        # exact Python types of a warm call that needs no conversion: int for pointers and integers
        self._plain_types = tuple(PLAIN_TYPES.get(p.kind, int) for p in params)
        self._configs: dict = {}
        self._packed = None  # the tuple of values the slots hold, when a launch packed a tuple
        self._dynamic_smem_limit = DEFAULT_DYNAMIC_SMEM
        self._lock = threading.Lock()
        self._result = LaunchResult("cuda", artifact.sha256, name, artifact.arch, False)
        self._result_synced = LaunchResult("cuda", artifact.sha256, name, artifact.arch, True)

    def fail(self, message: str, code=RUNTIME_LAUNCH_FAILED) -> RuntimeLaunchError:
        return RuntimeLaunchError(code, message, kernel=self.name)

    def launch(self, grid, block, shared_mem: int = 0, args=(), stream=None, *, sync: bool = False) -> LaunchResult:
        """Launch on `grid` x `block` with `shared_mem` dynamic shared bytes and `args` (one per parameter).

        `stream` is None (the legacy default stream), a handle int, or a cuda.core /
        torch / cupy stream. With `sync=True` (implied when any argument is a numpy
        array, which is copied in and back) the call waits and reports execution faults.
        """
        try:
            cfg = self._configs[(grid, block, shared_mem)]
        except (KeyError, TypeError):
            cfg = self._config(grid, block, shared_mem)
        handle = self._handle(stream)
        if tuple(map(type, args)) != self._plain_types:  # arrays, numpy scalars, ints for floats: convert
            bound = self._binder.bind(args)
            if bound.host:
                self._launch_staged(cfg, bound, handle)
                return self._result_synced
            args = bound.values
        self._enqueue(cfg, args, handle)
        if sync:
            self._synchronize(handle)
            return self._result_synced
        return self._result

    def prepare(self, grid, block, shared_mem: int, args, stream):
        """A function of no arguments that launches like `launch(grid, block, shared_mem, args, stream)` and
        returns its LaunchResult, with every check and conversion done now; None where one is left for the
        launch itself (arguments to convert or stage). The ops' warm path keeps it for a repeated call."""
        args = tuple(args)
        if tuple(map(type, args)) != self._plain_types:
            return None
        try:
            cfg = self._configs[(grid, block, shared_mem)]
        except (KeyError, TypeError):
            cfg = self._config(grid, block, shared_mem)
        handle = self._handle(stream)
        enqueue, result = self._enqueue, self._result

        def fire():
            enqueue(cfg, args, handle)
            return result
        return fire

    def _handle(self, stream):
        """The CUstream of `stream` (None: the legacy default stream)."""
        if stream is None:
            return self._null_stream
        if stream.__class__ is int:  # a raw handle (the ops' warm path): its CUstream wrapper is made once
            handle = self._streams.get(stream)
            if handle is None:
                if len(self._streams) >= 64:
                    self._streams.clear()
                handle = self._streams[stream] = _stream_handle(self._driver, stream, self.name)
            return handle
        return _stream_handle(self._driver, stream, self.name)

    def _enqueue(self, cfg, values, handle) -> None:
        lock = self._lock
        lock.acquire()
        try:
            if values is not self._packed:  # a prepared launch repeated: its values are in the slots already
                self._packed = None
                self._pack_into(self._slots, 0, *values)
                if values.__class__ is tuple:
                    self._packed = values
            (err,) = self._launch_kernel(self._func, *cfg, handle, self._params_addr, 0)
        except (struct.error, OverflowError):  # an int or float out of its parameter's range: bind names it
            err = None
        finally:
            lock.release()
        if err is None:
            self._binder.bind(values)
            raise self.fail(f"arguments {values!r} do not fit the parameter block", RUNTIME_ARG_INVALID)
        if err != self._ok_code:
            how = "cuLaunchCooperativeKernel" if self.cooperative else "cuLaunchKernel"
            raise self.fail(f"{how} failed with {_describe(self._driver, err)}"
                            + (" (its CTAs wait for each other, so all must be resident at once: fewer CTAs than "
                               "the device holds, none taken by other work)" if self.cooperative else ""))

    def _synchronize(self, handle) -> None:
        """Wait for the stream, at most `wait.timeout_s()` seconds (RUNTIME_LAUNCH_TIMEOUT past it)."""
        bound = wait.timeout_s()
        if bound is None:
            (err,) = self._driver.cuStreamSynchronize(handle)
        else:
            try:
                err = wait.wait(self._driver.cuStreamQuery, handle, self._not_ready, bound)
            except wait.LaunchTimeout:
                raise self.fail(f"did not finish within {bound:g} s of its launch (sync=True) and is still running: "
                                "a kernel that waits forever (a deadlocked barrier or mbarrier ring) ends here. The "
                                "driver cannot stop one kernel, so work queued behind it on this stream waits for "
                                f"it; the bound is {wait.ENV} (seconds, 0 for none)", RUNTIME_LAUNCH_TIMEOUT) from None
        if err != self._ok_code:
            raise self.fail(f"the kernel failed while running: {_describe(self._driver, err)}; "
                            "an execution fault leaves the CUDA context unusable")

    def _config(self, grid, block, shared_mem) -> tuple[int, ...]:
        g = _dims(grid, "grid", GRID_LIMITS, self.name)
        b = _dims(block, "block", BLOCK_LIMITS, self.name)
        if b[0] * b[1] * b[2] > self.max_threads_per_block:
            raise self.fail(f"block {b} has {b[0] * b[1] * b[2]} threads; this kernel allows at most "
                            f"{self.max_threads_per_block}")
        if type(shared_mem) is not int or shared_mem < 0:
            raise self.fail(f"shared_mem must be a non-negative int of bytes, got {shared_mem!r}")
        if shared_mem > self._dynamic_smem_limit:
            self._opt_in_shared_memory(shared_mem)
        cfg = (*g, *b, shared_mem)
        try:
            self._configs[(grid, block, shared_mem)] = cfg
        except TypeError:  # a list grid or block: valid, just not memoisable
            pass
        return cfg

    def _opt_in_shared_memory(self, nbytes: int) -> None:
        driver = self._driver
        attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        err, optin = driver.cuDeviceGetAttribute(attr, self.device)
        if err == self._ok_code and self.shared_size_bytes + nbytes > optin:
            raise self.fail(f"{nbytes} B of dynamic plus {self.shared_size_bytes} B of static shared memory "
                            f"exceed the device's {optin} B per block")
        (err,) = driver.cuKernelSetAttribute(
            driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes,
            self._kernel.handle, self.device)
        if err != self._ok_code:
            raise self.fail(f"could not allow {nbytes} B of dynamic shared memory: {_describe(driver, err)}")
        self._dynamic_smem_limit = nbytes

    def _launch_staged(self, cfg, bound, handle) -> None:
        """Copy numpy arrays in, launch, copy 'out'/'inout' arrays back, wait; free on every path."""
        driver, values, allocs = self._driver, list(bound.values), []
        try:
            for index, array, _ in bound.host:
                err, dptr = driver.cuMemAlloc(max(array.nbytes, 1))
                if err != self._ok_code:
                    raise self.fail(f"could not allocate {array.nbytes} B for argument "
                                    f"{self._binder.params[index].name!r}: {_describe(driver, err)}")
                allocs.append(dptr)
                if array.nbytes:
                    (err,) = driver.cuMemcpyHtoDAsync(dptr, array.ctypes.data, array.nbytes, handle)
                    if err != self._ok_code:
                        raise self.fail(f"copy-in failed: {_describe(driver, err)}")
                values[index] = int(dptr)
            for slot in bound.tmaps:  # maps of staged arrays: their device addresses are known only now
                slot.fill(values, self.name)
            self._enqueue(cfg, values, handle)
            # A copy into pageable memory waits for the kernel inside the driver, unbounded: wait (bounded) first.
            self._synchronize(handle)
            for (_, array, back), dptr in zip(bound.host, allocs):
                if back and array.nbytes:
                    (err,) = driver.cuMemcpyDtoHAsync(array.ctypes.data, dptr, array.nbytes, handle)
                    if err != self._ok_code:
                        raise self.fail(f"copy-out failed: {_describe(driver, err)}")
            self._synchronize(handle)
        except RuntimeLaunchError as err:
            if err.code is RUNTIME_LAUNCH_TIMEOUT:  # the kernel may still read and write them: never free those
                _abandoned.extend(allocs)
                allocs = []
            raise
        finally:
            if allocs:
                driver.cuStreamSynchronize(handle)  # never free memory a queued copy may still touch
                for dptr in allocs:
                    driver.cuMemFree(dptr)


_loaded: dict[tuple, LoadedKernel] = {}
_abandoned: list = []  # staging buffers of launches that timed out while their kernel still ran (never freed)


def load(artifact: CompiledArtifact, kernel: str, signature, *, device: int = 0,
         cooperative: bool = False) -> LoadedKernel:
    """Load `kernel` (its name, or a name expression of the artifact) from a verified artifact.

    `signature` is a sequence of `tessera.runtime.args.Param` (see `ptr`, `scalar`). `cooperative`: launch it
    with cuLaunchCooperativeKernel (every CTA resident at once, or a coded launch error; for a kernel whose CTAs
    wait for each other). Loaded kernels are memoised per (cubin hash, kernel, signature, device, cooperative).
    """
    if not isinstance(artifact, CompiledArtifact):
        raise RuntimeLaunchError(RUNTIME_LOAD_FAILED, f"expected a CompiledArtifact, got {type(artifact).__name__}",
                                 kernel=kernel)
    if not artifact.verify():
        raise RuntimeLaunchError(RUNTIME_LOAD_FAILED, f"the cubin's bytes do not match its sha256 "
                                 f"{artifact.sha256[:16]}...: corrupted or modified, refusing to load", kernel=kernel)
    if (problem := cubin_problem(artifact.cubin)) is not None:
        raise RuntimeLaunchError(RUNTIME_LOAD_FAILED, f"refusing to load {kernel!r}: {problem}", kernel=kernel)
    key = (artifact.sha256, kernel, tuple(signature), device, cooperative)
    hit = _loaded.get(key)
    if hit is not None:
        return hit
    binder = ArgBinder(signature, kernel, device)
    ensure_current(device)
    info = device_info(device)
    if not can_run(artifact.arch, info.compute_capability):
        raise RuntimeLaunchError(RUNTIME_LOAD_FAILED, f"the cubin targets {artifact.arch}; device {device} "
                                 f"({info.name}) is {info.arch} and cannot run it", kernel=kernel)
    module, handle, attributes = _load_library(artifact, kernel, device)
    _check_parameters(handle, binder, kernel)
    loaded = LoadedKernel(artifact, kernel, binder, device, module, handle, attributes, cooperative)
    _loaded[key] = loaded
    return loaded


class KernelHandle:
    """A kernel of a loaded library: `handle` (CUkernel), `library` (CUlibrary, kept loaded while this lives)."""

    def __init__(self, handle, library):
        self.handle, self.library = handle, library


_ATTRIBUTES = ("num_regs", "local_size_bytes", "shared_size_bytes", "max_threads_per_block")


def _load_library(artifact: CompiledArtifact, kernel: str, device: int):
    """(library, KernelHandle, attributes) of `kernel` in the cubin, loaded through the driver's library API
    (cuda.core's ObjectCode did this before; importing cuda.core cost a warm process 60-140 ms)."""
    driver = _driver()
    ok = driver.CUresult.CUDA_SUCCESS

    def fail(what: str, err) -> RuntimeLaunchError:
        return RuntimeLaunchError(RUNTIME_LOAD_FAILED, f"the driver could not load {kernel!r} from the cubin: "
                                  f"{what}: {_describe(driver, err)}", kernel=kernel)

    err, library = driver.cuLibraryLoadData(artifact.cubin, None, None, 0, None, None, 0)
    if err != ok:
        raise fail("cuLibraryLoadData", err)
    symbol = dict(artifact.symbol_mapping).get(kernel, kernel)
    err, handle = driver.cuLibraryGetKernel(library, symbol.encode())
    if err != ok:
        raise fail(f"cuLibraryGetKernel({symbol!r})", err)
    err, dev = driver.cuDeviceGet(device)
    if err != ok:
        raise fail("cuDeviceGet", err)
    # Reading per-device attributes makes the driver load the code for this device now: with lazy module
    # loading (the default) a bad image would otherwise surface at the first launch.
    attributes = {}
    for name in _ATTRIBUTES:
        err, value = driver.cuKernelGetAttribute(getattr(driver.CUfunction_attribute,
                                                         f"CU_FUNC_ATTRIBUTE_{name.upper()}"), handle, dev)
        if err != ok:
            raise fail(f"cuKernelGetAttribute({name})", err)
        attributes[name] = int(value)
    return library, KernelHandle(handle, library), attributes


def _parameter_sizes(handle: KernelHandle) -> list[int] | None:
    """The kernel's parameter sizes in bytes from the driver, or None where it cannot say (before 12.4)."""
    driver = _driver()
    get = getattr(driver, "cuKernelGetParamInfo", None)
    if get is None:
        return None
    sizes = []
    while True:
        err, _, size = get(handle.handle, len(sizes))
        if err == driver.CUresult.CUDA_ERROR_INVALID_VALUE:
            return sizes  # past the last parameter
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        sizes.append(int(size))


def _check_parameters(handle, binder: ArgBinder, kernel: str) -> None:
    """Compare the kernel's parameter sizes (from the driver) with the declared signature."""
    sizes = _parameter_sizes(handle)
    if sizes is None:  # this driver cannot say: rely on the signature alone
        return
    declared = [ctypes.sizeof(p.ctype) for p in binder.params]
    if sizes != declared:
        raise RuntimeLaunchError(RUNTIME_LOAD_FAILED, f"the kernel takes {len(sizes)} parameters of sizes {sizes} "
                                 f"bytes; the signature declares {len(declared)} of sizes {declared}", kernel=kernel)
