"""User-facing ops: pick the shipped kernel and a tile configuration, compile once, launch.

    import tessera.ops as ops
    d = ops.gemm(a, b, bias=bias, activation="gelu")          # torch/cupy CUDA arrays or numpy
    o, lse = ops.attention(q, k, v, causal=True)
    o = ops.linear_attention(q, k, v, g)
    rec = ops.last_run()   # RunRecord(lane='cuda', kernel='gemm', artifact_hash=..., config=..., grid=...)

Results are the arrays themselves; provenance is `last_run()`, the record
of the calling thread's last successful call (what ran, on which lane, from
which artifact). A failed call clears it, so a stale record never vouches
for a result that was not produced.

Lanes (strict dispatch, DESIGN lesson 5): 'auto' (default) is the GPU and
raises OPS_NO_GPU without one, never a silent CPU fallback; 'cuda' is the
same, spelled out; 'reference' runs the CPU reference interpreter on numpy
arrays and its record says lane='reference' with the IR's hash.

Arrays: torch CUDA tensors and __cuda_array_interface__ arrays (cupy, ...)
are used in place, zero copy, and the launch is asynchronous on `stream`
(default: the framework's current stream, as a torch or cupy op would use);
numpy arrays are copied to the device and back, and the call waits. All
arrays of a call are C-contiguous and live on one device (or are all
numpy). Device pointers must be aligned to their element size; pointers
and row pitches that are multiples of 16 bytes also take the vectorised
cp.async path (the kernel tests this at run time and otherwise copies
element-wise -- slower, still correct). Bad arguments raise coded OPS_*
errors naming the argument, located at the caller's line, before any
output is allocated or written.

Warm calls: each (op, dtypes, flags, tile config, arch, device) is traced and
compiled once per process (`tessera.compile` caches cubins on disk too);
a repeated call checks its arrays and launches. Configurations by shape:
`tessera.ops.configs`; on Hopper, pinned or tuned (`tune_gemm`, `tune_attention`,
`tessera.ops.autotune`).
"""

from tessera.ops._common import RunRecord, last_run
from tessera.ops._gemm import gemm
from tessera.ops._hopper import tune_gemm

__all__ = ["gemm", "attention", "linear_attention", "last_run", "RunRecord", "tune_gemm", "tune_attention"]


def __getattr__(name: str):
    """The attention ops on first use: a process that only multiplies matrices does not import them."""
    if name in ("attention", "linear_attention"):
        from tessera.ops import _attention

        return getattr(_attention, name)
    if name == "tune_attention":
        from tessera.ops._hopper_attention import tune_attention

        return tune_attention
    raise AttributeError(f"module 'tessera.ops' has no attribute {name!r}")
