"""Where the decode GEMM's time goes on an H200: the sm_90a kernel's duration against K at M = 16, N = 4096.

    python benchmarks/decode_floor.py [--out FILE]

Issue 16's decode rows at N = 4096 took ~18.4 us for every config (1.8 TB/s of a 4.2 TB/s copy). If the time
is a fixed cost (launch, prologue, tensor-map fetch, first TMA round trip, split-K fixup), a K sweep shows it
as the intercept of time against K; the slope is the streaming rate. cuBLAS on the same tensors beside it.
Per point: median of 30 CUDA-event timings after an L2 eviction (a 256 MB read: bench_gemm_layouts.Bench). JSON
to --out (default $OUT/decode_floor.json), with a least-squares line (intercept in us, slope as TB/s) per kernel
over K >= 1024; the swapped kernels as ops runs decode (2026-12-07), the default one and K split in 2 (what the
split-K fixup adds to the intercept), and K split in a 2-CTA cluster (multicast=k: the halves meet in
distributed shared memory); and, as a source edit compiled into a cache of its own, the swapped default with its
tensor maps prefetched by an idle producer warp after the barriers are set up (`prefetch_after_init`: the 2026-12-07 prefetch from thread 0 before them was no faster).
The kernels of one K are timed interleaved, round-robin (bench_gemm_layouts.Bench), so a drift of the clocks
lands on all of them alike.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gemm_layouts import Bench, make_call, make_swap_call  # noqa: E402

M, N = 16, 4096
KS = (64, 256, 1024, 2048, 4096, 8192)
CONFIGS = {
    "64x128-s8": {"BM": 64, "BN": 128, "BK": 64, "stages": 8, "schedule": "cooperative", "cluster": 1, "splitk": 1,
                  "multicast": "b"},
    "64x128-s8-splitk4": {"BM": 64, "BN": 128, "BK": 64, "stages": 8, "schedule": "cooperative", "cluster": 1,
                          "splitk": 4, "multicast": "b"},
    "128x64-pingpong": {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "schedule": "pingpong", "cluster": 1,
                        "splitk": 1, "multicast": "b"},
}
# run swapped as ops.gemm runs decode (2026-12-07: the default for M <= 64); None: `swap_config(M)`, ops' default
SWAPPED = {
    "swap-default": None,
    "swap64x16-s8-splitk2": {"BM": 64, "BN": 16, "BK": 128, "stages": 8, "schedule": "cooperative", "cluster": 1,
                             "splitk": 2, "multicast": "b", "store": "registers", "swap_ab": True},
    # K split in a 2-CTA cluster, summed through distributed shared memory (no global fixup chain)
    "swap64x16-s8-kpair": {"BM": 64, "BN": 16, "BK": 128, "stages": 8, "schedule": "cooperative", "cluster": 2,
                           "splitk": 1, "multicast": "k", "store": "registers", "swap_ab": True},
}


def fit(ks: list, us: list) -> dict:
    """Least-squares time = intercept + slope * weight bytes: the fixed cost (us) and the streaming rate (TB/s)."""
    xs = [k * N * 2 for k in ks]
    mx, my = sum(xs) / len(xs), sum(us) / len(us)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, us)) / sum((x - mx) ** 2 for x in xs)
    return {"intercept_us": my - slope * mx, "tbs": 1e-6 / slope}


def prefetch_after_init(src: str) -> str:
    """The kernel with each tensor map prefetched (prefetch.tensormap) by producer thread 32, an idle one, right
    after the first CTA barrier of the mbarrier set-up (thread 0 goes on initialising): thread 0's first loads
    need not wait for descriptors that were fetched meanwhile."""
    import re

    maps = re.findall(r"const __grid_constant__ tsr_tensormap (\w+)", src)
    at = src.index("__syncthreads();") + len("__syncthreads();")
    lines = "".join(f'\n    asm volatile("prefetch.tensormap [%0];" :: "l"(&{m}) : "memory");' for m in maps)
    return src[:at] + f"\n  if (tid == 32) {{{lines}\n  }}" + src[at:]


def use_cache(cache) -> None:
    """Compile into `cache` from now on, forgetting in-process kernels (an edited source is not in the key)."""
    from tessera.compiler import driver
    from tessera.runtime import cache as C

    C._default = cache
    driver.clear_memo()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "decode_floor.json"))
    args = p.parse_args()
    import tempfile

    import torch

    from tessera.compiler import testing
    from tessera.runtime.cache import CompileCache

    bench = Bench(torch)
    shipped, edited = (CompileCache(tempfile.mkdtemp(prefix=f"floor-{n}-")) for n in ("shipped", "edited"))

    rows = []
    for K in KS:
        a = torch.randn((M, K), device="cuda").bfloat16()
        b = torch.randn((K, N), device="cuda").bfloat16()
        out = torch.empty((M, N), device="cuda", dtype=torch.bfloat16)
        fns = {"cublas": lambda: torch.matmul(a, b, out=out)}
        use_cache(edited)
        with testing.inject_faults(source=prefetch_after_init):
            fns["swap-default-prefetch"] = make_swap_call(torch, M, N, a, b, out, False, False, None)
        use_cache(shipped)
        for name, cfg in CONFIGS.items():
            fns[name] = make_call(torch, cfg, a, b, out, False, False, M, N)
        for name, cfg in SWAPPED.items():
            fns[name] = make_swap_call(torch, M, N, a, b, out, False, False, cfg)
        row = {"K": K, "weight_mb": K * N * 2 / 2**20,
               **{f"{n}_us": 1e3 * t for n, t in bench.time(fns, 30).items()}}
        rows.append(row)
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
    empty = torch.empty(1, device="cuda")
    floor = {"empty_kernel_us": 1e3 * bench.time({"empty": lambda: empty.add_(1)}, 30)["empty"]}
    print(json.dumps(floor))
    big = [r for r in rows if r["K"] >= 1024]  # past the ramp: the line through the streaming points
    fits = {name[:-3]: fit([r["K"] for r in big], [r[name] for r in big]) for name in rows[0] if name.endswith("_us")}
    print(json.dumps(fits))
    Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "M": M, "N": N, "rows": rows,
                                          "fits": fits, **floor}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
