"""Issue 15 on the H200: tessera.ops.attention (the sm_90a kernel) beside torch SDPA's cuDNN and flash backends.

    run(command="bash benchmarks/attention_run.sh", carry=[".whl"])   # or, on the device:
    python benchmarks/bench_hopper_attention.py --out FILE [--quick]

bf16, the issue's configurations, B*H*S chosen to fill the GPU. Each row: the numerics of O and LSE against
float64 on a sample of rows (the first and last query block and random rows, of the first and last head of
batch 0, against every key), then the median of CUDA-event timings with the L2 evicted by a read (tessera.testing.do_bench)
for ours, cuDNN and flash in one process. TFLOP/s count 4*B*H*S_q*S_k*D (halved for causal); decode rows also
give K/V bytes read per second. `ratio` = ours / cuDNN (where cuDNN refuses a configuration, the faster backend
that takes it, named in `peer`). Also the warm host time of ops.attention and of SDPA on tiny tensors, and (unless
--no-triton) a Triton peer written for this benchmark (triton_attention_kernel.py: Triton's tutorial kernel is
not in its wheel), checked against float64 like ours: triton_* fields and `ratio_vs_triton`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa

from tessera import ops

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_attention_kernel as triton_peer  # noqa: E402 - the Triton peer, written for this benchmark

CONFIGS = [  # (B, H, H_kv, S_q, S_k, D, causal)
    (16, 16, 16, 1024, 1024, 128, False),
    (4, 16, 16, 4096, 4096, 128, False),
    (1, 16, 16, 16384, 16384, 128, False),
    (8, 16, 16, 2048, 2048, 128, True),
    (4, 16, 16, 4096, 4096, 128, True),
    (1, 16, 16, 16384, 16384, 128, True),
    (4, 32, 32, 4096, 4096, 64, False),
    (2, 32, 32, 8192, 8192, 64, False),
    (2, 32, 8, 4096, 4096, 128, False),
    (16, 32, 8, 1, 8192, 128, False),
]
# Not in the table (and not in geomean_ratio): head dim 256, which FlashAttention-3 reports at up to
# 756 TFLOP/s; rows marked "extra", their own geomean in extra_geomean_ratio.
EXTRA = [
    (4, 8, 8, 4096, 4096, 256, False),
    (4, 8, 8, 4096, 4096, 256, True),
]
QUICK = [CONFIGS[1], CONFIGS[4], CONFIGS[8]]
O_TOL, LSE_TOL = 1e-2, 1e-3  # bf16 output: relative Frobenius error; LSE (f32): max absolute error


def name(cfg) -> str:
    B, H, H_kv, S_q, S_k, D, causal = cfg
    gqa = f" gqa {H}:{H_kv}" if H_kv != H else ""
    return f"B{B} H{H}{gqa} Sq{S_q} Sk{S_k} d{D}{' causal' if causal else ''}"


def reference(q, k, v, causal, heads, rows):
    """float64 O and LSE of q[0, heads][:, rows] against every key (top-left causal, as SDPA's is_causal)."""
    H, H_kv = q.shape[1], k.shape[1]
    kv = [h // (H // H_kv) for h in heads]
    qs = q[0, heads][:, rows].double()
    ks, vs = k[0, kv].double(), v[0, kv].double()
    s = qs @ ks.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.arange(k.shape[2], device=q.device)[None, :] > rows[:, None], float("-inf"))
    lse = torch.logsumexp(s, -1)
    return torch.softmax(s, -1) @ vs, lse


def peer(kind, q, k, v, causal, gqa):
    def run():
        with sdpa_kernel(kind):
            return sdpa(q, k, v, is_causal=causal, enable_gqa=gqa)
    return run


def bench(fn) -> float:
    """Median ms with L2 evicted by a read before each call (tessera.testing.do_bench; triton's zero_() flush
    leaves dirty lines whose write-backs land in the timed call: the tables before 2026-12-07's tenth session)."""
    from tessera.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=200, return_mode="median"))


