"""GEMM with a fused epilogue, as a tile program: C = act(alpha*A@B + beta*C + bias) + residual.

Run-time arguments, in order (see `gemm.params`):
  A         [M, K] row-major, or [K, M] when TRANS_A (a column-major MxK A)
  B         [K, N] row-major, or [N, K] when TRANS_B
  C         [M, N] output (and input when beta is given); its dtype is the output dtype
  bias      [1, N] per-column bias (a row vector: tiles cannot gain a rank), or None
  residual  [M, N] added after the activation, or None
  alpha     f32 scalar
  beta      f32 scalar, or None: None means C is never read (NaN in C cannot leak)
Meta-parameters: BM, BN, BK (tile sizes), TRANS_A, TRANS_B, ACTIVATION in
{"none", "relu", "gelu", "silu"}; gelu is the exact erf form
0.5*x*(1 + erf(x/sqrt(2))) (PyTorch's default), not the tanh approximation.
The backward of a fused activation is one more kind: "relu_grad", "gelu_grad" or
"silu_grad" give C = residual * act'(alpha*A@B + beta*C + bias), residual being the
upstream gradient dY (required): the pre-activation never leaves the registers.

Inputs are bf16, f16 or f32 (A and B alike); products accumulate in f32 and the
epilogue runs in f32. Any M, N, K: loads past an edge read 0 (which adds
nothing to the dot) and stores past an edge are dropped. Grid: `grid(M, N, **meta)`.
"""

from __future__ import annotations

import math

import numpy as np

from tessera.dsl import KernelError, kernel, tl
from tessera.ir import diagnostics as D

from tessera.kernels.epilogues import ACTIVATIONS, GRADS  # noqa: E402
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@kernel
def gemm(A, B, C, bias, residual, alpha, beta, *, BM=128, BN=128, BK=32, TRANS_A=False, TRANS_B=False,
         ACTIVATION="none", BIAS_AXIS="n"):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    K = A.shape[0] if TRANS_A else A.shape[1]
    acc = tl.zeros((BM, BN), tl.f32)                                  # frag acc: BM x BN, f32
    for k in tl.range(0, K, BK):
        if TRANS_A:
            a = tl.load(A, [k, m0], (BK, BM)).T                         # gA: BK x BM -> BM x BK
        else:
            a = tl.load(A, [m0, k], (BM, BK))                           # gA: BM x BK
        if TRANS_B:
            b = tl.load(B, [n0, k], (BN, BK)).T                         # gB: BN x BK -> BK x BN
        else:
            b = tl.load(B, [k, n0], (BK, BN))                           # gB: BK x BN
        acc = tl.dot(a, b, acc)
    epilogue(acc, C, bias, residual, alpha, beta, m0, n0, BM, BN, ACTIVATION, BIAS_AXIS)


def epilogue(acc, C, bias, residual, alpha, beta, m0, n0, BM, BN, ACTIVATION, BIAS_AXIS="n"):
    """C[m0:, n0:] = act(alpha*acc + beta*C + bias) + residual for an f32 BM x BN tile; traced where called.

    BIAS_AXIS "n": bias is a [1, N] row added to every row. "m": bias is indexed by row, passed as an [M, N]
    array whose column stride is 0 (a decode GEMM run swapped, C^T = B^T A^T, has nn.Linear's bias along its
    rows); it is read as a tile, so any epilogue that reads tiles takes it."""
    if BIAS_AXIS not in ("n", "m"):
        raise KernelError(D.DSL_META_INVALID, f"BIAS_AXIS={BIAS_AXIS!r} is not 'n' (a [1, N] row) or 'm' (per row, "
                                              "an [M, N] view of column stride 0)")
    acc = acc * alpha
    if beta is not None:
        acc = acc + tl.load(C, [m0, n0], (BM, BN)).to(tl.f32) * beta   # gC: BM x BN
    if bias is not None and BIAS_AXIS == "m":
        acc = acc + tl.load(bias, [m0, n0], (BM, BN)).to(tl.f32)       # gbias: M x N of stride (1, 0)
    elif bias is not None:
        acc = acc + tl.load(bias, [0, n0], (1, BN)).to(tl.f32)         # gbias: 1 x BN, broadcast over rows
    if ACTIVATION in GRADS:  # dZ = dY * act'(Z), dY in the residual slot
        if residual is None:
            raise KernelError(D.DSL_META_INVALID, f"ACTIVATION={ACTIVATION!r} multiplies the upstream gradient, "
                                                  "passed as residual; residual is None")
        acc = activation_grad(acc, ACTIVATION) * tl.load(residual, [m0, n0], (BM, BN)).to(tl.f32)
    else:
        acc = activation(acc, ACTIVATION)
        if residual is not None:
            acc = acc + tl.load(residual, [m0, n0], (BM, BN)).to(tl.f32)   # gR: BM x BN
    tl.store(C, [m0, n0], acc.to(C.dtype))


