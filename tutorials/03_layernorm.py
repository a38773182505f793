"""Tutorial 3: layernorm -- masks from iota and compare, scalars, and rank-1 weights used as rows.

y = (x - mean) / sqrt(var + eps) * w + b over each row of N. Loads past N
read 0, which is right for the mean but not for the variance (x - mean would
be -mean there), so the centred row is masked with `tl.where(cols < N, ...)`,
cols an iota along axis 1. N and eps are run-time scalars: one compile serves
every row length up to BN. The weights are rank-1 [N] tensors, loaded as [BN]
tiles and used as rows with numpy's new axis, `w[None, :]` (tile.reshape: free).
"""

from __future__ import annotations

import _common
import ml_dtypes
import numpy as np

import tessera
from tessera import tl


@tessera.kernel
def layernorm(X, W, B, Y, N, eps, *, BM=4, BN=1024):
    m0 = tl.program_id(0) * BM
    x = tl.load(X, [m0, 0], (BM, BN)).to(tl.f32)
    inside = tl.arange((1, BN), axis=1) < N
    inv_n = 1.0 / N.to(tl.f32)
    mean = tl.sum(x, 1) * inv_n
    xc = tl.where(inside, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, 1) * inv_n + eps)
    w = tl.load(W, [0], (BN,)).to(tl.f32)
    b = tl.load(B, [0], (BN,)).to(tl.f32)
    tl.store(Y, [m0, 0], (xc * rstd * w[None, :] + b[None, :]).to(Y.dtype))


def run(x, w, b, y, eps=1e-5, lane=None):
    M, N = x.shape
    BN = 1 << max(0, (N - 1).bit_length())
    return layernorm[lambda meta: (tessera.cdiv(M, meta["BM"]),)](x, w, b, y, N, float(eps), BN=BN, lane=lane)


def reference(x, w, b, eps=1e-5):
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w.astype(np.float64) + b.astype(np.float64)


def main() -> None:
    rng = _common.rng()
    torch = _common.gpu_torch()
    M, N = 29, 700
    x = (rng.standard_normal((M, N)) * 3 + 1).astype(ml_dtypes.bfloat16)
    w, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    y = np.zeros_like(x)
    print(f"ran on lane {run(x, w, b, y, lane='reference' if torch is None else 'cuda').lane!r}")
    _common.check("layernorm bf16", y, reference(x, w, b), 2**-7)
    T = tessera.tensor
    _common.compile_summary(layernorm, T(("M", "N"), "bf16"), T(("N",), "f32"), T(("N",), "f32"),
                            T(("M", "N"), "bf16"), tessera.scalar("index"), tessera.scalar("f32"), BN=1024)
    if torch is not None:
        benchmark(torch)


def benchmark(torch) -> None:
    from tessera.testing import Benchmark, do_bench, perf_report

    @perf_report(Benchmark(x_names=["N"], x_vals=[512 * i for i in range(1, 9)], line_arg="provider",
                           line_vals=["tessera", "torch"], line_names=["Tessera", "torch"], ylabel="GB/s",
                           plot_name="layernorm", args={"M": 4096}))
    def bench(M, N, provider):
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        w, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
        y = torch.empty_like(x)
        fn = (lambda: run(x, w, b, y)) if provider == "tessera" else \
            (lambda: torch.nn.functional.layer_norm(x, (N,), w.bfloat16(), b.bfloat16()))
        lo, mid, hi = do_bench(fn, quantiles=(0.2, 0.5, 0.8))
        gbps = lambda ms: 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9  # noqa: E731
        return gbps(mid), gbps(hi), gbps(lo)

    bench.run(print_data=True, save_path="tutorial-plots")


if __name__ == "__main__":
    main()
