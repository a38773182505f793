"""Tutorial 2: row softmax -- reductions along an axis, broadcasting, and padding as a mask.

Each program takes BM whole rows (BN >= N columns, a meta-parameter: one
compile per power of two). Columns past N are loaded as -inf, so they add
exp(-inf) = 0 to the row sum: the padding value is the mask. `tl.max(x, 1)`
keeps the reduced axis (BM x 1), so `x - tl.max(x, 1)` broadcasts over the row,
as in numpy. Subtracting the row max first keeps exp from overflowing.

The arithmetic runs in f32 whatever the storage dtype (bf16 here), as a
PyTorch softmax in bf16 does.
"""

from __future__ import annotations

import _common
import ml_dtypes
import numpy as np

import tessera
from tessera import tl


@tessera.kernel
def softmax(X, Y, *, BM=4, BN=1024):
    m0 = tl.program_id(0) * BM
    x = tl.load(X, [m0, 0], (BM, BN), padding=float("-inf")).to(tl.f32)
    z = x - tl.max(x, 1)
    num = tl.exp(z)
    tl.store(Y, [m0, 0], (num / tl.sum(num, 1)).to(Y.dtype))


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def run(x, y, lane=None):
    M, N = x.shape
    return softmax[lambda meta: (tessera.cdiv(M, meta["BM"]),)](x, y, BN=next_pow2(N), lane=lane)


def reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main() -> None:
    rng = _common.rng()
    torch = _common.gpu_torch()
    M, N = 37, 781
    x = (rng.standard_normal((M, N)) * 4).astype(ml_dtypes.bfloat16)
    y = np.zeros_like(x)
    print(f"ran on lane {run(x, y, lane='reference' if torch is None else 'cuda').lane!r}")
    _common.check("row softmax bf16", y, reference(x), 2**-7)  # one bf16 rounding of each output
    _common.compile_summary(softmax, tessera.tensor(("M", "N"), "bf16"), tessera.tensor(("M", "N"), "bf16"),
                            BN=1024)
    if torch is not None:
        benchmark(torch)


def benchmark(torch) -> None:
    from tessera.testing import Benchmark, do_bench, perf_report

    @perf_report(Benchmark(x_names=["N"], x_vals=[256 * i for i in range(2, 17, 2)], line_arg="provider",
                           line_vals=["tessera", "torch"], line_names=["Tessera", "torch"], ylabel="GB/s",
                           plot_name="row-softmax", args={"M": 4096}))
    def bench(M, N, provider):
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        fn = (lambda: run(x, y)) if provider == "tessera" else (lambda: torch.softmax(x, -1))
        lo, mid, hi = do_bench(fn, quantiles=(0.2, 0.5, 0.8))
        gbps = lambda ms: 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9  # noqa: E731
        return gbps(mid), gbps(hi), gbps(lo)

    bench.run(print_data=True, save_path="tutorial-plots")


if __name__ == "__main__":
    main()
