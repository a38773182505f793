"""tessera.ops.attention on Hopper: which config the sm_90a kernel launches, pinned, tuned or by rule.

As for the sm_90a GEMM (`_hopper.py`), the config comes from, in order: a pin
(`tessera.ops.autotune.pin("attention_sm90a", {"BLOCK_M": 128, "BLOCK_N": 128, "stages": 3, "schedule": "cooperative"})`
or TESSERA_PIN_ATTENTION_SM90A=BLOCK_M=128,BLOCK_N=128,stages=3,schedule=cooperative), the autotune cache
(`tune_attention(...)` measures CANDIDATES on the device and keeps the winner per
key on disk; with TESSERA_AUTOTUNE=1 the first call of a new key tunes itself),
else the rule in `tessera.ops.configs.attention_config`. Every candidate compiles
without local memory and runs on the host emulator in CI
(tests/unit/test_attention_sm90a.py; the choice itself: test_attention_tuning.py)
and against float64 on the GPU (tests/gpu/test_ops_hopper_gpu.py).

The key is what moves the winner: rows per program column (S_q, times the GQA group
ops.attention packs into rows), S_k, the head dim, causal, dtype, and the number of
(batch, kv head) columns (with rows, the tile count that fills the waves).
"""

from __future__ import annotations

import math
import os

from tessera.ir import diagnostics as diag
from tessera.ops import autotune
from tessera.ops._common import OpsError
from tessera.ops.configs import AttentionConfig, attention_config

OP = "attention_sm90a"
# BLOCK_M = 128: two consumer warpgroups of 64 query rows; 64: one (decode, few rows). stages: the K/V ring.
# schedule: "pingpong" makes the consumers take turns at issuing each step's wgmmas (warp-scheduler barriers), so
# one's softmax runs under another's GEMMs; "cooperative" lets them issue freely. Every head dim:
# tiles: "dynamic" makes a persistent CTA take its next tile from a launch-wide counter (warp-specialize's dynamic
# tile scheduler), so no SM is left with a share of long tiles: causal tiles run 1 to S/BLOCK_N key steps (H100,
# alternating A/B: causal 2k/4k/16k 13%/8%/5% less time), non-causal 0-2% less. One-consumer (decode) configs
# have about a tile per SM and stay static.
CANDIDATES = [
    {"BLOCK_M": 128, "BLOCK_N": 128, "stages": 3, "schedule": "cooperative", "tiles": "dynamic"},
    {"BLOCK_M": 128, "BLOCK_N": 128, "stages": 3, "schedule": "pingpong", "tiles": "dynamic"},
    {"BLOCK_M": 128, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "dynamic"},
    {"BLOCK_M": 128, "BLOCK_N": 64, "stages": 4, "schedule": "cooperative", "tiles": "dynamic"},
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative"},
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 3, "schedule": "cooperative"},
    # decode: one consumer holds a K/V step while it computes, so only the other ring slots load; four 32 KB
    # steps keep more of the stream in flight than two or three 64 KB ones (H200 decode streamed 3.75 TB/s
    # against cuDNN's 3.97 with 2 x 128 keys; unmeasured as of 2026-12-06: the tuner decides)
    {"BLOCK_M": 64, "BLOCK_N": 64, "stages": 4, "schedule": "cooperative"},
    # decode, split-KV (flash decoding): (batch, kv head) programs alone fill 128 of 132 SMs at the decode row;
    # slices of the keys make more, smaller programs, merged by attention_combine (unmeasured as of 2026-12-06)
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "dynamic", "kv_splits": 2},
    {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "dynamic", "kv_splits": 4},
]
# d = 64 only: three consumer warpgroups (160 registers each) fit a 64 x 64 O, a 64 x 128 S and P; at d = 128 they
# spill. Half the math per K/V byte of d = 128, so more rows share each K/V step.
CANDIDATES_D64 = [
    {"BLOCK_M": 192, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "dynamic"},
    {"BLOCK_M": 192, "BLOCK_N": 128, "stages": 3, "schedule": "cooperative", "tiles": "dynamic"},
    {"BLOCK_M": 192, "BLOCK_N": 128, "stages": 3, "schedule": "pingpong", "tiles": "dynamic"},
]
# d = 256 (a 64 x 256 accumulator per consumer, 32 KB per 64-key K or V step): the tiles that fit shared memory
# with no local memory; pingpong and the decode ring of 3 are the tuner's to judge (unmeasured as of 2026-12-06)
CANDIDATES_D256 = [
    {"BLOCK_M": 128, "BLOCK_N": 64, "stages": 2, "schedule": "cooperative", "tiles": "dynamic"},
    {"BLOCK_M": 128, "BLOCK_N": 64, "stages": 2, "schedule": "pingpong", "tiles": "dynamic"},
    {"BLOCK_M": 64, "BLOCK_N": 64, "stages": 2, "schedule": "cooperative"},
    {"BLOCK_M": 64, "BLOCK_N": 64, "stages": 3, "schedule": "cooperative"},
]
# causal d = 256: two 128-row consumers spill with the mask (64-72 B of stack), so one 64-row consumer, its many
# short tiles balanced by the dynamic tile counter
CANDIDATES_D256_CAUSAL = [
    {"BLOCK_M": 64, "BLOCK_N": 64, "stages": 2, "schedule": "cooperative", "tiles": "dynamic"},
    {"BLOCK_M": 64, "BLOCK_N": 64, "stages": 3, "schedule": "cooperative", "tiles": "dynamic"},
    # decode (<= 64 query rows: a tile per program, nothing to balance): the rule's pick there, static
    {"BLOCK_M": 64, "BLOCK_N": 64, "stages": 2, "schedule": "cooperative"},
]
_ALLOWED = {"BLOCK_M": (64, 128), "BLOCK_N": (64, 128), "stages": (1, 2, 3, 4), "schedule": ("cooperative", "pingpong")}
_OPTIONAL = {"tiles": ("static", "dynamic"), "kv_splits": (1, 2, 4, 8)}  # left out: static (pins and cache entries written before the knob)


