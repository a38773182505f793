"""One ops.attention call (B4 H16 S4k d128, bf16; `--causal`) for Nsight Compute to profile on the H200:

    run(command="bash benchmarks/profile_attention.sh", carry=[".whl"])
"""

import sys

import torch

from tessera import ops

causal = "--causal" in sys.argv
q, k, v = (torch.randn(4, 16, 4096, 128, device="cuda").bfloat16() for _ in range(3))
o, lse = torch.empty_like(q), torch.empty(4, 16, 4096, device="cuda")
ops.attention(q, k, v, causal=causal, out=o, lse=lse)  # compile and warm outside the profiled launch
torch.cuda.synchronize()
ops.attention(q, k, v, causal=causal, out=o, lse=lse)
torch.cuda.synchronize()
