"""Tutorial 5: flash attention -- the shipped kernel is a tile program like the ones above.

`tessera.kernels.flash_attention` (read its source: 60 lines) is the online
softmax of FlashAttention written with the same tl calls: a loop over key
blocks carrying the row max m_i, the row sum l_i and the f32 accumulator; two
tl.dot per step (Q K^T, then P V with P rounded to the input dtype); causal
and key-bound masks from iota/compare/where; a final division and the
log-sum-exp. Here it is launched one-line like any user kernel, checked
against float64 (O and LSE), and compiled for sm_90a, where the compiler
turns the same program into a warp-specialised wgmma kernel (HGMMA in the
report). `tessera.ops.attention(q, k, v, causal=True)` is the same kernel with
configs chosen for you; on a GPU it is compared here with torch SDPA.
"""

from __future__ import annotations

import _common
import ml_dtypes
import numpy as np

import tessera
from tessera.kernels import flash_attention as FA


def main() -> None:
    rng = _common.rng()
    torch = _common.gpu_torch()
    B, H, H_kv, S_q, S_k, D = 1, 4, 2, 50, 77, 64  # grouped-query (2 query heads per kv head), ragged
    bf = ml_dtypes.bfloat16
    q = rng.standard_normal((B, H, S_q, D)).astype(bf)
    k = rng.standard_normal((B, H_kv, S_k, D)).astype(bf)
    v = rng.standard_normal((B, H_kv, S_k, D)).astype(bf)
    o, lse = np.zeros((B, H, S_q, D), bf), np.zeros((B, H, S_q), np.float32)
    lane = "reference" if torch is None else "cuda"
    meta = {"BLOCK_M": 64, "BLOCK_N": 64, "CAUSAL": True}
    result = FA.flash_attention[lambda m: FA.grid(B, H, S_q, **m)](q, k, v, o, lse, D ** -0.5, lane=lane, **meta)
    print(f"ran on lane {result.lane!r}")
    ro, rlse = FA.reference_attention(q, k, v, D ** -0.5, causal=True)
    _common.check("attention O bf16", o, ro, 2e-2)
    _common.check("attention LSE f32", lse, rlse, 1e-3)
    T = tessera.tensor
    specs = (T(("B", "H", "S", 64), "bf16"), T(("B", "H_kv", "S_k", 64), "bf16"), T(("B", "H_kv", "S_k", 64), "bf16"),
             T(("B", "H", "S", 64), "bf16"), T(("B", "H", "S"), "f32"), tessera.scalar("f32"))
    ck = tessera.compile(FA.flash_attention.trace(*specs, BLOCK_M=128, BLOCK_N=128, CAUSAL=True), "sm_90a", stages=2)
    print("\n".join(ck.report.text().splitlines()[:3]))
    if torch is not None:
        benchmark(torch)


def benchmark(torch) -> None:
    import tessera.ops as ops
    from tessera.testing import Benchmark, do_bench, perf_report

    @perf_report(Benchmark(x_names=["S"], x_vals=[1024, 2048, 4096, 8192], line_arg="provider",
                           line_vals=["tessera", "sdpa"], line_names=["Tessera", "torch SDPA"], ylabel="TFLOP/s",
                           plot_name="flash-attention-causal", args={"B": 4, "H": 16, "D": 128}))
    def bench(B, H, S, D, provider):
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        F = torch.nn.functional
        fn = (lambda: ops.attention(q, k, v, causal=True)) if provider == "tessera" else \
            (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        lo, mid, hi = do_bench(fn, quantiles=(0.2, 0.5, 0.8))
        tflops = lambda ms: 2 * B * H * S * S * D / (ms * 1e-3) / 1e12  # noqa: E731  (causal: half of 4BHS^2D)
        return tflops(mid), tflops(hi), tflops(lo)

    bench.run(print_data=True, save_path="tutorial-plots")


if __name__ == "__main__":
    main()
