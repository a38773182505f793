"""Why split-KV decode timed 2x slower than unsplit in the tuner (H200, 2026-12-07: 0.293 vs 0.142 ms), and the
new M = 64 GEMM default beside cuBLAS.

    python benchmarks/probe_split_kv_decode.py --out FILE

Attention: the decode row (B16 H32:8 S_q 1 S_k 8192 d128, bf16), each config pinned through ops.attention; per
config the tuner's timing (`cold_median_seconds`: events around one call after an L2 eviction), the same with the
host's launch hidden behind a GPU sleep, and the kernels' own durations from torch.profiler (slices and merge
apart), beside cuDNN SDPA. GEMM: bench_gemm_layouts rows at M = 64 (and 16) by default configs only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa

from tessera import ops
from tessera.ops import autotune
from tessera.ops._cold_l2 import ColdL2, cold_median_seconds

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CONFIGS = [
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative"},
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "dynamic"},
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "dynamic", "kv_splits": 2},
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "dynamic", "kv_splits": 4},
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "static", "kv_splits": 2},
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "static", "kv_splits": 8},
]


def hidden_host_ms(fn, cold, runs=20) -> float:
    """Events around fn with a GPU sleep queued first, so the host's launch work is done before the GPU gets there."""
    times = []
    for r in range(runs):
        cold.evict()
        torch.cuda._sleep(2_000_000)  # ~1 ms at 1.98 GHz
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def kernel_times(fn, runs=10) -> dict:
    try:
        return _kernel_times(fn, runs)
    except Exception as exc:  # noqa: BLE001 - the profiler is a nicety here
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


def _kernel_times(fn, runs: int) -> dict:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
    out = {}
    for ev in prof.key_averages():
        if ev.device_type.name == "CUDA" and ev.count:
            out[ev.key[:60]] = (ev.count, round(ev.device_time_total / ev.count, 2) if hasattr(ev, "device_time_total")
                                else round(ev.cuda_time_total / ev.count, 2))
    return out


def attention_probe() -> dict:
    B, H, H_kv, S_q, S_k, D = 16, 32, 8, 1, 8192, 128
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn((B, H, S_q, D), device="cuda", generator=g).bfloat16()
    k = torch.randn((B, H_kv, S_k, D), device="cuda", generator=g).bfloat16()
    v = torch.randn((B, H_kv, S_k, D), device="cuda", generator=g).bfloat16()
    o = torch.empty_like(q)
    lse = torch.empty((B, H, S_q), device="cuda", dtype=torch.float32)
    cold = ColdL2(torch)
    stream = torch.cuda.current_stream()
    ref = sdpa(q.double(), k.double().repeat_interleave(H // H_kv, 1), v.double().repeat_interleave(H // H_kv, 1))
    rows = []
    for config in CONFIGS:
        autotune.pin("attention_sm90a", config)
        try:
            run = lambda: ops.attention(q, k, v, out=o, lse=lse)  # noqa: E731
            run()
            torch.cuda.synchronize()
            err = float((o.double() - ref).norm() / ref.norm())
            rec = ops.last_run()
            row = {"config": config, "rel_err": err, "kernel": rec.kernel, "ran_config": rec.config,
                   "tuner_ms": 1e3 * cold_median_seconds(run, 20, cold, stream),
                   "hidden_host_ms": hidden_host_ms(run, cold), "kernels_us": kernel_times(run)}
        except Exception as exc:  # noqa: BLE001 - recorded
            row = {"config": config, "error": f"{type(exc).__name__}: {exc}"[:800]}
        finally:
            autotune.unpin("attention_sm90a")
        print(json.dumps(row, default=str), flush=True)
        rows.append(row)
    qq = q.repeat(1, 1, 1, 1)
    kk, vv = k.repeat_interleave(H // H_kv, 1), v.repeat_interleave(H // H_kv, 1)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        cud = lambda: sdpa(qq, kk, vv)  # noqa: E731
        cud()
        rows.append({"config": "cudnn (K/V repeated to H heads)", "tuner_ms": 1e3 * cold_median_seconds(cud, 20, cold, stream),
                     "hidden_host_ms": hidden_host_ms(cud, cold)})
    print(json.dumps(rows[-1]), flush=True)
    return {"shape": [B, H, H_kv, S_q, S_k, D], "rows": rows}


def gemm_probe() -> list:
    import bench_gemm_layouts as BG

    bench = BG.Bench(torch)
    out = []
    for layout in ("NN", "NT"):
        for M, N, K in ((64, 4096, 4096), (64, 14336, 4096), (16, 4096, 4096)):
            try:
                e = BG.row(bench, layout, M, N, K, False)
            except Exception as exc:  # noqa: BLE001
                e = {"config": f"{layout} {M}x{N}x{K}", "error": f"{type(exc).__name__}: {exc}"[:800]}
            print(json.dumps({k: e.get(k) for k in ("config", "default_config", "swap_ab", "ratio_default", "tbs",
                                                    "rel_err", "error")}, default=str), flush=True)
            out.append(e)
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "probe-split-kv.json"))
    args = p.parse_args()
    report = {"command": "python benchmarks/probe_split_kv_decode.py", "device": torch.cuda.get_device_name()}
    report["attention"] = attention_probe()
    report["gemm"] = gemm_probe()
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
