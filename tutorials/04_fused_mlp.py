"""Tutorial 4: a fused MLP -- tl.dot in a loop, an epilogue in registers, a second dot on the result.

Y = gelu(X @ W1^T + b1) @ W2^T, with W1 [H, D] and W2 [D, H] as nn.Linear
stores them. The hidden activation never reaches memory: each program keeps a
BM x D accumulator, and for each BH-wide slice of the hidden layer computes
gelu(X W1_slice^T + b1_slice) in registers, rounds it to the input dtype and
multiplies it straight into the accumulator. `tl.load(...).T` reads the
transposed tile; hidden units past H load as 0 and gelu(0) = 0, so ragged H
needs no mask. `tl.dot` runs on tensor cores for bf16/f16 (mma.sync on sm_80+)
and accumulates in f32.

For separate layers, `tessera.ops.gemm(x, w, bias=b, activation="gelu", trans_b=True)`
is the shipped GEMM with the same epilogue fused.
"""

from __future__ import annotations

import math

import _common
import ml_dtypes
import numpy as np

import tessera
from tessera import tl

_SQRT1_2 = 1.0 / math.sqrt(2.0)


@tessera.kernel
def fused_mlp(X, W1, B1, W2, Y, *, BM=64, BH=64, D=64):
    m0 = tl.program_id(0) * BM
    x = tl.load(X, [m0, 0], (BM, D))
    acc = tl.zeros((BM, D), tl.f32)
    for h0 in tl.range(0, W1.shape[0], BH):
        h = tl.dot(x, tl.load(W1, [h0, 0], (BH, D)).T, tl.zeros((BM, BH), tl.f32))
        h = h + tl.load(B1, [h0], (BH,)).to(tl.f32)[None, :]            # the rank-1 bias as a row
        h = h * (1.0 + tl.erf(h * _SQRT1_2)) * 0.5                      # exact gelu, as torch's default
        acc = tl.dot(h.to(X.dtype), tl.load(W2, [0, h0], (D, BH)).T, acc)
    tl.store(Y, [m0, 0], acc.to(Y.dtype))


def run(x, w1, b1, w2, y, lane=None):
    M, D = x.shape
    return fused_mlp[lambda meta: (tessera.cdiv(M, meta["BM"]),)](x, w1, b1, w2, y, D=D, lane=lane)


def reference(x, w1, b1, w2):
    """float64, with the hidden activation rounded to bf16 as the kernel feeds it to the second dot."""
    from tessera.reference.numerics import erf  # float64 erf (numpy has none)
    h = x.astype(np.float64) @ w1.astype(np.float64).T + b1.astype(np.float64)
    h = (h * (1 + erf(h * _SQRT1_2)) * 0.5).astype(x.dtype).astype(np.float64)
    return h @ w2.astype(np.float64).T


def main() -> None:
    rng = _common.rng()
    torch = _common.gpu_torch()
    M, D, H = 100, 64, 200
    bf = ml_dtypes.bfloat16
    x = rng.standard_normal((M, D)).astype(bf)
    w1 = (rng.standard_normal((H, D)) / math.sqrt(D)).astype(bf)
    b1 = rng.standard_normal(H).astype(np.float32)
    w2 = (rng.standard_normal((D, H)) / math.sqrt(H)).astype(bf)
    y = np.zeros((M, D), bf)
    print(f"ran on lane {run(x, w1, b1, w2, y, lane='reference' if torch is None else 'cuda').lane!r}")
    _common.check("fused MLP bf16", y, reference(x, w1, b1, w2), 2e-2)
    T = tessera.tensor
    _common.compile_summary(fused_mlp, T(("M", "D"), "bf16"), T(("H", "D"), "bf16"), T(("H",), "f32"),
                            T(("D", "H"), "bf16"), T(("M", "D"), "bf16"), D=64)
    if torch is not None:
        benchmark(torch)


def benchmark(torch) -> None:
    from tessera.testing import Benchmark, do_bench, perf_report

    @perf_report(Benchmark(x_names=["M"], x_vals=[1024 * 2**i for i in range(6)], line_arg="provider",
                           line_vals=["tessera", "torch"], line_names=["Tessera fused", "torch (2 linears)"],
                           ylabel="TFLOP/s", plot_name="fused-mlp", args={"D": 64, "H": 256}, x_log=True))
    def bench(M, D, H, provider):
        x = torch.randn(M, D, device="cuda", dtype=torch.bfloat16)
        w1 = torch.randn(H, D, device="cuda", dtype=torch.bfloat16) / D ** 0.5
        b1 = torch.randn(H, device="cuda")
        w2 = torch.randn(D, H, device="cuda", dtype=torch.bfloat16) / H ** 0.5
        y = torch.empty(M, D, device="cuda", dtype=torch.bfloat16)
        F = torch.nn.functional
        fn = (lambda: run(x, w1, b1, w2, y)) if provider == "tessera" else \
            (lambda: F.linear(F.gelu(F.linear(x, w1, b1.bfloat16())), w2))
        lo, mid, hi = do_bench(fn, quantiles=(0.2, 0.5, 0.8))
        tflops = lambda ms: 4 * M * D * H / (ms * 1e-3) / 1e12  # noqa: E731
        return tflops(mid), tflops(hi), tflops(lo)

    bench.run(print_data=True, save_path="tutorial-plots")


if __name__ == "__main__":
    main()
