"""The float64 oracles against naive loops on tiny sizes, and the error measure itself."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tessera.reference import REL_ERROR_BOUNDS, attention_ref, gemm_ref, linear_attention_ref, rel_error
from tessera.reference.oracles import error_bound


def naive_gemm(a, b, c, alpha, beta, bias, act, residual):
    M, K = a.shape
    N = b.shape[1]
    out = np.zeros((M, N))
    for i in range(M):
        for j in range(N):
            s = sum(float(a[i, k]) * float(b[k, j]) for k in range(K))
            v = alpha * s
            v += beta * float(c[i, j]) if c is not None else 0.0
            v += float(bias[j]) if bias is not None else 0.0
            out[i, j] = act(v) + (float(residual[i, j]) if residual is not None else 0.0)
    return out


ACTS = {None: lambda v: v, "relu": lambda v: max(v, 0.0), "gelu": lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))),
        "gelu_tanh": lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))),
        "silu": lambda v: v / (1 + math.exp(-v)), "sigmoid": lambda v: 1 / (1 + math.exp(-v)), "tanh": math.tanh}


@pytest.mark.parametrize("activation", list(ACTS))
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_ref_matches_loops(activation, trans_a, trans_b):
    rng = np.random.default_rng()
    M, N, K = 3, 4, 5
    a, b = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    c, bias, res = rng.standard_normal((M, N)), rng.standard_normal(N), rng.standard_normal((M, N))
    alpha, beta = rng.uniform(0.5, 2), rng.uniform(0.5, 2)
    got = gemm_ref(a.T if trans_a else a, b.T if trans_b else b, c, alpha, beta, bias, activation, res,
                   trans_a=trans_a, trans_b=trans_b)
    want = naive_gemm(a, b, c, alpha, beta, bias, ACTS[activation], res)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_gemm_ref_plain_and_bf16_inputs():
    rng = np.random.default_rng()
    a = rng.standard_normal((4, 6)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((6, 5)).astype(ml_dtypes.bfloat16)
    got = gemm_ref(a, b)
    assert got.dtype == np.float64
    want = naive_gemm(a.astype(np.float64), b.astype(np.float64), None, 1.0, 0.0, None, ACTS[None], None)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="inner dims"):
        gemm_ref(a, a)


def naive_attention(q, k, v, causal, scale):
    B, H, S, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    o = np.zeros((B, H, S, v.shape[-1]))
    lse = np.zeros((B, H, S))
    for bb in range(B):
        for h in range(H):
            kv = h // (H // Hkv)
            for i in range(S):
                keys = [j for j in range(Sk) if not causal or j <= i]
                s = [scale * sum(q[bb, h, i, d] * k[bb, kv, j, d] for d in range(D)) for j in keys]
                m = max(s)
                w = [math.exp(x - m) for x in s]
                z = sum(w)
                lse[bb, h, i] = m + math.log(z)
                for j, wj in zip(keys, w):
                    o[bb, h, i] += wj / z * v[bb, kv, j]
    return o, lse


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("H,Hkv", [(2, 2), (4, 2), (4, 1)])
def test_attention_ref_matches_loops_with_gqa(causal, H, Hkv):
    rng = np.random.default_rng()
    B, S, D = 2, 5, 3
    q = rng.standard_normal((B, H, S, D))
    k = rng.standard_normal((B, Hkv, S, D))
    v = rng.standard_normal((B, Hkv, S, 4))
    scale = None if H == Hkv else 0.7
    o, lse = attention_ref(q, k, v, causal, scale)
    want_o, want_lse = naive_attention(q, k, v, causal, 1 / math.sqrt(D) if scale is None else scale)
    np.testing.assert_allclose(o, want_o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12, atol=1e-12)
    if causal:  # query 0 sees only key 0, so its output is exactly v[key 0] of its kv head
        np.testing.assert_allclose(o[:, :, 0], np.repeat(v, H // Hkv, axis=1)[:, :, 0], rtol=1e-12)


def test_attention_ref_rejects_heads_that_do_not_divide():
    x = np.ones((1, 3, 2, 2))
    with pytest.raises(ValueError, match="Hkv dividing H"):
        attention_ref(x, np.ones((1, 2, 2, 2)), np.ones((1, 2, 2, 2)), False)


@pytest.mark.parametrize("with_g", [False, True])
def test_linear_attention_ref_matches_loops(with_g):
    rng = np.random.default_rng()
    B, H, T, D, Dv = 2, 3, 6, 4, 5
    q, k, v = rng.standard_normal((B, H, T, D)), rng.standard_normal((B, H, T, D)), rng.standard_normal((B, H, T, Dv))
    g = -rng.uniform(0.05, 1.0, size=H) if with_g else None
    got = linear_attention_ref(q, k, v, g)
    want = np.zeros((B, H, T, Dv))
    for bb in range(B):
        for h in range(H):
            for t in range(T):
                for s in range(t + 1):
                    decay = math.exp(g[h] * (t - s)) if with_g else 1.0
                    want[bb, h, t] += decay * float(q[bb, h, t] @ k[bb, h, s]) * v[bb, h, s]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_rel_error_and_bounds():
    rng = np.random.default_rng()
    want = rng.standard_normal((7, 9))
    noise = rng.standard_normal((7, 9))
    got = want + 1e-3 * noise
    assert math.isclose(rel_error(got, want), 1e-3 * np.linalg.norm(noise) / np.linalg.norm(want), rel_tol=1e-9)
    assert rel_error(want, want) == 0.0
    assert rel_error(np.full((2, 2), np.nan), np.ones((2, 2))) == math.inf
    assert rel_error(np.ones(3) * 1e-300, np.zeros(3)) > 0  # no division by zero for an all-zero reference
    with pytest.raises(ValueError, match="shapes differ"):
        rel_error(np.ones(3), np.ones(4))
    assert REL_ERROR_BOUNDS["f32"] == 1e-5 and REL_ERROR_BOUNDS["f16"] == 5e-3 and REL_ERROR_BOUNDS["bf16"] == 1e-2
    assert error_bound(np.float32) == 1e-5 and error_bound(ml_dtypes.bfloat16) == 1e-2 and error_bound("f16") == 5e-3
    with pytest.raises(ValueError, match="no error bound"):
        error_bound(np.int32)


def test_bf16_rounding_of_a_gemm_sits_inside_the_bf16_bound_and_outside_f32():
    """The bounds are tight enough to matter: bf16-rounded outputs pass bf16 but fail f32."""
    rng = np.random.default_rng()
    a, b = rng.standard_normal((32, 64)), rng.standard_normal((64, 48))
    want = gemm_ref(a, b)
    rounded = want.astype(np.float32).astype(ml_dtypes.bfloat16)
    assert error_bound("f32") < rel_error(rounded, want) <= error_bound("bf16")
