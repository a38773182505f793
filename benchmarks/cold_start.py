"""Cold start (issue 17 item 7): seconds from a fresh process's first Tessera line to its first result.

    python benchmarks/cold_start.py --out cold.json [--runs 5]

Each figure is measured in new processes. Before the clock starts a process imports torch, initialises CUDA
and makes its inputs (Triton and Tessera both need that); then it times `import tessera.ops` + the first
`ops.gemm` (or `ops.attention`) + a synchronize, against `import triton` + the first launch of a plain Triton
matmul (benchmarks/triton_matmul_kernel.py) + a synchronize. Warm: the disk caches (TESSERA_CACHE_DIR,
TRITON_CACHE_DIR) already hold the kernel (one process ran it first); median of --runs processes. Cold: an
empty cache each time (Tessera traces, lowers, emits and runs NVRTC; Triton compiles). `user_kernel` is a
user's own kernel launched the Triton way (tutorials/01_vector_add.py, `add[grid](x, y, z)`): it traces (and so
loads xDSL) in every process; a warm cache skips lowering, emission and NVRTC (`tessera.compile`'s launch
records). Results are checked against torch in every process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time
import torch
N = 4096
torch.cuda.init()
torch.manual_seed(0)
what = sys.argv[1]
if what == "attention":
    q, k, v = (torch.randn(4, 16, 4096, 128, device="cuda").bfloat16() for _ in range(3))
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v)
elif what == "user_kernel":
    x, y = (torch.randn(1 << 24, device="cuda") for _ in range(2))
    z = torch.empty_like(x)
    want = x + y
else:
    a = torch.randn(N, N, device="cuda").bfloat16()
    w = (torch.randn(N, N, device="cuda") / N ** 0.5).bfloat16()
    out = torch.empty(N, N, device="cuda").bfloat16()
    want = a.float() @ w.float().T
torch.cuda.synchronize()
t0 = time.perf_counter()
if what == "triton":
    sys.path.insert(0, sys.argv[2])
    import triton_matmul_kernel as T
    t1 = time.perf_counter()
    got = T.run(a, w, out)
elif what == "user_kernel":
    import importlib
    sys.path.insert(0, sys.argv[2] + "/../tutorials")
    tut = importlib.import_module("01_vector_add")
    t1 = time.perf_counter()
    tut.add[tut.grid(x.numel())](x, y, z)
    got = z
else:
    import tessera.ops as ops
    t1 = time.perf_counter()
    got = ops.attention(q, k, v)[0] if what == "attention" else ops.gemm(a, w, trans_b=True)
torch.cuda.synchronize()
t2 = time.perf_counter()
err = float((got.float() - want.float()).norm() / want.float().norm())
print("RESULT " + json.dumps({"total_s": t2 - t0, "import_s": t1 - t0, "first_call_s": t2 - t1, "rel_err": err}))
"""


def child(what: str, tessera_cache: str, triton_cache: str) -> dict:
    env = {**os.environ, "TESSERA_CACHE_DIR": tessera_cache, "TRITON_CACHE_DIR": triton_cache}
    done = subprocess.run([sys.executable, "-c", CHILD, what, str(HERE)], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return {"error": done.stderr[-1500:]}
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def measure(what: str, runs: int) -> dict:
    cold = []
    for _ in range(2):
        with tempfile.TemporaryDirectory() as tess, tempfile.TemporaryDirectory() as trit:
            cold.append(child(what, tess, trit))
    with tempfile.TemporaryDirectory() as tess, tempfile.TemporaryDirectory() as trit:
        child(what, tess, trit)  # fills both caches
        warm = [child(what, tess, trit) for _ in range(runs)]
    out = {"what": what, "cold": cold, "warm": warm}
    for label, rows in (("cold", cold), ("warm", warm)):
        ok = [r for r in rows if "error" not in r]
        if ok:
            out[f"{label}_median_s"] = round(statistics.median(r["total_s"] for r in ok), 4)
            out[f"{label}_import_median_s"] = round(statistics.median(r["import_s"] for r in ok), 4)
            out[f"{label}_max_rel_err"] = max(r["rel_err"] for r in ok)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    result = {"command": "python benchmarks/cold_start.py" + (f" --runs {a.runs}" if a.runs != 5 else ""), "rows": []}
    for what in ("gemm", "triton", "user_kernel", "attention"):  # written after each: a time limit keeps what ran
        r = measure(what, a.runs)
        print(r["what"], {k: v for k, v in r.items() if k.endswith("_s") or k.endswith("_err")}, flush=True)
        result["rows"].append(r)
        if a.out:
            Path(a.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
