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


@lru_cache(maxsize=None)
def cuda_device(index: int = 0):
    """The cuda.core Device `index`, its primary context made current on first use."""
    require_gpu(index)
    from cuda.core import Device
    dev = Device(index)
    dev.set_current()
    return dev


def ensure_current(index: int = 0):
    """Make device `index` current on the calling thread (contexts are per thread) and return it."""
    dev = cuda_device(index)
    dev.set_current()
    return dev


@lru_cache(maxsize=None)
def device_info(index: int = 0) -> DeviceInfo:
    """Name, compute capability and arch strings of device `index` (RUNTIME_NO_DEVICE if absent)."""
    dev = cuda_device(index)
    major, minor = (int(v) for v in dev.compute_capability)
    from cuda.bindings import driver
    err, total = driver.cuDeviceTotalMem(dev.device_id)
    sm_err, sms = driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev.device_id)
    ok = driver.CUresult.CUDA_SUCCESS
    return DeviceInfo(index=index, name=dev.name, compute_capability=(major, minor), arch=f"sm_{major}{minor}",
                      arch_specific=f"sm_{major}{minor}a" if major >= 9 else None,
                      sm_count=int(sms) if sm_err == ok else 0, total_memory=int(total) if err == ok else 0)


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
