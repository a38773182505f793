"""Chunked causal linear attention (forward) as a tile program, with optional per-head decay.

    O_t = sum_{s <= t} exp(g_h * (t - s)) * (q_t . k_s) * v_s        (g_h = 0 without decay)

Run-time arguments, in order (see `linear_attention.params`):
  Q, K  [B, H, T, D_k]   bf16, f16 or f32 (D_k static)
  V     [B, H, T, D_v]   same dtype (D_v static)
  O     [B, H, T, D_v]   output, V's dtype
  G     [1, H] f32       per-head log-decay g_h per step (a row vector: tiles cannot gain a rank), or None
Meta-parameters: CHUNK (time steps per chunk, 64), BLOCK_V (d_v columns per
program; None means all of D_v).

One program walks all chunks of one (batch, head, d_v block), carrying the
state S (D_k x BLOCK_V, f32) relative to the chunk's last step:
  O_c = ((Q_c K_c^T) * Dec) V_c + (Q_c * exp(g (i+1))) S,   Dec[i, j] = exp(g (i-j)) for j <= i else 0
  S   = exp(g n) S + (K_c * exp(g (n-1-j)))^T V_c            n = steps in this chunk (ragged at the end)
Rows past T read zeros and get weight 0, so the ragged last chunk is exact.
As in fla's chunk kernels, the f32 products A and S are rounded to the input
dtype before their second matmul; accumulation stays f32.
Grid: `grid(B, H, D_v, **meta)` = (B*H, cdiv(D_v, BLOCK_V)).
"""

from __future__ import annotations

import numpy as np

from tessera.dsl import kernel, tl


@kernel(static_dims={"Q": 3, "K": 3, "V": 3, "O": 3})  # D_k, D_v are tile dims: static in a one-line launch
def linear_attention(Q, K, V, O, G, *, CHUNK=32, BLOCK_V=None):
    H, T, D_k = Q.shape[1], Q.shape[2], Q.shape[3]
    BV = V.shape[3] if BLOCK_V is None else BLOCK_V
    bh = tl.program_id(0)
    b = bh // H
    h = bh % H
    v0 = tl.program_id(1) * BV
    S = tl.zeros((D_k, BV), tl.f32)                                      # frag state: D_k x BV, f32
    i = tl.arange((CHUNK, 1), 0)                                         # step within the chunk (rows)
    j = tl.arange((1, CHUNK), 1)                                         # step within the chunk (cols)
    causal = j <= i                                                      # CHUNK x CHUNK mask
    if G is not None:
        g = tl.load(G, [0, h], (1, 1))                                   # gG: 1 x 1 log-decay of head h
        dec_qk = tl.where(causal, tl.exp(g * (i - j).to(tl.f32)), 0.0)   # CHUNK x CHUNK
        dec_q = tl.exp(g * (i + 1).to(tl.f32))                           # CHUNK x 1
    for t0 in tl.range(0, T, CHUNK):
        q = tl.load(Q, [b, h, t0, 0], (CHUNK, D_k))                      # gQ: CHUNK x D_k
        k = tl.load(K, [b, h, t0, 0], (CHUNK, D_k))                      # gK: CHUNK x D_k
        v = tl.load(V, [b, h, t0, v0], (CHUNK, BV))                      # gV: CHUNK x BV
        a = tl.dot(q, k.T)                                               # CHUNK x CHUNK, f32
        if G is None:
            a = tl.where(causal, a, 0.0)
            o = tl.dot(q, S.to(q.dtype))                                 # inter-chunk: CHUNK x BV
            S = tl.dot(k.T, v, S)
        else:
            n = tl.minimum(T - t0, CHUNK)                                # steps in this chunk
            a = a * dec_qk
            o = tl.dot((q.to(tl.f32) * dec_q).to(q.dtype), S.to(q.dtype))
            w = tl.where(i < n, tl.exp(g * (n - 1 - i).to(tl.f32)), 0.0)  # CHUNK x 1 weight of each key row
            S = tl.dot((k.to(tl.f32) * w).to(k.dtype).T, v, S * tl.exp(g * n.to(tl.f32)))
        o = tl.dot(a.to(v.dtype), v, o)                                  # + intra-chunk
        tl.store(O, [b, h, t0, v0], o.to(O.dtype))


def grid(B: int, H: int, D_v: int, BLOCK_V: int | None = None, **_meta) -> tuple[int, int]:
    """Launch grid: (batch * heads, d_v blocks)."""
    return (B * H, 1 if BLOCK_V is None else tl.cdiv(D_v, BLOCK_V))


def reference_linear_attention(Q, K, V, g=None) -> np.ndarray:
    """The float64 oracle `tessera.reference.oracles.linear_attention_ref`; `g` may be the kernel's [1, H] G."""
    from tessera.reference.oracles import linear_attention_ref  # on first use, not at import (issue 14)

    return linear_attention_ref(Q, K, V, None if g is None else np.reshape(g, -1))