def row(cfg, tune: bool = False) -> dict:
    B, H, H_kv, S_q, S_k, D, causal = cfg
    g = torch.Generator(device="cuda").manual_seed(S_q * 7 + S_k + D)
    q = torch.randn(B, H, S_q, D, device="cuda", generator=g).bfloat16()
    k = torch.randn(B, H_kv, S_k, D, device="cuda", generator=g).bfloat16()
    v = torch.randn(B, H_kv, S_k, D, device="cuda", generator=g).bfloat16()
    o, lse = torch.empty_like(q), torch.empty(B, H, S_q, device="cuda")
    ours = lambda: ops.attention(q, k, v, causal=causal, out=o, lse=lse)  # noqa: E731
    out = {"config": name(cfg), "shape": dict(zip(("B", "H", "H_kv", "S_q", "S_k", "D", "causal"), cfg))}
    flops = 4.0 * B * H * S_q * S_k * D / (2 if causal and S_q == S_k else 1)

    def measure(prefix: str, artifact: str) -> None:
        """Numerics against float64 on sampled rows, then the timing, as `prefix`_* fields."""
        o.fill_(float("nan"))
        ours()
        torch.cuda.synchronize()
        rec = ops.last_run()
        out[artifact] = {"arch": rec.arch, "hash": rec.artifact_hash, "config": str(rec.config), "block": rec.block}
        heads = sorted({0, H - 1})
        picked = torch.unique(torch.cat([torch.arange(min(128, S_q)), torch.arange(max(0, S_q - 128), S_q),
                                         torch.randint(0, S_q, (128,), generator=torch.Generator().manual_seed(1))]))
        rows = picked.to("cuda")
        ro, rl = reference(q, k, v, causal, heads, rows)
        got_o = o[0, heads][:, rows].double()
        errs = {"o_rel_err": float((got_o - ro).norm() / ro.norm()),
                "lse_max_err": float((lse[0, heads][:, rows].double() - rl).abs().max())}
        pre = "" if prefix == "ours" else prefix + "_"
        out.update({pre + k: v for k, v in errs.items()})
        out[pre + "correct"] = errs["o_rel_err"] <= O_TOL and errs["lse_max_err"] <= LSE_TOL
        out[f"{prefix}_ms"] = bench(ours)
        out[f"{prefix}_tflops"] = round(flops / out[f"{prefix}_ms"] / 1e9, 1)

    try:
        measure("ours", "artifact")
        if tune:
            res = ops.tune_attention(B, H, S_q, S_k, D, H_kv=H_kv, causal=causal, progress=False)
            out["tuned_config"] = res.config
            out["tuned_source"] = res.source
            out["tuning"] = [{"config": t.config, "ms": t.seconds and round(t.seconds * 1e3, 4), "error": t.error}
                             for t in res.timings]
            measure("tuned", "tuned_artifact")
    except Exception as err:  # noqa: BLE001 - a failing row is recorded, the others still run
        out["error"] = f"{type(err).__name__}: {err}"[:600]
        out["trace_tail"] = traceback.format_exc().splitlines()[-4:]
    for key, kind in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            fn = peer(kind, q, k, v, causal, H_kv != H)
            fn()
            torch.cuda.synchronize()
            out[f"{key}_ms"] = bench(fn)
            out[f"{key}_tflops"] = round(flops / out[f"{key}_ms"] / 1e9, 1)
        except Exception as err:  # noqa: BLE001
            out[f"{key}_error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]
    if triton_enabled:
        triton_row(out, q, k, v, causal, flops)
    peers = {k: out[f"{k}_tflops"] for k in ("cudnn", "flash") if f"{k}_tflops" in out}
    out["peer"] = "cudnn" if "cudnn" in peers else max(peers, key=peers.get) if peers else None
    if out["peer"] and "ours_tflops" in out:
        out["cudnn_tflops"] = out.get("cudnn_tflops", peers[out["peer"]])
        out["ratio"] = round(out["ours_tflops"] / peers[out["peer"]], 3)
    if out["peer"] and "tuned_tflops" in out:
        out["tuned_ratio"] = round(out["tuned_tflops"] / peers[out["peer"]], 3)
    if "triton_tflops" in out and "ours_tflops" in out:
        out["ratio_vs_triton"] = round(out["ours_tflops"] / out["triton_tflops"], 3)
    if S_q <= 16 and "ours_ms" in out:
        kv_bytes = 2 * B * H_kv * S_k * D * 2
        out["ours_kv_tb_s"] = round(kv_bytes / out["ours_ms"] / 1e9, 2)
        if "cudnn_ms" in out:
            out["cudnn_kv_tb_s"] = round(kv_bytes / out["cudnn_ms"] / 1e9, 2)
    return out


triton_enabled = True


def triton_row(out: dict, q, k, v, causal: bool, flops: float) -> None:
    """The Triton peer (benchmarks/triton_attention_kernel.py, autotuned on its first call): numerics of O and LSE
    against float64 on sampled rows of the first and last head, then its timing, as triton_* fields."""
    H, S_q = q.shape[1], q.shape[2]
    try:
        fn = lambda: triton_peer.attention(q, k, v, causal)  # noqa: E731
        o, lse = fn()
        torch.cuda.synchronize()
        heads = sorted({0, H - 1})
        rows = torch.unique(torch.cat([torch.arange(min(128, S_q)), torch.arange(max(0, S_q - 128), S_q)])).cuda()
        ro, rl = reference(q, k, v, causal, heads, rows)
        err = float((o[0, heads][:, rows].double() - ro).norm() / ro.norm())
        lse_err = float((lse[0, heads][:, rows].double() - rl).abs().max())
        out.update({"triton_o_rel_err": err, "triton_lse_max_err": lse_err,
                    "triton_correct": err <= O_TOL and lse_err <= LSE_TOL})
        out["triton_ms"] = bench(fn)
        out["triton_tflops"] = round(flops / out["triton_ms"] / 1e9, 1)
    except Exception as err:  # noqa: BLE001 - a peer that fails is recorded, the row still stands
        out["triton_error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]


def host_us(fn, calls=2000) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    return round(best, 2)


def host_times() -> dict:
    q, k, v = (torch.randn(1, 2, 128, 128, device="cuda").bfloat16() for _ in range(3))
    o, lse = torch.empty_like(q), torch.empty(1, 2, 128, device="cuda")
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        cud = host_us(lambda: sdpa(q, k, v))
    return {"ops_attention_us": host_us(lambda: ops.attention(q, k, v, out=o, lse=lse)), "sdpa_cudnn_us": cud}


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--variant", default=None, help="BLOCK_M,BLOCK_N,stages[,schedule[,overlap 0/1]] of the 128-row sm_90a config, for an "
                   "A/B run (not a shipped config: its rows are notes, not results)")
    p.add_argument("--schedule", default=None, help="cooperative or pingpong for every multi-consumer rule config "
                   "(their tiles and rings unchanged), for an A/B run")
    p.add_argument("--no-triton", action="store_true", help="leave out the Triton peer (its autotuning costs about "
                   "a minute over the table)")
    p.add_argument("--tune-decode", action="store_true", help="tune the decode rows only (S_q <= 16: the split-KV "
                   "candidates), a short --tune")
    p.add_argument("--tune", action="store_true", help="also tune each row (ops.tune_attention, cached under "
                   "$TESSERA_CACHE_DIR) and time ops.attention again with the winner: tuned_* fields")
    a = p.parse_args(argv)
    global triton_enabled
    triton_enabled = not a.no_triton
    if a.variant:
        from tessera.ops import configs

        bm, bn, stages, *rest = a.variant.split(",")
        schedule = rest[0] if rest else None
        overlap = bool(int(rest[1])) if len(rest) > 1 else None
        cfg = configs.AttentionConfig(int(bm), int(bn), int(stages), schedule, overlap)
        configs.HOPPER_ATTENTION = configs.HOPPER_ATTENTION_CAUSAL = cfg  # the rule's 128-row picks
    if a.schedule:
        import dataclasses

        from tessera.ops import configs

        for name in ("HOPPER_ATTENTION", "HOPPER_ATTENTION_CAUSAL", "HOPPER_ATTENTION_D64"):
            setattr(configs, name, dataclasses.replace(getattr(configs, name), schedule=a.schedule))
    rows = []
    for cfg in QUICK if a.quick else CONFIGS + EXTRA:
        r = row(cfg, a.tune or (a.tune_decode and cfg[3] <= 16))
        if cfg in EXTRA:
            r["extra"] = True
        rows.append(r)
        print(json.dumps(r), flush=True)
        torch.cuda.empty_cache()
    ratios = [r["ratio"] for r in rows if "ratio" in r and not r.get("extra")]
    tuned = [r["tuned_ratio"] for r in rows if "tuned_ratio" in r and not r.get("extra")]
    extra = [r["ratio"] for r in rows if "ratio" in r and r.get("extra")]
    doc = {"command": "python benchmarks/bench_hopper_attention.py" + (" --quick" if a.quick else "")
           + (f" --variant {a.variant}" if a.variant else "") + (f" --schedule {a.schedule}" if a.schedule else "")
           + (" --tune" if a.tune else "") + (" --tune-decode" if a.tune_decode else "")
           + (" --no-triton" if a.no_triton else ""),
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "rows": rows,
           "geomean_ratio": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3) if ratios else None,
           "tuned_geomean_ratio": round(math.exp(sum(map(math.log, tuned)) / len(tuned)), 3) if tuned else None,
           "extra_geomean_ratio": round(math.exp(sum(map(math.log, extra)) / len(extra)), 3) if extra else None,
           "host": host_times()}
    print(json.dumps({k: doc[k] for k in ("geomean_ratio", "tuned_geomean_ratio", "host")}))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
