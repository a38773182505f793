"""Scratch memory the runtime owns for a kernel: split-K's (stream-K's) partial blocks and arrival counters.

A kernel with `nv.splitk_fixup` or `nv.streamk_fixup` ops has a `scratch` parameter (emit_cuda's
KernelParam: `dim` bytes per logical tile, `per_cta` per launched CTA). The caller never sees it: the
launch fills in the address of a buffer kept per (kernel, device, stream,
backend), sized for the logical and the launched grid. The buffer starts zeroed (the counters) and each
complete launch leaves the counters at zero again (the last split resets its
tile's), so one buffer serves every launch; it grows, zeroed, when a larger
grid needs more, and a failed launch drops it (counters may be left raised).

Launches on one stream are ordered, so they can share a buffer; launches on
different streams may overlap, so each stream has its own (`stream_key`).

A stream that is capturing a CUDA graph cannot allocate through the driver: its
buffer comes from torch's allocator (the graph's pool, zeroed by a captured
memset that every replay runs first) and lives as long as this Scratch.
"""

from __future__ import annotations

import numpy as np

from tessera.ir.diagnostics import RUNTIME_LAUNCH_FAILED
from tessera.runtime.errors import RuntimeLaunchError


def scratch_bytes(per_tile: int, logical: tuple[int, int, int], per_cta: int = 0,
                  physical: tuple[int, int, int] = (0, 1, 1)) -> int:
    """The scratch a launch needs: `per_tile` bytes per logical tile and `per_cta` per CTA of the `physical` grid
    (stream-K's slots come first, then the per-tile counters)."""
    return per_tile * logical[0] * logical[1] * logical[2] + per_cta * physical[0] * physical[1] * physical[2]


def stream_key(stream) -> int:
    """The raw handle of a launch's stream (None: the default stream, 0), without the driver: an int, a
    `__cuda_stream__` object (cuda.core), torch's `.cuda_stream`, cupy's `.ptr`, or a CUstream."""
    if stream is None:
        return 0
    if type(stream) is int:
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return int((proto() if callable(proto) else proto)[1])
    for attr in ("cuda_stream", "ptr"):
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    try:
        return int(stream)
    except (TypeError, ValueError):
        return 0  # not a stream: the launch itself refuses it (RUNTIME_ARG_INVALID)


class Scratch:
    """Per (device, stream, host-emulated?) one zeroed buffer of at least the bytes asked for (`address`)."""

    def __init__(self, kernel: str):
        self.kernel = kernel
        self._buffers: dict[tuple, tuple[int, int, object]] = {}  # key -> (bytes, address, array or device pointer)
        self._retired: list = []  # device buffers outgrown: a queued launch may still use them, so they are kept
        self.generation = 0  # bumped by `drop`: a launch prepared before it names a buffer whose counters may be raised

    def address(self, device: int, nbytes: int, host: bool, stream: int = 0) -> int:
        key = (device, host, stream)
        have = self._buffers.get(key)
        if have is not None and have[0] >= nbytes:
            return have[1]
        size = max(nbytes, 2 * have[0] if have is not None else 0)
        if host:
            buf = np.zeros(size, np.uint8)
        else:
            buf = (self._captured_zeros(device, size, stream) if stream and _capturing(stream)
                   else self._device_zeros(device, size))
            if have is not None:  # outgrown, also under a capture: a queued launch or a graph may still use it
                self._retired.append(have[2])
        address = buf.ctypes.data if host else buf.data_ptr() if hasattr(buf, "data_ptr") else int(buf)
        self._buffers[key] = (size, address, buf)
        return address

    def drop(self) -> None:
        """Forget every buffer (after a failed launch); device buffers are kept alive, not freed."""
        self._retired += [buf for (_, host, _), (_, _, buf) in self._buffers.items() if not host]
        self._buffers.clear()
        self.generation += 1

    def _captured_zeros(self, device: int, nbytes: int, stream: int):
        """A zeroed torch buffer allocated and cleared on `stream` while it captures a graph."""
        import sys

        torch = sys.modules.get("torch")
        if torch is None:
            raise RuntimeLaunchError(RUNTIME_LAUNCH_FAILED, f"{self.kernel} needs {nbytes} B of runtime scratch and "
                                     "its stream is capturing a CUDA graph, where the driver cannot allocate",
                                     kernel=self.kernel, hint="launch the kernel once on this stream before the "
                                                              "capture (or capture through torch)")
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=device)):
            return torch.zeros(nbytes, dtype=torch.uint8, device=f"cuda:{device}")

    def _device_zeros(self, device: int, nbytes: int):
        from tessera.runtime.device import ensure_current
        from tessera.runtime.launch import _describe, _driver

        driver = _driver()
        ensure_current(device)
        err, dptr = driver.cuMemAlloc(nbytes)
        ok = driver.CUresult.CUDA_SUCCESS
        if err != ok:
            raise RuntimeLaunchError(RUNTIME_LAUNCH_FAILED, f"could not allocate {nbytes} B of split-K scratch: "
                                     f"{_describe(driver, err)}", kernel=self.kernel,
                                     hint="use fewer K splits or a smaller grid")
        (err,) = driver.cuMemsetD8(dptr, 0, nbytes)
        if err != ok:
            raise RuntimeLaunchError(RUNTIME_LAUNCH_FAILED, f"could not zero the split-K scratch: "
                                     f"{_describe(driver, err)}", kernel=self.kernel)
        return dptr


def _capturing(stream: int) -> bool:
    """Whether the stream with raw handle `stream` is capturing a CUDA graph (False where the driver cannot say)."""
    from tessera.runtime.launch import _driver

    driver = _driver()
    try:
        err, status = driver.cuStreamIsCapturing(driver.CUstream(stream))
    except Exception:  # noqa: BLE001 - not a stream the driver knows: the launch itself refuses it
        return False
    return err == driver.CUresult.CUDA_SUCCESS and status != driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
