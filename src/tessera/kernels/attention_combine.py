"""Merge split-KV attention partials (flash decoding's second step) as a tile program.

`flash_attention` with KV_SPLITS = S writes, for each (batch, head, query row), S partial results: the softmax
of its slice of the keys applied to V (normalised within the slice) and that slice's log-sum-exp. Their merge
is exact: with m = max_j lse_j and w_j = exp(lse_j - m),

    O = sum_j w_j * O_j / sum_j w_j        LSE = m + log(sum_j w_j)

A slice with no key (lse_j = -inf) weighs 0; a row with none at all gets O = 0 and LSE = -inf, as
flash_attention writes it.

Run-time arguments (see `attention_combine.params`):
  O_part    [B, H * SPLITS, S_q, D] f32     head h's slice j at head index h * SPLITS + j
  LSE_part  [B, H * SPLITS, S_q]    f32
  O         [B, H, S_q, D]                  output (bf16, f16 or f32)
  LSE       [B, H, S_q] f32                 output
Meta-parameters: BLOCK_M (query rows per program), SPLITS. Grid: `grid(B, H, S_q, BLOCK_M)`.
"""

from __future__ import annotations

from tessera.dsl import kernel, tl

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
NEG_INF = float("-inf")


@kernel(static_dims={"O_part": 3, "O": 3})
def attention_combine(O_part, LSE_part, O, LSE, *, BLOCK_M=64, SPLITS=2):
    H, D = O.shape[1], O.shape[3]
    m0 = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    lses = [tl.load(LSE_part, [b, h * SPLITS + j, m0], (1, BLOCK_M)).T * LOG2E for j in range(SPLITS)]
    m = lses[0]
    for lse_j in lses[1:]:
        m = tl.maximum(m, lse_j)                                          # base-2 units, BLOCK_M x 1
    m_safe = tl.where(m == NEG_INF, 0.0, m)                               # no key in any slice: every w_j = 0
    total = tl.zeros((BLOCK_M, 1), tl.f32)
    acc = tl.zeros((BLOCK_M, D), tl.f32)
    for j in range(SPLITS):
        w = tl.exp2(lses[j] - m_safe)
        total = total + w
        acc = acc + w * tl.load(O_part, [b, h * SPLITS + j, m0, 0], (BLOCK_M, D))
    empty = total == 0.0
    tl.store(O, [b, h, m0, 0], (acc * (1.0 / tl.where(empty, 1.0, total))).to(O.dtype))
    lse = tl.where(empty, NEG_INF, m_safe * LN2 + tl.log(tl.where(empty, 1.0, total)))
    tl.store(LSE, [b, h, m0], lse.T)


def grid(B: int, H: int, S_q: int, BLOCK_M: int = 64, **_meta) -> tuple[int, int]:
    """Launch grid: (query blocks, batch * heads)."""
    return (tl.cdiv(S_q, BLOCK_M), B * H)
