"""Flash attention forward as a tile program: O = softmax(scale * Q @ K^T + mask) @ V, and its log-sum-exp.

Run-time arguments, in order (see `flash_attention.params`):
  Q    [B, H, S_q, D]       bf16, f16 or f32 (D static: 64 or 128 in the shipped configs)
  K    [B, H_kv, S_k, D]    same dtype; grouped-query attention: head h reads kv head h // (H // H_kv)
  V    [B, H_kv, S_k, D]
  O    [B, H, S_q, D]       output, Q's dtype
  LSE  [B, H, S_q] f32      output: natural-log log-sum-exp of each row's scaled, masked scores
  scale  f32 scalar         (usually 1/sqrt(D))
Meta-parameters: BLOCK_M (query rows per program), BLOCK_N (keys per step), CAUSAL, EVEN_N (the caller
promises S_k % BLOCK_N == 0: the key-bound mask is left out, so a non-causal step masks nothing; ops.attention
sets it from the shapes, as Triton specialises on divisibility), FOLD_SCALE (the caller promises scale > 0:
the row max is taken on the raw scores and scaled per row, so each exp2 argument is one fused multiply-add,
s * scale' - m, instead of a multiply, then a subtract; ops.attention sets it when scale > 0), KV_SPLITS
(split-KV, "flash decoding": program_id(0) also counts KV_SPLITS slices of the keys; each program writes its
slice's normalised O and LSE as partials into O [B, H * KV_SPLITS, S_q, D] (f32) and LSE [B, H * KV_SPLITS, S_q],
head h's slice j at head index h * KV_SPLITS + j, for `attention_combine` to merge; non-causal only. With few
query rows (decode) the (batch, head) programs alone leave SMs idle).

Causal masking is top-left aligned, as torch SDPA's is_causal: query i sees keys
j <= i. Causal programs take their query blocks last first (program 0 the block
with the most keys), so a launch's last tiles are its shortest. Keys j >= S_k are masked with -inf; padded query rows are dropped on
store. The online softmax works in base 2: scores are multiplied by
scale*log2(e) so exp2 replaces exp, and LSE = m_i*ln(2) + log(l_i) converts back.
A row whose keys are all masked gets O = 0 and LSE = -inf, never NaN.
Grid: `grid(B, H, S_q, **meta)` = (cdiv(S_q, BLOCK_M), B*H).
"""

from __future__ import annotations

import numpy as np

from tessera.dsl import KernelError, kernel, tl
from tessera.ir import diagnostics as diag

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
NEG_INF = float("-inf")