def activation(x, kind: str):
    """The epilogue activation on an f32 tile; a plain helper, traced where the kernel calls it."""
    if kind == "relu":
        return tl.maximum(x, 0.0)
    if kind == "gelu":
        return x * (1.0 + tl.erf(x * _SQRT1_2)) * 0.5
    if kind == "silu":
        return x / (1.0 + tl.exp(-x))
    if kind != "none":
        raise KernelError(D.DSL_META_INVALID, f"ACTIVATION={kind!r} is not one of "
                                              f"{', '.join(ACTIVATIONS + GRADS)}")
    return x


def activation_grad(z, kind: str):
    """act'(z) on an f32 tile for kind in GRADS (torch's formulas: relu' is 1 where z > 0, gelu' the erf form's
    cdf + z * pdf, silu' s * (1 + z * (1 - s)) with s = sigmoid(z))."""
    if kind == "relu_grad":
        return tl.where(z > 0.0, 1.0, 0.0)
    if kind == "gelu_grad":
        return (1.0 + tl.erf(z * _SQRT1_2)) * 0.5 + z * tl.exp(z * z * -0.5) * _INV_SQRT_2PI
    s = 1.0 / (1.0 + tl.exp(-z))
    return s * (1.0 + z * (1.0 - s))


def grid(M: int, N: int, BM: int = 128, BN: int = 128, **_meta) -> tuple[int, int]:
    """Launch grid: one program per BM x BN tile of C."""
    return (tl.cdiv(M, BM), tl.cdiv(N, BN))


def reference_gemm(A, B, C=None, bias=None, residual=None, alpha=1.0, beta=None, *, trans_a=False,
                   trans_b=False, activation="none") -> np.ndarray:
    """The float64 oracle `tessera.reference.oracles.gemm_ref`, called with this kernel's conventions.

    Arguments follow the kernel's run-time order (A, B as stored: transposed
    layouts when trans_*); beta=None means C is not read; bias may be the
    kernel's [1, N] row; activation is the ACTIVATION meta-parameter.
    """
    if activation not in ACTIVATIONS + GRADS:
        raise ValueError(f"activation={activation!r} is not one of {ACTIVATIONS + GRADS}")
    from tessera.reference.oracles import gemm_ref  # on first use, not at import (issue 14)

    if activation in GRADS:  # residual * act'(z), z without the residual
        z = reference_gemm(A, B, C, bias, None, alpha, beta, trans_a=trans_a, trans_b=trans_b)
        return np.asarray(residual, np.float64) * _grad_f64(z, activation)

    return gemm_ref(A, B, None if beta is None else C, alpha, 0.0 if beta is None else beta,
                    None if bias is None else np.reshape(bias, -1), None if activation == "none" else activation,
                    residual, trans_a=trans_a, trans_b=trans_b)


def _grad_f64(z: np.ndarray, kind: str) -> np.ndarray:
    """act'(z) in float64 (the oracle of activation_grad)."""
    if kind == "relu_grad":
        return (z > 0).astype(np.float64)
    if kind == "gelu_grad":
        from tessera.reference.numerics import erf

        return 0.5 * (1.0 + erf(z * _SQRT1_2)) + z * np.exp(-0.5 * z * z) * _INV_SQRT_2PI
    s = 1.0 / (1.0 + np.exp(-z))
    return s * (1.0 + z * (1.0 - s))
