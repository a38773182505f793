"""kernel[grid](...) on the GPU (issue 17, item 2): torch CUDA tensors in place, numpy copied, one compile per key."""

from __future__ import annotations

import numpy as np
import pytest

import tessera
from tessera import tl
from tessera.compiler import driver

torch = pytest.importorskip("torch")


@tessera.kernel
def add(X, Y, Z, *, BLOCK=1024):
    i = tl.program_id(0) * BLOCK
    tl.store(Z, [i], tl.load(X, [i], (BLOCK,)) + tl.load(Y, [i], (BLOCK,)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_vector_add_on_torch_cuda_tensors(dtype):
    for n in (1, 1000, 98_432 + 17):
        x, y = (torch.randn(n, device="cuda").to(dtype) for _ in range(2))
        z = torch.empty_like(x)
        result = add[lambda meta: (tessera.cdiv(n, meta["BLOCK"]),)](x, y, z)
        torch.cuda.synchronize()
        assert result.lane == "cuda" and len(result.artifact_hash) == 64
        assert torch.equal(z, (x.float() + y.float()).to(dtype))


def test_numpy_arrays_are_copied_in_and_out_and_the_call_waits():
    rng = np.random.default_rng()
    x, y = rng.standard_normal(5000).astype(np.float32), rng.standard_normal(5000).astype(np.float32)
    z = np.zeros_like(x)
    result = add[(tessera.cdiv(5000, 512),)](x, y, z, BLOCK=512)
    assert result.synchronized
    np.testing.assert_array_equal(z, x + y)


def test_sizes_share_one_compile():
    before = len(driver._memo)
    for n in (4096, 5000, 77_777):
        x = torch.randn(n, device="cuda")
        add[(tessera.cdiv(n, 256),)](x, x, torch.empty_like(x), BLOCK=256)
    assert len(driver._memo) - before <= 1
