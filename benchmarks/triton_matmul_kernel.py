"""A plain Triton matmul (C = A @ B^T, bf16 in, fp32 accumulate), the peer of benchmarks/cold_start.py: how long a
fresh process takes to its first Triton result with a warm Triton cache. Not tuned: the cold-start figure is
import + cache lookup + load + launch, which the tile shape does not change."""

import triton
import triton.language as tl


@triton.jit
def matmul_nt(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + rn[None, :] * K + (k + rk)[:, None])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


def run(a, w, out):
    M, K = a.shape
    N = w.shape[0]
    matmul_nt[(M // 128, N // 128)](a, w, out, M, N, K, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    return out
