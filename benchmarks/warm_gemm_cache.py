"""Compile every sm_90a GEMM the layout tests and benchmark may run into the disk cache, in parallel.

    python benchmarks/warm_gemm_cache.py [--jobs 16]

NVRTC needs no GPU: on the H200's 16-core host this turns ~90 serial compiles (every autotune candidate in
each of NN, NT, TN, TT, bf16; the same specs ops.gemm and tune_gemm build) into a few parallel batches, so
the GPU tests and bench_gemm_layouts.py spend device time on the GPU. Entries land in $TESSERA_CACHE_DIR.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
LAYOUTS = ("NN", "NT", "TN", "TT")


def build(job: tuple[str, dict]) -> str:
    import tessera
    from tessera.compiler.driver import compile_cached
    from tessera.compiler.launch_shape import LaunchShape
    from tessera.kernels import gemm as G

    layout, cfg = job
    ta, tb = layout[0] == "T", layout[1] == "T"
    T = tessera.tensor
    specs = (T(("K", "M") if ta else ("M", "K"), "bf16"), T(("N", "K") if tb else ("K", "N"), "bf16"),
             T(("M", "N"), "bf16"), None, None, tessera.scalar("f32"), None)
    meta = {"BM": cfg["BM"], "BN": cfg["BN"], "BK": cfg["BK"], "TRANS_A": ta, "TRANS_B": tb, "ACTIVATION": "none"}
    try:
        compile_cached(G.gemm, specs, meta, arch="sm_90a", shape=LaunchShape.from_config(cfg))
        return "ok"
    except Exception as err:  # noqa: BLE001 - reported, the others go on
        return f"{layout} {cfg}: {type(err).__name__}: {str(err)[:200]}"


def main() -> int:
    from tessera.ops._hopper import HOPPER_CANDIDATES

    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=16)
    args = p.parse_args()
    jobs = [(lay, dict(c)) for lay in LAYOUTS for c in HOPPER_CANDIDATES]
    t0 = time.monotonic()
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(build, jobs))
    failed = [r for r in results if r != "ok"]
    print(f"{len(jobs) - len(failed)}/{len(jobs)} compiled in {time.monotonic() - t0:.1f} s", *failed, sep="\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
