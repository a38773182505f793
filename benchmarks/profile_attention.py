"""One ops.attention call (B4 H16 S4k d128, bf16; `--causal`; `--shape B,H,S` for another) for Nsight Compute:

    run(command="bash benchmarks/profile_attention.sh", carry=[".whl"])
"""

import sys

import torch

from tessera import ops

causal = "--causal" in sys.argv
B, H, S = (int(x) for x in sys.argv[sys.argv.index("--shape") + 1].split(",")) if "--shape" in sys.argv else (4, 16, 4096)
q, k, v = (torch.randn(B, H, S, 128, device="cuda").bfloat16() for _ in range(3))
o, lse = torch.empty_like(q), torch.empty(B, H, S, device="cuda")
ops.attention(q, k, v, causal=causal, out=o, lse=lse)  # compile and warm outside the profiled launch
torch.cuda.synchronize()
ops.attention(q, k, v, causal=causal, out=o, lse=lse)
torch.cuda.synchronize()
