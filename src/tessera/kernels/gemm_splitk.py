"""Split-K GEMM as two tile programs: K-range partial products, then a reduction with the fused epilogue.

For shapes with few output tiles and a long K (1024 x 1024 x 16384, or
M = 128 with N*K large) one program per tile leaves most SMs idle; splitting
K over SPLIT_K programs per tile fills them, at the price of writing
SPLIT_K f32 partial tiles and reading them back once.

`gemm_splitk(A, B, W)`: program (i, j, s) multiplies over K steps
[s * per, (s + 1) * per) (per = ceil(ceil(K / BK) / SPLIT_K) * BK; a split
past K adds nothing and stores zeros) and stores its f32 tile at rows
s * Mp + i * BM of the workspace W [SPLIT_K * Mp, N], Mp = ceil(M / BM) * BM
(each split owns a whole number of row blocks, so ragged M never overlaps
splits). `splitk_reduce(W, C, bias, residual, alpha, beta)` sums the
SPLIT_K partials of each tile and applies `gemm.epilogue` (same maths and
argument conventions as `gemm`). Both compile for every arch; on sm_90a the
first takes the warp-specialised wgmma lowering (B as [N, K]: TRANS_B).
"""

from __future__ import annotations

from tessera.dsl import kernel, tl
from tessera.kernels.gemm import epilogue


@kernel
def gemm_splitk(A, B, W, *, BM=128, BN=128, BK=64, SPLIT_K=2, TRANS_A=False, TRANS_B=False):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    s = tl.program_id(2)
    M = A.shape[1] if TRANS_A else A.shape[0]
    K = A.shape[0] if TRANS_A else A.shape[1]
    per = tl.cdiv(tl.cdiv(K, BK), SPLIT_K) * BK
    k_lo = s * per
    k_hi = tl.minimum(K, k_lo + per)
    acc = tl.zeros((BM, BN), tl.f32)
    for k in tl.range(k_lo, k_hi, BK):
        if TRANS_A:
            a = tl.load(A, [k, m0], (BK, BM)).T
        else:
            a = tl.load(A, [m0, k], (BM, BK))
        if TRANS_B:
            b = tl.load(B, [n0, k], (BN, BK)).T
        else:
            b = tl.load(B, [k, n0], (BK, BN))
        acc = tl.dot(a, b, acc)
    tl.store(W, [s * (tl.cdiv(M, BM) * BM) + m0, n0], acc)


@kernel
def splitk_reduce(W, C, bias, residual, alpha, beta, *, BM=64, BN=128, SPLIT_K=2, ACTIVATION="none"):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    Mp = W.shape[0] // SPLIT_K
    acc = tl.load(W, [m0, n0], (BM, BN))
    for s in range(1, SPLIT_K):  # unrolled while tracing: SPLIT_K is a meta-parameter
        acc = acc + tl.load(W, [s * Mp + m0, n0], (BM, BN))
    epilogue(acc, C, bias, residual, alpha, beta, m0, n0, BM, BN, ACTIVATION)


def workspace_rows(M: int, BM: int, SPLIT_K: int) -> int:
    """Rows of the f32 workspace W: SPLIT_K blocks of ceil(M / BM) * BM rows."""
    return SPLIT_K * tl.cdiv(M, BM) * BM


def grid(M: int, N: int, BM: int = 128, BN: int = 128, SPLIT_K: int = 2, **_meta) -> tuple[int, int, int]:
    """Launch grid of gemm_splitk: one program per (tile of C, K split)."""
    return (tl.cdiv(M, BM), tl.cdiv(N, BN), SPLIT_K)


def reduce_grid(M: int, N: int, BM: int = 64, BN: int = 128, **_meta) -> tuple[int, int]:
    """Launch grid of splitk_reduce: one program per BM x BN tile of C."""
    return (tl.cdiv(M, BM), tl.cdiv(N, BN))
