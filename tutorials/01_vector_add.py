"""Tutorial 1: vector add -- a kernel, its grid, and the one-line launch.

A Tessera kernel is a Python function over tiles. `tl.program_id(0)` says which
program (CTA) of the grid this is; each program loads a BLOCK-long tile of X
and Y, adds them and stores the tile. Loads past the end read 0 and stores
past the end are dropped, so any n works: no mask to write.

    add[grid](x, y, z)          launches; grid is a tuple or a function of the meta-parameters
    TESSERA_INTERPRET=1 python tutorials/01_vector_add.py    the same code on the CPU interpreter

On a GPU it then compares bandwidth with torch's `x + y` (tessera.testing.perf_report).
"""

from __future__ import annotations

import _common
import numpy as np

import tessera
from tessera import tl


@tessera.kernel
def add(X, Y, Z, *, BLOCK=1024):
    i = tl.program_id(0) * BLOCK
    x = tl.load(X, [i], (BLOCK,))
    y = tl.load(Y, [i], (BLOCK,))
    tl.store(Z, [i], x + y)


def grid(n):
    return lambda meta: (tessera.cdiv(n, meta["BLOCK"]),)


def main() -> None:
    rng = _common.rng()
    n = 98_437  # not a multiple of BLOCK: the last program's tile runs past the end
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    z = np.zeros_like(x)
    result = add[grid(n)](x, y, z, lane="reference" if _common.gpu_torch() is None else "cuda")
    print(f"ran on lane {result.lane!r}")
    _common.check("vector add f32", z, x.astype(np.float64) + y, 1e-7)
    _common.compile_summary(add, tessera.tensor(("N",), "f32"), tessera.tensor(("N",), "f32"),
                            tessera.tensor(("N",), "f32"))
    torch = _common.gpu_torch()
    if torch is not None:
        benchmark(torch)


def benchmark(torch) -> None:
    from tessera.testing import Benchmark, do_bench, perf_report

    @perf_report(Benchmark(x_names=["N"], x_vals=[2**i for i in range(16, 29, 2)], line_arg="provider",
                           line_vals=["tessera", "torch"], line_names=["Tessera", "torch"], ylabel="GB/s",
                           plot_name="vector-add", x_log=True))
    def bench(N, provider):
        x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
        z = torch.empty_like(x)
        fn = (lambda: add[grid(N)](x, y, z)) if provider == "tessera" else (lambda: torch.add(x, y, out=z))
        lo, mid, hi = do_bench(fn, quantiles=(0.2, 0.5, 0.8))
        gbps = lambda ms: 3 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9  # noqa: E731
        return gbps(mid), gbps(hi), gbps(lo)

    bench.run(print_data=True, save_path="tutorial-plots")


if __name__ == "__main__":
    main()
