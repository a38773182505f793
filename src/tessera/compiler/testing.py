"""Test hooks of the compile driver: fault injection, and the CUDA lane run on the CPU host emulator.

`inject_faults(source=..., artifact=..., arch=...)` makes every compile in
its `with` block edit the emitted CUDA C++ (a compile error), replace the
compiled artifact (a corrupted cubin) or build for another arch (a cubin
the device cannot run). The in-process caches of `tessera.compile` and
`tessera.ops` are bypassed meanwhile, so neither a faulty kernel leaks out
of the block nor a good one hides the fault inside it. Each fault must end
in a coded error (DESIGN lesson 5): the tests check that.

`emulate_on_host()` makes `CompiledKernel` load kernels into the g++ host
emulator (`tessera.runtime.host_emulator`) instead of the CUDA driver, and
makes the GPU look present to `tessera.ops`. The whole cuda lane then runs
on a CPU-only machine: argument checks, the derived launch signature, the
parameter values (pointers, sizes, strides, scalars), grid, block and
shared-memory size all reach the kernel text as on the GPU. "Device"
pointers are host addresses here (numpy arrays, or objects whose
__cuda_array_interface__ points at host memory), and the launch result's
lane is 'host-emulator', never 'cuda'. The emitted text is compiled as is;
only the cubin is not run.
"""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tessera.ir import diagnostics as D
from tessera.runtime.args import ArgBinder
from tessera.runtime.errors import RuntimeLaunchError
from tessera.runtime.launch import LaunchResult

EMULATOR_LANE = "host-emulator"


@dataclass(frozen=True)
class Faults:
    source: Callable[[str], str] | None = None
    artifact: Callable | None = None
    arch: str | None = None


_faults: Faults | None = None
_backend: "HostBackend | None" = None
_lock = threading.Lock()


def faults() -> Faults | None:
    """The active fault injection, or None (the normal case)."""
    return _faults


def backend() -> "HostBackend | None":
    """The active launch backend override, or None (the CUDA runtime)."""
    return _backend


def active() -> bool:
    """True while any hook is active: the in-process compile and plan caches are bypassed then."""
    return _faults is not None or _backend is not None


@contextmanager
def inject_faults(*, source: Callable[[str], str] | None = None, artifact: Callable | None = None,
                  arch: str | None = None):
    """Inject compile faults for the duration of the block (not thread-safe: tests only)."""
    global _faults
    with _lock:
        previous, _faults = _faults, Faults(source, artifact, arch)
    try:
        yield _faults
    finally:
        _faults = previous


@contextmanager
def emulate_on_host(arch: str = "sm_90"):
    """Run CompiledKernel launches (and so the ops' cuda lane) on the g++ host emulator inside the block."""
    global _backend
    from tessera.runtime.host_emulator import host_tensor_map
    from tessera.runtime import tma
    with _lock:
        previous, _backend = _backend, HostBackend(arch)
    tma.use_host_encoder(host_tensor_map)
    try:
        yield _backend
    finally:
        _backend = previous
        tma.use_host_encoder(None)


class HostBackend:
    """Stands in for the CUDA device: an arch to compile for, and `load` into the host emulator."""

    def __init__(self, arch: str):
        self.arch = arch
        self.launches = 0

    def load(self, kernel) -> "HostKernel":
        """Refuse what `tessera.runtime.load` refuses before the driver sees it: a bad hash, a foreign arch."""
        from tessera.target.nvidia.toolchain.nvrtc import parse_arch
        from tessera.runtime.device import can_run
        art = kernel.artifact
        if not art.verify():
            raise RuntimeLaunchError(D.RUNTIME_LOAD_FAILED, "the cubin's bytes do not match its sha256: corrupted "
                                                            "or modified, refusing to load", kernel=kernel.name)
        major, minor, _ = parse_arch(self.arch)
        if not can_run(art.arch, (major, minor)):
            raise RuntimeLaunchError(D.RUNTIME_LOAD_FAILED, f"the cubin targets {art.arch}; the emulated device is "
                                                            f"{self.arch} and cannot run it", kernel=kernel.name)
        return HostKernel(self, kernel)


_C_TYPES = {"ptr": ctypes.c_void_p, "i64": ctypes.c_longlong, "i32": ctypes.c_int, "f32": ctypes.c_float,
            "f64": ctypes.c_double}


class HostKernel:
    """A LoadedKernel look-alike: same launch arguments, checked by the runtime's binder, run by g++ code."""

    def __init__(self, backend: HostBackend, kernel):
        from tessera.runtime.host_emulator import _library, host_source
        self.backend, self.kernel = backend, kernel
        self.binder = ArgBinder(kernel.signature, kernel.name)
        self.lib = _library(host_source(kernel.emitted))
        self.result = LaunchResult(EMULATOR_LANE, kernel.artifact.sha256, kernel.name, kernel.arch, True)

    def _fail(self, message: str) -> RuntimeLaunchError:
        return RuntimeLaunchError(D.RUNTIME_LAUNCH_FAILED, message, kernel=self.kernel.name)

    def launch(self, grid, block, shared_mem=0, args=(), stream=None, *, sync: bool = False) -> LaunchResult:
        if tuple(block) != self.kernel.block or shared_mem != self.kernel.smem_bytes:
            raise self._fail(f"launched with block {block} and {shared_mem} B of shared memory; the kernel was "
                             f"emitted for {self.kernel.block} and {self.kernel.smem_bytes} B")
        dims = (grid,) if isinstance(grid, int) else tuple(grid)
        if not 1 <= len(dims) <= 3 or not all(type(d) is int and d >= 1 for d in dims):
            raise self._fail(f"grid must be a positive int or 1 to 3 positive ints, got {grid!r}")
        bound = self.binder.bind(args)  # the runtime's own checks: kinds, ranges, dtypes, extents
        from tessera.runtime.host_emulator import launch_library, tensor_map_arg
        values = list(bound.values)
        for index, array, _ in bound.host:  # numpy arrays run in place (a contiguous copy when they are views)
            values[index] = array.ctypes.data
        for slot in bound.tmaps:  # maps of numpy arrays: encoded, as the GPU launcher does once it knows addresses
            slot.fill(values, self.kernel.name)
        keep, pointers = [], []
        for p, v in zip(self.binder.params, values):
            if p.kind == "tmap":  # tessera.runtime.host_emulator.host_tensor_map's 128 bytes, read in place
                buf, at = tensor_map_arg(bytes(v))
                keep.append(buf)
                pointers.append(at)
            else:
                c = _C_TYPES[p.kind](v)
                keep.append(c)
                pointers.append(ctypes.cast(ctypes.pointer(c), ctypes.c_void_p))
        argv = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        launch_library(self.lib, argv, dims + (1,) * (3 - len(dims)), self.kernel.name)
        for index, array, back in bound.host:  # a contiguous copy of a view goes back into the caller's array
            if back and array is not args[index]:
                np.copyto(args[index], array)
        self.backend.launches += 1
        return self.result
