"""Compile every sm_90a GEMM the layout tests and benchmark may run into the disk cache, in parallel.

    python benchmarks/warm_gemm_cache.py [--jobs 16]

NVRTC needs no GPU: on the H200's 16-core host this turns ~90 serial compiles (every autotune candidate in
each of NN, NT, TN, TT, bf16, through `compile_plain`, the kernels tune_gemm loads) into a few parallel batches, so
the GPU tests and bench_gemm_layouts.py spend device time on the GPU. Entries land in $TESSERA_CACHE_DIR.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))


def build(job: tuple[str, dict]) -> str:
    from tessera.ops._hopper import compile_plain

    layout, cfg = job
    try:
        compile_plain(cfg, "bf16", layout)
        return "ok"
    except Exception as err:  # noqa: BLE001 - reported, the others go on
        return f"{layout} {cfg}: {type(err).__name__}: {str(err)[:200]}"


def main() -> int:
    from tessera.ops._hopper import HOPPER_CANDIDATES, LAYOUTS

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