def candidates(Dh: int, causal: bool = False) -> list[dict]:
    """The configs tune_attention measures at head dim Dh. Causal takes no pingpong: its masked steps and the
    turn barriers' ids leave no registers for the 16-byte O stores (ptxas spills 8-24 bytes), and the
    two-consumer turns gained nothing at d = 128 (v11 notes)."""
    if Dh == 256:
        return list(CANDIDATES_D256_CAUSAL if causal else CANDIDATES_D256)
    found = CANDIDATES + (CANDIDATES_D64 if Dh == 64 else [])
    return [c for c in found if not (causal and (c["schedule"] == "pingpong" or c.get("kv_splits", 1) > 1))]


def config_of(config: dict, source: str = "pin", Dh: int = 128) -> AttentionConfig:
    """An AttentionConfig from a candidate, pin or cache dict; values the kernel does not take at head dim Dh
    are OPS_AUTOTUNE_PIN_INVALID (a pin is the only way one gets here)."""
    allowed = {**_ALLOWED, "BLOCK_M": _ALLOWED["BLOCK_M"] + ((192,) if Dh == 64 else ()),
               **({"BLOCK_N": (64,), "stages": (1, 2, 3)} if Dh == 256 else {})}
    bad = [f"{k}={config.get(k)!r}" for k, values in allowed.items() if config.get(k) not in values]
    bad += [f"{k}={config[k]!r}" for k, values in _OPTIONAL.items() if k in config and config[k] not in values]
    if not bad and config.get("schedule") == "pingpong" and config.get("BLOCK_M") == 64:
        bad = ["schedule='pingpong' with BLOCK_M=64 (one consumer warpgroup: no one to take turns with)"]
    if bad or not set(allowed) <= set(config) <= set(allowed) | set(_OPTIONAL):
        extra = sorted(set(config) - set(allowed) - set(_OPTIONAL))
        raise OpsError(diag.OPS_AUTOTUNE_PIN_INVALID, OP, f"the {source} config {config!r} has "
                       + ", ".join(bad + [f"unknown {k}" for k in extra]) + f" (head dim {Dh})",
                       hint="BLOCK_M takes 64 or 128 (192 at head dim 64), BLOCK_N 64 or 128 (64 at head dim 256), "
                            "stages 1 to 4 (3 at head dim 256), "
                            "schedule cooperative or pingpong (two or more consumers: BLOCK_M >= 128), tiles (optional) "
                            "static or dynamic, kv_splits (optional, non-causal) 1, 2, 4 or 8, e.g. "
                            "TESSERA_PIN_ATTENTION_SM90A=BLOCK_M=128,BLOCK_N=128,stages=3,schedule=cooperative")
    return AttentionConfig(config["BLOCK_M"], config["BLOCK_N"], config["stages"], config["schedule"],
                           tiles=config.get("tiles", "static"), kv_splits=config.get("kv_splits", 1))


