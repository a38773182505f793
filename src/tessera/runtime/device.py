"""Which CUDA device is there, what it can run, and its memory - found lazily.

Nothing here touches the driver at import time, so `import tessera.runtime`
works on CI machines with no driver; `has_gpu()` answers False there instead
of raising. The first real use makes device `index`'s primary context current
(the one torch and cupy use too, so their pointers are valid for our kernels).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tessera.target.nvidia.toolchain.nvrtc import parse_arch
from tessera.ir.diagnostics import RUNTIME_NO_DEVICE
from tessera.runtime.errors import RuntimeLaunchError, driver_error_name


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    compute_capability: tuple[int, int]
    arch: str                   # 'sm_90': what a portable cubin for this device targets
    arch_specific: str | None   # 'sm_90a' on CC 9.0 (wgmma, setmaxnreg), None where no such variant exists
    sm_count: int
    total_memory: int


@lru_cache(maxsize=1)
def _probe() -> tuple[int, str]:
    """(device count, reason there is none); never raises."""
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        return 0, f"cuda.bindings is not installed ({exc})"
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return 0, f"cuInit failed with {driver_error_name(err)}"
        err, count = driver.cuDeviceGetCount()
    except RuntimeError as exc:  # 'Failed to dlopen libcuda.so.1' on machines without a driver
        return 0, f"no CUDA driver: {exc}"
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return 0, "the CUDA driver reports no device"
    return int(count), ""


def has_gpu() -> bool:
    """True when a CUDA driver and at least one device are present."""
    return _probe()[0] > 0


def device_count() -> int:
    return _probe()[0]


def why_no_gpu() -> str:
    """Why `has_gpu()` is False ('' when it is True)."""
    return _probe()[1]


def require_gpu(index: int = 0) -> None:
    count, why = _probe()
    if index >= count or index < 0:
        raise RuntimeLaunchError(RUNTIME_NO_DEVICE, why or f"device {index} does not exist ({count} device(s))")


def _checked(driver, what: str, index: int, result):
    """The values of a driver call's result tuple, or RUNTIME_NO_DEVICE naming the call."""
    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeLaunchError(RUNTIME_NO_DEVICE, f"{what} failed for device {index}: {driver_error_name(err)}")
    return values[0] if len(values) == 1 else values


@lru_cache(maxsize=None)
def primary_context(index: int = 0):
    """Device `index`'s primary context (the one torch and cupy use), retained once (RUNTIME_NO_DEVICE if
    absent). Through the driver, not cuda.core: its import cost a warm process 60-140 ms."""
    require_gpu(index)
    from cuda.bindings import driver
    dev = _checked(driver, "cuDeviceGet", index, driver.cuDeviceGet(index))
    return _checked(driver, "cuDevicePrimaryCtxRetain", index, driver.cuDevicePrimaryCtxRetain(dev))


def ensure_current(index: int = 0):
    """Make device `index`'s primary context current on the calling thread (contexts are per thread); return it."""
    ctx = primary_context(index)
    from cuda.bindings import driver
    current = _checked(driver, "cuCtxGetCurrent", index, driver.cuCtxGetCurrent())
    if int(current) != int(ctx):
        _checked(driver, "cuCtxSetCurrent", index, driver.cuCtxSetCurrent(ctx))
    return ctx


@lru_cache(maxsize=None)
def device_info(index: int = 0) -> DeviceInfo:
    """Name, compute capability and arch strings of device `index` (RUNTIME_NO_DEVICE if absent)."""
    ensure_current(index)
    from cuda.bindings import driver
    dev = _checked(driver, "cuDeviceGet", index, driver.cuDeviceGet(index))
    attr = driver.CUdevice_attribute
    major, minor, sms = (int(_checked(driver, "cuDeviceGetAttribute", index, driver.cuDeviceGetAttribute(a, dev)))
                         for a in (attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                   attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                   attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT))
    name = _checked(driver, "cuDeviceGetName", index, driver.cuDeviceGetName(256, dev))
    total = _checked(driver, "cuDeviceTotalMem", index, driver.cuDeviceTotalMem(dev))
    return DeviceInfo(index=index, name=bytes(name).split(b"\0", 1)[0].decode(errors="replace"),
                      compute_capability=(major, minor), arch=f"sm_{major}{minor}",
                      arch_specific=f"sm_{major}{minor}a" if major >= 9 else None, sm_count=sms,
                      total_memory=int(total))


def can_run(arch: str, compute_capability: tuple[int, int]) -> bool:
    """Whether a cubin built for `arch` runs on a device of `compute_capability`.

    SASS is compatible only within one major version, upward in minor:
    sm_80 runs on 8.6 but not on 9.0; 'a' variants (sm_90a) run on exactly
    their own CC; 'f' (family) variants on the same major at >= minor.
    """
    major, minor, suffix = parse_arch(arch)
    dev_major, dev_minor = compute_capability
    if suffix == "a":
        return (major, minor) == (dev_major, dev_minor)
    return major == dev_major and dev_minor >= minor


def mem_info(index: int = 0) -> tuple[int, int]:
    """(free, total) bytes of device memory, as the driver reports them."""
    ensure_current(index)
    from cuda.bindings import driver
    err, free, total = driver.cuMemGetInfo()
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeLaunchError(RUNTIME_NO_DEVICE, f"cuMemGetInfo failed with {driver_error_name(err)}")
    return int(free), int(total)