@kernel(static_dims={"Q": 3, "K": 3, "V": 3, "O": 3})  # D is a tile dim: static in a one-line launch
def flash_attention(Q, K, V, O, LSE, scale, *, BLOCK_M=64, BLOCK_N=64, CAUSAL=False, EVEN_N=False,
                    FOLD_SCALE=False, KV_SPLITS=1):
    H, S_q, D = Q.shape[1], Q.shape[2], Q.shape[3]
    H_kv, S_k = K.shape[1], K.shape[2]
    if not (isinstance(KV_SPLITS, int) and KV_SPLITS >= 1) or (KV_SPLITS > 1 and CAUSAL):
        raise KernelError(diag.DSL_META_INVALID, f"KV_SPLITS={KV_SPLITS!r} with CAUSAL={CAUSAL!r}: key slices are a "
                                              "positive int, above 1 only for non-causal attention")
    lo, split = 0, 0
    if CAUSAL:  # longest first: query block i runs i + 1 key blocks, so the last waves get the short ones
        m0 = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_M
    elif KV_SPLITS > 1:  # program (m block, slice): slice `split` takes keys [lo, lo + per) in whole steps
        split = tl.program_id(0) % KV_SPLITS
        m0 = (tl.program_id(0) // KV_SPLITS) * BLOCK_M
        per = tl.cdiv(tl.cdiv(S_k, BLOCK_N), KV_SPLITS) * BLOCK_N
        lo = split * per
    else:
        m0 = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    h_kv = h // (H // H_kv)
    q = tl.load(Q, [b, h, m0, 0], (BLOCK_M, D))                          # gQ: BLOCK_M x D
    qk_scale = scale * LOG2E
    m_i = tl.full((BLOCK_M, 1), NEG_INF, tl.f32)                         # running row max (base-2 units)
    l_i = tl.zeros((BLOCK_M, 1), tl.f32)                                 # running row sum of exp2
    acc = tl.zeros((BLOCK_M, D), tl.f32)                                 # frag acc: BLOCK_M x D
    rows = m0 + tl.arange((BLOCK_M, 1), 0)                               # query index per row
    hi = tl.minimum(S_k, m0 + BLOCK_M) if CAUSAL else tl.minimum(S_k, lo + per) if KV_SPLITS > 1 else S_k
    for n0 in tl.range(lo, hi, BLOCK_N):
        k = tl.load(K, [b, h_kv, n0, 0], (BLOCK_N, D))                   # gK: BLOCK_N x D
        v = tl.load(V, [b, h_kv, n0, 0], (BLOCK_N, D))                   # gV: BLOCK_N x D
        s = tl.dot(q, k.T)                                               # BLOCK_M x BLOCK_N, f32
        if not FOLD_SCALE:
            s = s * qk_scale
        if CAUSAL or not EVEN_N:
            cols = n0 + tl.arange((1, BLOCK_N), 1)                       # key index per column
            if CAUSAL:
                visible = cols <= rows if EVEN_N else (cols < S_k) & (cols <= rows)
            else:
                visible = cols < S_k
            s = tl.where(visible, s, NEG_INF)
        if FOLD_SCALE:                                                   # max(c * s) = c * max(s) for c > 0
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            m_safe = tl.where(m_new == NEG_INF, 0.0, m_new)
            p = tl.exp2(s * qk_scale - m_safe)                           # one FFMA per score
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_safe = tl.where(m_new == NEG_INF, 0.0, m_new)              # all-masked rows: exp2(-inf - 0) = 0
            p = tl.exp2(s - m_safe)
        rescale = tl.exp2(m_i - m_safe)
        l_i = l_i * rescale + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * rescale)
        m_i = m_new
    empty = l_i == 0.0
    out = acc * (1.0 / tl.where(empty, 1.0, l_i))                      # one divide per row, not per element
    head = h * KV_SPLITS + split if KV_SPLITS > 1 else h                 # a slice's partials: their own head
    tl.store(O, [b, head, m0, 0], out.to(O.dtype))
    lse = tl.where(empty, NEG_INF, m_i * LN2 + tl.log(tl.where(empty, 1.0, l_i)))
    tl.store(LSE, [b, head, m0], lse.T)                                  # 1 x BLOCK_M row of LSE[b, head, :]


def grid(B: int, H: int, S_q: int, BLOCK_M: int = 64, KV_SPLITS: int = 1, **_meta) -> tuple[int, int]:
    """Launch grid: (query blocks x key slices, batch * heads)."""
    return (tl.cdiv(S_q, BLOCK_M) * KV_SPLITS, B * H)


def reference_attention(Q, K, V, scale: float | None = None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The float64 oracle `tessera.reference.oracles.attention_ref`: (O [B, H, S_q, D], LSE [B, H, S_q]).

    With no keys at all (S_k = 0) every row is fully masked: O = 0 and
    LSE = -inf, as the kernel writes them (the oracle needs at least one key).
    """
    if np.shape(K)[2] == 0:
        B, H, S_q, _ = np.shape(Q)
        return np.zeros((B, H, S_q, np.shape(V)[3])), np.full((B, H, S_q), -np.inf)
    from tessera.reference.oracles import attention_ref  # on first use, not at import (issue 14)

    return attention_ref(Q, K, V, causal, scale)
