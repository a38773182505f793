"""A kernel that never finishes ends a sync=True launch with RUNTIME_LAUNCH_TIMEOUT, and the process stays usable.

The test-only fault is a kernel that spins on a flag in mapped host memory:
it hangs until the test writes the flag, so after the timeout the test can let
it finish and check that the next launches run and compute the right thing.
A kernel that truly never ends cannot be stopped by the driver short of
destroying the context (which frees every allocation in the process), so the
runtime reports the timeout and leaves the kernel running (tessera.runtime.wait).
"""

from __future__ import annotations

import ctypes
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_samples import VECADD  # noqa: E402

from tessera.target.nvidia.toolchain import compile_cuda  # noqa: E402
from tessera.ir import diagnostics as D  # noqa: E402
from tessera.runtime import device_info, load, ptr, scalar  # noqa: E402

SPIN = r'''
extern "C" __global__ void spin(const unsigned* flag, float* out, int n) {
  while (*(volatile const unsigned*)flag == 0u) { }
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * i;
}
'''
SPIN_SIG = (ptr("flag", "u32", 1, "in"), ptr("out", "f32", "n", "out"), scalar("n", "i32"))
VADD_SIG = (ptr("a", "f32", "n", "in"), ptr("b", "f32", "n", "in"), ptr("c", "f32", "n", "out"), scalar("n", "i32"))
BOUND_S = 2


@pytest.fixture
def kernels():
    arch = device_info(0).arch
    return load(compile_cuda(SPIN, arch), "spin", SPIN_SIG), load(compile_cuda(VECADD, arch), "vadd", VADD_SIG)


@pytest.fixture
def flag():
    """A mapped, pinned host word the GPU reads through its device address (0: spin, 1: go)."""
    from cuda.bindings import driver
    err, host = driver.cuMemHostAlloc(4, driver.CU_MEMHOSTALLOC_DEVICEMAP | driver.CU_MEMHOSTALLOC_PORTABLE)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    err, dev = driver.cuMemHostGetDevicePointer(host, 0)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    word = ctypes.c_uint32.from_address(int(host))
    word.value = 0
    yield word, int(dev)
    word.value = 1
    driver.cuCtxSynchronize()
    driver.cuMemFreeHost(host)


def _hang_then_release(spin, word, dev, out, n):
    t0 = time.monotonic()
    with pytest.raises(D.TesseraError) as err:
        spin.launch((n + 255) // 256, 256, 0, (dev, out, n), sync=True)
    waited = time.monotonic() - t0
    assert err.value.code is D.RUNTIME_LAUNCH_TIMEOUT, str(err.value)
    assert BOUND_S <= waited < BOUND_S + 5, waited
    assert "still running" in str(err.value) and "TESSERA_LAUNCH_TIMEOUT_S" in str(err.value)
    word.value = 1  # let it finish
    return waited


def test_a_hanging_kernel_times_out_and_the_next_launches_run(kernels, flag, monkeypatch):
    import torch
    monkeypatch.setenv("TESSERA_LAUNCH_TIMEOUT_S", str(BOUND_S))
    spin, vadd = kernels
    word, dev = flag
    n = 1 << 16
    out = torch.zeros(n, device="cuda")
    _hang_then_release(spin, word, dev, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out.cpu(), 2.0 * torch.arange(n, dtype=torch.float32))  # it did finish, late
    a, b = (np.random.default_rng(s).standard_normal(n).astype(np.float32) for s in (1, 2))
    c = np.full(n, np.nan, np.float32)
    res = vadd.launch((n + 255) // 256, 256, 0, (a, b, c, n), sync=True)
    assert res.synchronized and np.array_equal(c, a + b)
    spin.launch((n + 255) // 256, 256, 0, (dev, out, n), sync=True)  # the flag is set: the same kernel runs


def test_a_hanging_kernel_with_numpy_arrays_keeps_its_staging_buffers_and_times_out(kernels, flag, monkeypatch):
    """The staged path (numpy copied in and out) must not block in its clean-up, nor free memory the kernel
    still writes."""
    import torch
    monkeypatch.setenv("TESSERA_LAUNCH_TIMEOUT_S", str(BOUND_S))
    spin, vadd = kernels
    word, dev = flag
    n = 4096
    out = np.zeros(n, np.float32)
    _hang_then_release(spin, word, dev, out, n)
    torch.cuda.synchronize()
    c = np.zeros(n, np.float32)
    vadd.launch((n + 255) // 256, 256, 0, (out, out, c, n), sync=True)
    assert np.isfinite(c).all()
