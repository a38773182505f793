"""A Triton flash-attention forward, the Triton peer of bench_hopper_attention.py (issue 15 asks for Triton's
fused-attention tutorial kernel beside cuDNN; its source is not in the triton wheel and is not ours to copy, so
this is a kernel written for the benchmark the way a Triton user would: the FlashAttention-2 loop, exp2 with the
scale folded in, causal tiles split into unmasked and diagonal steps, GQA by head mapping, a small autotune).

    o, lse = attention(q, k, v, causal)   # q [B, H, S_q, D], k/v [B, H_kv, S_k, D]; lse natural-log, f32

Causal is top-left aligned (query i sees keys 0..i), as SDPA's is_causal. Checked against float64 on every row
of bench_hopper_attention.py on the GPU; on a CPU with triton and numpy < 2.3 (its interpreter), each config
was checked at f16 against float64 (rel. error 2.4-2.9e-4, LSE 5-7e-7; GQA, ragged, causal, S_q = 1):
TRITON_INTERPRET=1 with `attention(..., config={"BLOCK_M": 128, "BLOCK_N": 64})`.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

LN2 = math.log(2.0)
CONFIGS = [triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
           triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=2),
           triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=4)]


@triton.jit
def _step(acc, m_i, l_i, q, k_ptrs, v_ptrs, start_n, offs_m, offs_n, S_k, stride_ks, stride_vs, scale_log2,
          MASK_CAUSAL: tl.constexpr, MASK_KEYS: tl.constexpr):
    cols = start_n + offs_n
    if MASK_KEYS:
        k = tl.load(k_ptrs + start_n * stride_ks, mask=cols[None, :] < S_k, other=0.0)
    else:
        k = tl.load(k_ptrs + start_n * stride_ks)
    s = tl.dot(q, k) * scale_log2
    if MASK_CAUSAL:
        s = tl.where(offs_m[:, None] >= cols[None, :], s, float("-inf"))
    if MASK_KEYS:
        s = tl.where(cols[None, :] < S_k, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no key yet: exp2(-inf - 0) = 0
    p = tl.math.exp2(s - m_safe[:, None])
    alpha = tl.math.exp2(m_i - m_safe)
    l_i = l_i * alpha + tl.sum(p, 1)
    if MASK_KEYS:
        v = tl.load(v_ptrs + start_n * stride_vs, mask=cols[:, None] < S_k, other=0.0)
    else:
        v = tl.load(v_ptrs + start_n * stride_vs)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
    return acc, m_new, l_i


@triton.autotune(configs=CONFIGS, key=["S_q", "S_k", "D", "CAUSAL"])
@triton.jit
def _attention_fwd(Q, K, V, O, L, scale_log2, S_q, S_k, H, GROUP,
                   sqb, sqh, sqs, skb, skh, sks, svb, svh, svs, sob, soh, sos,
                   D: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m, bh = tl.program_id(0), tl.program_id(1)
    b, h = bh // H, bh % H
    hk = h // GROUP
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqs + offs_d[None, :], mask=offs_m[:, None] < S_q,
                other=0.0)
    k_ptrs = K + b * skb + hk * skh + offs_n[None, :] * sks + offs_d[:, None]  # K^T tile [D, BLOCK_N]
    v_ptrs = V + b * svb + hk * svh + offs_n[:, None] * svs + offs_d[None, :]
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    if CAUSAL:
        hi = tl.minimum(S_k, (pid_m + 1) * BLOCK_M)
        full = (pid_m * BLOCK_M // BLOCK_N) * BLOCK_N  # key blocks wholly at or left of the first row's diagonal
        full = tl.minimum(full, (S_k // BLOCK_N) * BLOCK_N)
    else:
        hi = S_k
        full = (S_k // BLOCK_N) * BLOCK_N
    for start_n in range(0, full, BLOCK_N):
        acc, m_i, l_i = _step(acc, m_i, l_i, q, k_ptrs, v_ptrs, start_n, offs_m, offs_n, S_k, sks, svs, scale_log2,
                              False, False)
    for start_n in range(full, hi, BLOCK_N):
        acc, m_i, l_i = _step(acc, m_i, l_i, q, k_ptrs, v_ptrs, start_n, offs_m, offs_n, S_k, sks, svs, scale_log2,
                              CAUSAL, True)
    acc = acc / l_i[:, None]
    tl.store(O + b * sob + h * soh + offs_m[:, None] * sos + offs_d[None, :], acc.to(O.dtype.element_ty),
             mask=offs_m[:, None] < S_q)
    tl.store(L + (b * H + h) * S_q + offs_m, (m_i + tl.math.log2(l_i)) * 0.6931471805599453, mask=offs_m < S_q)


def attention(q, k, v, causal: bool, scale: float | None = None, config: dict | None = None):
    """(o, lse) of softmax(q k^T * scale) v with GQA (H a multiple of H_kv); torch tensors, last dim contiguous.
    `config` ({"BLOCK_M": .., "BLOCK_N": ..}) skips the autotuner (the interpreter cannot time candidates)."""
    import torch

    B, H, S_q, D = q.shape
    H_kv, S_k = k.shape[1], k.shape[2]
    o = torch.empty_like(q)
    lse = torch.empty((B, H, S_q), device=q.device, dtype=torch.float32)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    grid = lambda meta: (triton.cdiv(S_q, meta["BLOCK_M"]), B * H)  # noqa: E731
    kernel, meta = (_attention_fwd, {}) if config is None else (_attention_fwd.fn, dict(config))
    kernel[grid](q, k, v, o, lse, scale / LN2, S_q, S_k, H, H // H_kv,
                         q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                         v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                         D=D, CAUSAL=causal, **meta)
    return o, lse
