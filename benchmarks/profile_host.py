"""Where a warm ops.attention call spends its host time (issue 15: within 2 us of torch SDPA's).

Times N warm calls of ops.attention (preallocated out/lse, the bench's tiny tensors) and of SDPA's cuDNN backend
with perf_counter, then runs the ops calls again under cProfile and prints the functions by own time.

    python benchmarks/profile_host.py [N]
"""

import cProfile
import pstats
import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from tessera import ops

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
q, k, v = (torch.randn(1, 2, 128, 128, device="cuda").bfloat16() for _ in range(3))
o, lse = torch.empty_like(q), torch.empty(1, 2, 128, device="cuda")


def per_call_us(fn, n=N):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = time.perf_counter() - t
    torch.cuda.synchronize()
    return dt / n * 1e6


ours = lambda: ops.attention(q, k, v, out=o, lse=lse)  # noqa: E731
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    sdpa = per_call_us(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v))
print(f"ops.attention {per_call_us(ours):.2f} us/call, SDPA cuDNN {sdpa:.2f} us/call (warm, {N} calls)")
prof = cProfile.Profile()
prof.enable()
for _ in range(N):
    ours()
prof.disable()
torch.cuda.synchronize()
pstats.Stats(prof).sort_stats("tottime").print_stats(25)