def group_of(H: int, H_kv: int, causal: bool) -> int:
    """How many query heads ops.attention packs into one head of rows: a non-causal GQA group shares its kv
    head's K/V steps (the same contiguous memory); causal rows keep their own diagonal, so no packing."""
    return 1 if causal else H // H_kv


def tune_key(B: int, H: int, H_kv: int, S_q: int, S_k: int, Dh: int, causal: bool, dtype: str) -> dict:
    """Shape buckets (rows = S_q x the packed GQA group; S_k; columns = the (batch, head) programs' count), head
    dim, causal, dtype, arch and the toolchain (a new NVRTC re-tunes)."""
    from tessera.target.nvidia.toolchain.nvrtc import toolchain_versions

    group = group_of(H, H_kv, causal)
    return {"rows": autotune.shape_bucket(S_q * group), "S_k": autotune.shape_bucket(S_k),
            "columns": autotune.shape_bucket(B * H // group), "D": Dh, "causal": bool(causal), "dtype": dtype,
            "arch": "sm_90a", "toolchain": ";".join(f"{k}={v}" for k, v in toolchain_versions())}


def choose(B: int, H: int, H_kv: int, S_q: int, S_k: int, Dh: int, causal: bool,
           dtype: str) -> tuple[AttentionConfig, str]:
    """(config, source): pinned, else cached, else (TESSERA_AUTOTUNE=1) measured now, else the default rule."""
    found = autotune.lookup(OP, tune_key(B, H, H_kv, S_q, S_k, Dh, causal, dtype), candidates(Dh, causal))
    if found is None and os.environ.get("TESSERA_AUTOTUNE") == "1":
        found = tune_attention(B, H, S_q, S_k, Dh, H_kv=H_kv, causal=causal, dtype=dtype)
    if found is None:
        return attention_config(S_q * group_of(H, H_kv, causal), Dh, hopper=True, causal=causal), "default"
    return config_of(found.config, found.source, Dh), found.source


def tune_attention(B: int, H: int, S_q: int, S_k: int, Dh: int, *, H_kv: int | None = None, causal: bool = False,
                   dtype: str = "bf16", progress: bool | None = None, runs: int = 10):
    """Measure CANDIDATES for attention of q [B, H, S_q, Dh] and k, v [B, H_kv, S_k, Dh] on the GPU; cache and
    return the TuneResult (under the key ops.attention looks up for such a call).

    Needs torch. Each candidate is compiled, run on fresh random inputs, checked against torch SDPA (a wrong
    result fails the candidate) and timed (median of `runs` CUDA-event timings, L2 evicted by a read before
    each: `_cold_l2`).
    """
    H_kv = H if H_kv is None else H_kv
    for name, v in (("B", B), ("H", H), ("H_kv", H_kv), ("S_q", S_q), ("S_k", S_k)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise OpsError(diag.OPS_AUTOTUNE_INPUT, "tune_attention", f"{name}={v!r} is not an int >= 1")
    if H % H_kv:
        raise OpsError(diag.OPS_AUTOTUNE_INPUT, "tune_attention", f"H={H} is not a multiple of H_kv={H_kv}")
    if dtype not in ("bf16", "f16") or Dh not in (64, 128, 256):
        raise OpsError(diag.OPS_AUTOTUNE_INPUT, "tune_attention", f"dtype {dtype!r}, D={Dh}: the sm_90a kernel "
                                                                  "takes bf16 or f16 and D 64, 128 or 256")
    try:
        import torch
    except ImportError:  # pragma: no cover - the GPU image has torch
        raise OpsError(diag.OPS_AUTOTUNE_INPUT, "tune_attention", "tune_attention measures with torch CUDA "
                                                                  "tensors; torch is not installed") from None
    from tessera.compiler import records
    from tessera.compiler.launch_shape import LaunchShape
    from tessera.ops._attention import FLASH, kernel_specs
    from tessera.ops._cold_l2 import ColdL2, cold_median_seconds

    group = group_of(H, H_kv, causal)
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    q = torch.randn(B, H, S_q, Dh, device="cuda").to(tdt)
    k, v = (torch.randn(B, H_kv, S_k, Dh, device="cuda").to(tdt) for _ in range(2))
    o, lse = torch.empty_like(q), torch.empty(B, H, S_q, device="cuda")
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=H != H_kv).float()
    cold = ColdL2(torch)
    scale = 1.0 / math.sqrt(Dh)
    rows, heads = S_q * group, H // group  # ops.attention's view: a group of query heads is one head of rows
    args = [q.view(B, heads, rows, Dh), k, v, o.view(B, heads, rows, Dh), lse.view(B, heads, rows), scale]

    def check(config: dict) -> None:
        err = float((o.float() - want).norm() / want.norm())
        if not err < 2e-2:
            raise OpsError(diag.OPS_AUTOTUNE_FAILED, "tune_attention", f"{config}: relative error {err:.3g} "
                                                                       "against torch SDPA")

    def measure_key_slices(config: dict) -> float:
        """Two launches and the partials' buffer: timed as ops.attention runs them, with the candidate pinned."""
        from tessera.ops._attention import attention

        stream = torch.cuda.current_stream()
        autotune.pin(OP, config)
        try:
            run = lambda: attention(q, k, v, causal=causal, scale=scale, out=o, lse=lse)  # noqa: E731
            run()
            torch.cuda.synchronize()
            check(config)
            return cold_median_seconds(run, runs, cold, stream)
        finally:
            autotune.unpin(OP)

    def measure(config: dict) -> float:
        cfg = config_of(config, "candidate", Dh)
        if cfg.kv_splits > 1:
            return measure_key_slices(config)
        specs, meta, knobs = kernel_specs(dtype, Dh, causal, S_k % cfg.BLOCK_N == 0, True, cfg, hopper=True)
        ck = records.compiled(FLASH, specs, meta, arch="sm_90a", shape=LaunchShape(**knobs))
        grid = (-(-rows // cfg.BLOCK_M), B * heads)
        stream = torch.cuda.current_stream()
        ck.launch(grid, args, stream=stream, sync=True)  # bounded: a candidate that hangs is RUNTIME_LAUNCH_TIMEOUT
        check(config)
        return cold_median_seconds(lambda: ck.launch(grid, args, stream=stream), runs, cold, stream)

    found = candidates(Dh, causal)
    untuned = attention_config(rows, Dh, hopper=True, causal=causal)
    baseline = next((c for c in found if config_of(c, "candidate", Dh) == untuned), None)
    return autotune.tune(OP, tune_key(B, H, H_kv, S_q, S_k, Dh, causal, dtype), found, measure, progress=progress,
                         finalists=autotune.FINALISTS, rounds=autotune.ROUNDS, baseline=baseline)
