"""CompiledKernel.launch end to end on the CPU: the g++ host emulator stands in for the GPU.

`testing.emulate_on_host()` runs the emitted CUDA C++ with the parameter
values the driver would get (pointers, sizes, strides, scalars, grid,
block, shared memory), so the derived launch signature and the argument
packing are checked against float64 oracles without a device. The results
say lane 'host-emulator', never 'cuda'.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

import tessera
from tessera.compiler import compile, testing
from tessera.ir.diagnostics import TesseraError
from tessera.kernels import gemm as G
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime import CompileCache
from _device_arrays import FakeDeviceArray

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the host emulator needs g++ (C++20)")
T = tessera.tensor
BF16 = ml_dtypes.bfloat16


@pytest.fixture(scope="module")
def pipelined_gemm(tmp_path_factory):
    """C = A @ B + beta*C with f16 inputs, f32 C, 64 x 64 tiles and a 3-stage cp.async pipeline."""
    specs = (T(("M", "K"), "f16"), T(("K", "N"), "f16"), T(("M", "N"), "f32"), None, None, tessera.scalar("f32"),
             tessera.scalar("f32"))
    cache = CompileCache(tmp_path_factory.getbasetemp() / "tessera-compile-cache")
    return compile(G.gemm.trace(*specs, BM=64, BN=64), "sm_90", stages=3, cache=cache)


def operands(M=100, N=70, K=200, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16),
            rng.standard_normal((M, N)).astype(np.float32))


@pytest.mark.parametrize("kind", ["numpy", "device"])
def test_launch_packs_the_abi_and_threads_the_accumulator(pipelined_gemm, kind):
    ck = pipelined_gemm
    A, B, C0 = operands()
    C = C0.copy()
    want = G.reference_gemm(A, B, C0, alpha=0.5, beta=1.0)
    wrap = FakeDeviceArray if kind == "device" else (lambda x: x)
    with testing.emulate_on_host() as host:
        res = ck.launch(G.grid(100, 70, BM=64, BN=64), [wrap(A), wrap(B), wrap(C), 0.5, 1.0])
    assert host.launches == 1
    assert (res.lane, res.artifact_hash, res.kernel, res.arch) == ("host-emulator", ck.artifact_hash, "gemm", "sm_90")
    assert rel_error(C, want) <= error_bound("f16")
    # K = 200 is 7 steps of BK = 32 through a 3-stage pipeline, and C starts non-zero: a lowering that
    # kept only the last K step, or dropped C, is far off.
    assert rel_error(C, G.reference_gemm(A[:, -8:], B[-8:], C0, alpha=0.5, beta=1.0)) > 0.1


def test_launch_without_the_hook_needs_a_device(pipelined_gemm):
    from tessera.runtime import has_gpu
    if has_gpu():
        pytest.skip("a device is present")
    A, B, C = operands()
    with pytest.raises(TesseraError) as err:
        pipelined_gemm.launch((2, 2), [A, B, C, 1.0, 1.0])
    assert err.value.code.name == "RUNTIME_NO_DEVICE"


def test_a_corrupted_cubin_is_never_loaded(pipelined_gemm):
    ck = pipelined_gemm
    flipped = bytearray(ck.cubin)
    flipped[len(flipped) // 2] ^= 0xFF
    damaged = ck.with_artifact(replace(ck.artifact, cubin=bytes(flipped)))
    A, B, C = operands()
    before = C.copy()
    with testing.emulate_on_host(), pytest.raises(TesseraError) as err:
        damaged.launch((2, 2), [A, B, C, 1.0, 1.0])
    assert err.value.code.name == "RUNTIME_LOAD_FAILED" and "sha256" in err.value.message
    np.testing.assert_array_equal(C, before)
    forged = replace(damaged.artifact, sha256=hashlib.sha256(damaged.cubin).hexdigest())
    assert forged.verify()  # the emulator cannot judge ELF contents: the GPU test shows the driver refusing


def test_a_cubin_for_another_arch_is_refused(tmp_path):
    specs = (T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "f32"), None, None, tessera.scalar("f32"),
             None)
    ck = compile(G.gemm.trace(*specs, BM=64, BN=64), "sm_80", cache=CompileCache(tmp_path))
    A = np.zeros((8, 8), BF16)
    with testing.emulate_on_host("sm_90"), pytest.raises(TesseraError) as err:
        ck.launch((1, 1), [A, A, np.zeros((8, 8), np.float32), 1.0])
    assert err.value.code.name == "RUNTIME_LOAD_FAILED" and "sm_80" in err.value.message
