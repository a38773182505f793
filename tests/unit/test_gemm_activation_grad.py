"""The backward of a fused GEMM activation as one GEMM (issue 17 item 1: "the activation's derivative fused where
the forward fused it"): ACTIVATION='<act>_grad' makes the epilogue compute dY * act'(alpha*A@B + bias) with dY in
the residual slot, so the pre-activation never reaches memory.

Checked for relu, gelu and silu: the reference interpreter against float64 (torch's derivative formulas), the
sm_90a kernel (its wgmma epilogue now takes compares and selects, which relu' needs) on the host emulator,
NVRTC for sm_90 and sm_90a without local memory; tl.where with two numbers takes the mask's shape.
"""

from __future__ import annotations

import numpy as np
import pytest

import tessera
from tessera import tl
from tessera.compiler.driver import default_pipeline, lower
from tessera.dsl.specs import ScalarSpec
from tessera.kernels import gemm as G
from tessera.reference import run as run_reference
from tessera.runtime.host_emulator import run_on_host
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import resource_usage

T = tessera.tensor
GRADS = ("relu_grad", "gelu_grad", "silu_grad")


def _traced(kind, BM=128, BN=128, BK=64):
    specs = (T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("M", "N"), "f16"), T((1, "N"), "f32"),
             T(("M", "N"), "f16"), ScalarSpec(tl.f32), None)
    return G.gemm.trace(*specs, BM=BM, BN=BN, BK=BK, TRANS_B=True, ACTIVATION=kind)


def _inputs(M, N, K, seed):
    rng = np.random.default_rng(seed)
    a, w = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((N, K)).astype(np.float16)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    dy = rng.standard_normal((M, N)).astype(np.float16)
    return a, w, bias, dy


def _want(a, w, bias, dy, alpha, kind):
    return G.reference_gemm(a, w, None, bias, dy, alpha, trans_b=True, activation=kind)


def _torch_formula(z, kind):
    """The derivatives as torch writes them, in float64 (the oracle's oracle)."""
    from tessera.reference.numerics import erf

    if kind == "relu_grad":
        return (z > 0).astype(np.float64)
    if kind == "gelu_grad":
        return 0.5 * (1 + erf(z / np.sqrt(2))) + z * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
    s = 1 / (1 + np.exp(-z))
    return s + z * s * (1 - s)


@pytest.mark.parametrize("kind", GRADS)
def test_the_oracle_is_the_derivative_torch_writes(kind):
    """The float64 oracle against a central difference of the forward activation and torch's formulas."""
    from tessera.reference.numerics import erf

    forward = {"relu_grad": lambda x: np.maximum(x, 0.0), "silu_grad": lambda x: x / (1 + np.exp(-x)),
               "gelu_grad": lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2)))}[kind]
    z, h = np.linspace(-6, 6, 1001), 1e-6
    numeric = (forward(z + h) - forward(z - h)) / (2 * h)
    away = np.abs(z) > 1e-3  # relu's kink
    assert np.abs(G._grad_f64(z, kind) - numeric)[away].max() < 1e-6
    assert np.abs(G._grad_f64(z, kind) - _torch_formula(z, kind)).max() < 1e-12


@pytest.mark.parametrize("kind", GRADS)
def test_reference_numerics(kind):
    M, N, K = 70, 90, 64
    a, w, bias, dy = _inputs(M, N, K, 7)
    out = np.full((M, N), np.nan, np.float16)
    run_reference(_traced(kind, 32, 32, 32), G.grid(M, N, BM=32, BN=32), [a, w, out, bias, dy, 0.5])
    want = _want(a, w, bias, dy, 0.5, kind)
    assert np.abs(out.astype(np.float64) - want).max() <= 2e-2 * np.abs(want).max()


@pytest.mark.parametrize("kind", GRADS)
def test_sm90a_wgmma_epilogue_on_the_host_emulator(kind):
    M, N, K = 200, 136, 128
    a, w, bias, dy = _inputs(M, N, K, 8)
    out = np.full((M, N), np.nan, np.float16)
    module, _ = lower(_traced(kind), default_pipeline("sm_90a", stages=3), "sm_90a")
    if kind == "relu_grad":
        assert any(op.name == "nv.select" for op in module.walk())
    run_on_host(emit_cuda(module), [a, w, out, bias, dy, 0.5], G.grid(M, N, BM=128, BN=128))
    want = _want(a, w, bias, dy, 0.5, kind)
    assert np.abs(out.astype(np.float64) - want).max() <= 2e-2 * np.abs(want).max()


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
@pytest.mark.parametrize("kind", GRADS)
def test_compiles_without_local_memory(kind, arch):
    usage = next(iter(resource_usage(tessera.compile(_traced(kind), arch, stages=3).cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0


@tessera.kernel
def step(X, Y, *, BN=64):
    x = tl.load(X, [0], (BN,))
    tl.store(Y, [0], tl.where(x > 0.0, 1.0, 0.0))


def test_where_of_two_numbers_takes_the_masks_shape():
    x = np.random.default_rng(9).standard_normal(64).astype(np.float32)
    y = np.full(64, np.nan, np.float32)
    run_reference(step.trace(T((64,), "f32"), T((64,), "f32")), (1,), [x, y])
    np.testing.assert_array_equal(y, (x > 0).astype(np.float32))
