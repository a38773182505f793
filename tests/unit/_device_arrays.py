"""Host memory dressed as a device array, for the CPU tests of the cuda lane (emulated or stubbed launches).

`FakeDeviceArray` exposes only `__cuda_array_interface__` (and torch's `copy_`, which tessera.ops uses to
copy c into a separate out), so tessera treats it as a CUDA array whose address is the numpy buffer's.
"""

from __future__ import annotations

import numpy as np


class FakeDeviceArray:
    """`array`'s memory behind __cuda_array_interface__; offset_bytes shifts the address (misalignment tests),
    typestr overrides the dtype string, strides (bytes) describe a non-contiguous view."""

    def __init__(self, array: np.ndarray, offset_bytes: int = 0, typestr: str | None = None, strides=None):
        self.array = array
        self.__cuda_array_interface__ = {"shape": array.shape, "typestr": typestr or array.dtype.str,
                                         "data": (array.ctypes.data + offset_bytes, False), "version": 3,
                                         "strides": strides}

    def copy_(self, other: "FakeDeviceArray") -> None:
        np.copyto(self.array, other.array)


def randn(shape, dtype, seed=0, scale=1.0) -> np.ndarray:
    """Seeded standard-normal values (times `scale`) in `dtype`: never zeros."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)
