"""Float64 numpy oracles for the shipped kernels, and the error bounds every numeric test uses.

The oracles are written the obvious way (no tiling, no online softmax, no
chunking) so they are easy to check against the math; tests compare them to
naive loops on tiny sizes. Inputs of any float dtype (bf16 included) are
widened to float64 first, so an oracle sees exactly the values a kernel sees.
A kernel's output passes when `rel_error(out, oracle) <= error_bound(dtype)`
for its input dtype.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tessera.reference.numerics import erf
from tessera.reference.values import BF16

# Relative Frobenius error allowed for a kernel whose inputs have this dtype.
REL_ERROR_BOUNDS: dict[str, float] = {"f64": 1e-12, "f32": 1e-5, "f16": 5e-3, "bf16": 1e-2}
_DTYPE_NAMES = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", BF16: "bf16"}


def error_bound(dtype) -> float:
    """The relative-error bound for inputs of `dtype` (a numpy dtype or a name: 'bf16', 'f16', 'f32', 'f64')."""
    name = dtype if isinstance(dtype, str) else _DTYPE_NAMES.get(np.dtype(dtype))
    if name not in REL_ERROR_BOUNDS:
        raise ValueError(f"no error bound for dtype {dtype!r}; known: {', '.join(REL_ERROR_BOUNDS)}")
    return REL_ERROR_BOUNDS[name]


def rel_error(got, want) -> float:
    """||got - want||_F / max(||want||_F, tiny), in float64; inf when the difference is not finite."""
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    if g.shape != w.shape:
        raise ValueError(f"rel_error: shapes differ: got {g.shape}, want {w.shape}")
    err = _fro(g - w) / max(_fro(w), np.finfo(np.float64).tiny)
    return err if np.isfinite(err) else float("inf")


def _fro(x: np.ndarray) -> float:
    """Frobenius norm, scaled so that tiny or huge entries neither underflow nor overflow."""
    if x.size == 0:
        return 0.0
    m = float(np.max(np.abs(x)))
    if m == 0.0 or not np.isfinite(m):
        return m
    return m * float(np.sqrt(np.sum(np.square(x / m))))


def _f64(x) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def _gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
}


def gemm_ref(a, b, c=None, alpha=1.0, beta=0.0, bias=None, activation=None, residual=None,
             trans_a: bool = False, trans_b: bool = False) -> np.ndarray:
    """D = act(alpha * op(a) @ op(b) + beta * c + bias) + residual, in float64.

    a: [..., M, K] (or [..., K, M] with trans_a); b: [..., K, N] (or [..., N, K]
    with trans_b); leading batch dims broadcast. c, residual: [..., M, N].
    bias: [N], added to every row. activation: None, a name in ACTIVATIONS
    ('relu', 'gelu' (erf form), 'gelu_tanh', 'silu', 'sigmoid', 'tanh') or a
    callable on float64 arrays. beta multiplies c only when c is given.
    """
    a, b = _f64(a), _f64(b)
    if trans_a:
        a = np.swapaxes(a, -1, -2)
    if trans_b:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"gemm_ref: inner dims differ: a is {a.shape}, b is {b.shape} (after transposes)")
    out = alpha * np.matmul(a, b)
    if c is not None:
        out = out + beta * _f64(c)
    if bias is not None:
        out = out + _f64(bias)
    if activation is not None:
        fn = ACTIVATIONS[activation] if isinstance(activation, str) else activation
        out = fn(out)
    if residual is not None:
        out = out + _f64(residual)
    return out


def attention_ref(q, k, v, causal: bool, scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Softmax attention with GQA: returns (o [B, H, Sq, Dv], lse [B, H, Sq]) in float64.

    q: [B, H, Sq, D]; k: [B, Hkv, Sk, D]; v: [B, Hkv, Sk, Dv], with Hkv dividing
    H: query head h reads kv head h // (H // Hkv). scale defaults to 1/sqrt(D).
    causal masks key j for query i when j > i (aligned to the top-left, so
    query 0 sees key 0). lse is the natural-log log-sum-exp of the scaled,
    masked scores of each query row (what a flash kernel saves for backward).
    """
    q, k, v = _f64(q), _f64(k), _f64(v)
    B, H, Sq, D = q.shape
    Hkv = k.shape[1]
    if H % Hkv != 0 or k.shape[0] != B or v.shape[:3] != k.shape[:3] or k.shape[3] != D:
        raise ValueError(f"attention_ref: incompatible shapes q {q.shape}, k {k.shape}, v {v.shape} "
                         "(need Hkv dividing H, matching batch, Sk and head dim)")
    group = H // Hkv
    k = np.repeat(k, group, axis=1)  # head h -> kv head h // group
    v = np.repeat(v, group, axis=1)
    scale = 1.0 / np.sqrt(D) if scale is None else scale
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    if causal:
        Sk = k.shape[2]
        visible = np.arange(Sk)[None, :] <= np.arange(Sq)[:, None]
        s = np.where(visible, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    denom = p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhqk,bhkd->bhqd", p / denom, v)
    lse = (m + np.log(denom))[..., 0]
    return o, lse


def linear_attention_ref(q, k, v, g=None) -> np.ndarray:
    """Causal linear attention with optional per-head decay, in float64.

    O[b, h, t] = sum_{s <= t} exp(g[h] * (t - s)) * (q[b, h, t] . k[b, h, s]) * v[b, h, s]
    q, k: [B, H, T, D]; v: [B, H, T, Dv]; g: [H] (log decay per step, usually
    <= 0) or None for no decay. Returns [B, H, T, Dv].
    """
    q, k, v = _f64(q), _f64(k), _f64(v)
    B, H, T, _ = q.shape
    t = np.arange(T)
    lag = (t[:, None] - t[None, :]).astype(np.float64)  # t - s
    rate = np.zeros(H) if g is None else _f64(g).reshape(H)
    if rate.shape != (H,):
        raise ValueError(f"linear_attention_ref: g must have shape [{H}], got {np.shape(g)}")
    exponent = np.where(lag >= 0, rate[:, None, None] * lag, -np.inf)  # [H, T, T]
    decay = np.exp(exponent)
    scores = np.einsum("bhtd,bhsd->bhts", q, k) * decay[None]
    return np.einsum("bhts,bhsd->bhtd", scores, v)
