"""`tessera.ops.attention` (flash attention forward, GQA) and `tessera.ops.linear_attention` (chunked, decay)."""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

from tessera.compiler import arrays, records
from tessera.compiler.driver import device_arch
from tessera.compiler.launch_shape import LaunchShape
from tessera.ir import diagnostics as D
from tessera.ops._common import Checker, Plan, last_run, memref, memref_at, plan_for, set_last, start
from tessera.ops._warm import REALS, remember, run_warm, warm_key
from tessera.ops import _hopper as H
from tessera.ops import _hopper_attention as HA
from tessera.ops.configs import HEAD_DIMS, HOPPER_HEAD_DIMS, attention_config, linear_attention_config

FLASH = "tessera.kernels.flash_attention:flash_attention"  # the kernels, loaded only to compile or interpret
LINEAR = "tessera.kernels.linear_attention:linear_attention"
COMBINE = "tessera.kernels.attention_combine:attention_combine"

DTYPES = ("bf16", "f16", "f32")
GRID_Y_LIMIT = 65535


def _qkv(ck: Checker, q, k, v):
    """The q, k, v ArrayViews: rank 4, one dtype of DTYPES (both attentions take them alike)."""
    Q, K, V = (ck.array(name, x, DTYPES, 4) for name, x in (("q", q), ("k", k), ("v", v)))
    if not Q.dtype == K.dtype == V.dtype:
        raise ck.fail(D.OPS_ARG_DTYPE, f"q is {Q.dtype}, k is {K.dtype}, v is {V.dtype}; they take one dtype")
    return Q, K, V


def attention(q, k, v, *, causal=False, scale=None, out=None, lse=None, lane="auto", stream=None):
    """Softmax attention forward: returns (o, lse) with o = softmax(scale * q @ k^T [+ causal mask]) @ v.

    q: [B, H, S_q, D]; k, v: [B, H_kv, S_k, D] with H a multiple of H_kv
    (grouped-query attention: query head h reads kv head h // (H // H_kv)).
    q, k, v share dtype bf16 or f16 (f32 runs on the reference lane; on the
    cuda lane it needs the f32 mma lowering). D is 64 or 128, or 256 where the
    sm_90a kernel runs (bf16/f16 device arrays TMA can read, on an sm_90 GPU)
    and on the reference lane.
    causal: query i sees keys j <= i (top-left aligned, as torch SDPA's is_causal).
    scale: the score scale, default 1/sqrt(D).
    Returns o [B, H, S_q, D] in q's dtype and lse [B, H, S_q] f32 (natural-log
    log-sum-exp of each row's scaled, masked scores; -inf for a row with no
    visible key, whose o is 0). out / lse: preallocated outputs (needed for
    __cuda_array_interface__ arrays other than cupy's).
    lane, stream, array kinds and provenance: as `tessera.ops.gemm`.
    """
    warm = None
    if causal.__class__ is bool and (scale is None or scale.__class__ in REALS):
        # the scale's sign picks the kernel (FOLD_SCALE for scale > 0), so it is part of the key
        warm = warm_key("attention", lane, (causal, scale is None, scale is None or scale > 0), (q, k, v, out, lse))
        if warm is not None:
            done = run_warm(warm, q, (out, lse), () if scale is None else (scale,), stream)
            if done is not None:
                return done[0], done[1]
    lane = start("attention", lane)
    ck = Checker("attention", lane)
    Q, Kv, V = _qkv(ck, q, k, v)
    B, H, S_q, Dh = Q.shape
    _, H_kv, S_k, _ = Kv.shape
    if Dh not in HOPPER_HEAD_DIMS:
        raise ck.fail(D.OPS_ARG_SHAPE, f"q has head dim {Dh}; the attention kernels take "
                                       f"{', '.join(map(str, HOPPER_HEAD_DIMS))}")
    if Kv.shape[0] != B or Kv.shape[3] != Dh:
        raise ck.fail(D.OPS_ARG_SHAPE, f"k has shape {list(Kv.shape)}; with q {list(Q.shape)} it must be "
                                       f"[{B}, H_kv, S_k, {Dh}]")
    if V.shape != Kv.shape:
        raise ck.fail(D.OPS_ARG_SHAPE, f"v has shape {list(V.shape)}; it must match k's {list(Kv.shape)}")
    if H_kv == 0 or H % H_kv:
        raise ck.fail(D.OPS_GQA_HEADS, f"q has {H} heads and k/v {H_kv}: {H} is not a multiple of {H_kv}")
    if B * H > GRID_Y_LIMIT:
        raise ck.fail(D.OPS_ARG_SHAPE, f"B * H = {B * H} programs exceed the grid's y limit {GRID_Y_LIMIT}")
    causal = ck.flag("causal", causal)
    scale_v = 1.0 / math.sqrt(Dh) if scale is None else ck.scalar("scale", scale)
    ck.stream(stream)
    inputs = (("q", q, Q), ("k", k, Kv), ("v", v, V))
    o, O = ck.output("out", out, q, Q, (B, H, S_q, Dh), Q.dtype, inputs)
    lse_a, L = ck.output("lse", lse, q, Q, (B, H, S_q), "f32", inputs + (("out", o, O),))

    device = ck.device or 0
    hopper = lane == "cuda" and _hopper_eligible(device, Q, Kv, V)
    if Dh not in HEAD_DIMS and lane == "cuda" and not hopper:
        raise ck.fail(D.OPS_ARG_SHAPE, f"head dim {Dh} runs only on the sm_90a kernel: bf16 or f16 q, k and v that "
                                       f"TMA can read (rank 4, contiguous rows, 16-byte aligned) on an sm_90 device; "
                                       f"here q is {Q.dtype} on {device_arch(device)}",
                      hint="the sm_80/sm_90 kernel spills at head dim 256; use head dim 64 or 128 there, or "
                           "lane='reference' to check numerics on the CPU")
    # Non-causal GQA on sm_90a: the `group` query heads of a kv head are one head of group * S_q rows (the same
    # contiguous memory), so a program's K/V steps serve all of them (decode: 4 rows of 64, not 1 of 128 per load).
    group = HA.group_of(H, H_kv, causal) if hopper else 1
    rows = S_q * group
    # sm_90a: pinned, tuned or by rule (_hopper_attention); else the table's one config
    cfg, source = HA.choose(B, H, H_kv, S_q, S_k, Dh, causal, Q.dtype) if hopper else (attention_config(rows, Dh),
                                                                                      None)
    even = Kv.shape[2] % cfg.BLOCK_N == 0  # no key-bound mask (EVEN_N)
    fold = scale_v > 0  # the scale folded into each exp2's FFMA (FOLD_SCALE)
    key = ("attention", lane, device, Q.dtype, Dh, causal, even, fold, cfg, hopper, source)
    plan = plan_for(key, lambda: _build_attention(lane, device, Q.dtype, Dh, causal, even, fold, cfg, hopper, source))
    values = []
    q_rows, lse_rows = (B, H // group, rows, Dh), (B, H // group, rows)
    if cfg.kv_splits > 1:
        _run_key_slices(plan, cfg, lane, device, ck.launch_stream(stream), Q.dtype, (q, Q), (k, Kv), (v, V),
                        (o, O), (lse_a, L), q_rows, scale_v)
        return o, lse_a
    for x, xv, shape in ((q, Q, q_rows), (k, Kv, None), (v, V, None), (o, O, q_rows), (lse_a, L, lse_rows)):
        memref(values, x, xv, shape)
    values.append(scale_v)
    fargs = [q, k, v, o, lse_a, scale_v] if lane == "reference" else None
    grid = (-(-rows // cfg.BLOCK_M), B * H // group)  # FA.grid, inlined
    plan.run(grid, values, fargs, ck.launch_stream(stream), device)
    if warm is not None and lane == "cuda":  # in the order of `warm`'s addresses: q, k, v, out, lse
        remember(warm, plan, grid, device, values, (Q, Kv, V, O, L), ((0, 4), (1, 4), (2, 4), (3, 4), (4, 3)),
                 (scale is not None,), ((3, 0 if out is None else None, (0, 1, 2)),
                                        (4, 0 if lse is None else None, (0, 1, 2, 3))), arrays.stream_reader(q, Q))
    return o, lse_a


def _run_key_slices(plan: Plan, cfg, lane, device: int, stream, dtype: str, q, k, v, o, lse, q_rows: tuple,
                    scale: float) -> None:
    """Split-KV ("flash decoding"): flash_attention writes each key slice's f32 partials into a runtime-owned
    buffer (one per stream, as split-K's scratch: launches on a stream are ordered; a capturing stream takes
    torch's allocator), then attention_combine merges them into o and lse on the same stream. The record names
    the slices' kernel and, in its config, the merge's (`combine_kernel`, `combine_artifact`)."""
    from tessera.compiler import testing
    from tessera.runtime.scratch import stream_key

    B, heads, rows, Dh = q_rows
    splits = cfg.kv_splits
    parts = (B, heads * splits, rows, Dh)
    o_bytes = 4 * math.prod(parts)
    base = _partials().address(device, o_bytes + 4 * math.prod(parts[:3]), testing.backend() is not None,
                               stream_key(stream))
    partials: list = []  # O_part, LSE_part: the slices' outputs and the merge's inputs
    memref_at(partials, base, parts)
    memref_at(partials, base + o_bytes, parts[:3])
    values = []
    for (x, xv), shape in ((q, q_rows), (k, None), (v, None)):
        memref(values, x, xv, shape)
    plan.run((-(-rows // cfg.BLOCK_M) * splits, B * heads), values + partials + [scale], None, stream, device)
    slices = last_run()
    bm = 16 if rows <= 16 else 64  # the merge's rows a program: a decode's few packed rows waste less at 16
    merge = plan_for(("attention_combine", lane, device, dtype, Dh, splits, bm),
                     lambda: _build_combine(lane, device, dtype, Dh, splits, bm))
    values = list(partials)
    memref(values, o[0], o[1], q_rows)
    memref(values, lse[0], lse[1], q_rows[:3])
    merge.run((-(-rows // bm), B * heads), values, None, stream, device)
    merged = last_run()
    set_last(dataclasses.replace(slices, config={**slices.config, "combine_kernel": merged.kernel,
                                                 "combine_artifact": merged.artifact_hash},
                                 synchronized=merged.synchronized))


def _build_combine(lane, device, dtype, Dh, splits, bm) -> Plan:
    T, meta = records.tensor, {"BLOCK_M": bm, "SPLITS": splits}
    specs = (T(("B", "HS", "S", Dh), "f32"), T(("B", "HS", "S"), "f32"), T(("B", "H", "S", Dh), dtype),
             T(("B", "H", "S"), "f32"))
    return _plan("attention_combine", COMBINE, specs, meta, meta, lane, device, {})


@lru_cache(maxsize=1)
def _partials():
    """The runtime buffer of key-slice partials (one per device and stream), made on first use."""
    from tessera.runtime.scratch import Scratch

    return Scratch("attention key-slice partials")


def _hopper_eligible(device: int, Q, K, V) -> bool:
    """The sm_90a kernel runs on an sm_90 device when TMA can read q, k and v (bf16/f16, rank 4, non-empty:
    S_k = 0 runs the sm_90 kernel, which writes O = 0 and LSE = -inf with no key to load)."""
    return (device_arch(device) == "sm_90" and Q.dtype in H.TMA_DTYPES
            and all(H.tma_ok(x, 4) for x in (Q, K, V)))


def kernel_specs(dtype, Dh, causal, even, fold, cfg, hopper: bool):
    """(specs, meta, knobs) of the flash_attention kernel ops.attention compiles: what `tune_attention` compiles
    too, so a tuned candidate is the very kernel a call then loads from the cache."""
    T = records.tensor
    q, kv = T(("B", "H", "S", Dh), dtype), T(("B", "H_kv", "S_k", Dh), dtype)
    if cfg.kv_splits > 1:  # O and LSE are the slices' f32 partials, H * kv_splits heads of them
        outs = (T(("B", "HS", "S", Dh), "f32"), T(("B", "HS", "S"), "f32"))
    else:
        outs = (q, T(("B", "H", "S"), "f32"))
    specs = (q, kv, kv, *outs, records.scalar("f32"))
    meta = {**cfg.meta(), "CAUSAL": causal, "EVEN_N": even, "FOLD_SCALE": fold}
    knobs = {"stages": cfg.stages, **({"schedule": cfg.schedule} if hopper and cfg.schedule else {}),
             **({"overlap": cfg.overlap} if hopper and cfg.overlap is not None else {}),
             **({"tiles": cfg.tiles} if hopper and cfg.tiles not in (None, "static") else {})}
    return specs, meta, knobs


def _build_attention(lane, device, dtype, Dh, causal, even, fold, cfg, hopper, source) -> Plan:
    specs, meta, knobs = kernel_specs(dtype, Dh, causal, even, fold, cfg, hopper)
    config = {**meta, **knobs, **({"kv_splits": cfg.kv_splits} if cfg.kv_splits > 1 else {}),
              **({"config_source": source} if source else {})}
    return _plan("attention", FLASH, specs, meta, config, lane, device, knobs,
                 "sm_90a" if hopper else None)


def linear_attention(q, k, v, g=None, *, out=None, lane="auto", stream=None):
    """Causal linear attention forward with optional per-head decay; returns o [B, H, T, D_v].

    o[b, h, t] = sum_{s <= t} exp(g[h] * (t - s)) * (q[b, h, t] . k[b, h, s]) * v[b, h, s]
    q, k: [B, H, T, D_k]; v: [B, H, T, D_v]; one dtype, bf16 or f16 (f32 as
    for attention); D_k and D_v are 64 or 128. No score scale is applied
    (fla's chunk_linear_attn applies D_k**-0.5 by default: pass q scaled, or
    scale=1 there). g: [H] (or [1, H]) f32 log-decay per step (usually <= 0),
    or None for no decay. o has v's dtype. As in fla's chunk kernels the
    f32 intra-chunk scores and the carried state are rounded to the input
    dtype before their second product.
    out, lane, stream, array kinds and provenance: as `tessera.ops.gemm`.
    """
    warm = warm_key("linear_attention", lane, (), (q, k, v, out, g))
    if warm is not None:
        done = run_warm(warm, v, (out,), (), stream)
        if done is not None:
            return done[0]
    lane = start("linear_attention", lane)
    ck = Checker("linear_attention", lane)
    Q, Kk, V = _qkv(ck, q, k, v)
    B, H, T, D_k = Q.shape
    D_v = V.shape[3]
    if Kk.shape != Q.shape:
        raise ck.fail(D.OPS_ARG_SHAPE, f"k has shape {list(Kk.shape)}; it must match q's {list(Q.shape)}")
    if V.shape[:3] != (B, H, T):
        raise ck.fail(D.OPS_ARG_SHAPE, f"v has shape {list(V.shape)}; it must be [{B}, {H}, {T}, D_v]")
    for name, d in (("D_k (q's last dim)", D_k), ("D_v (v's last dim)", D_v)):
        if d not in HEAD_DIMS:
            raise ck.fail(D.OPS_ARG_SHAPE, f"{name} is {d}; the kernel takes {' or '.join(map(str, HEAD_DIMS))}")
    G = ck.array("g", g, ("f32",), (1, 2)) if g is not None else None
    if G is not None and G.shape not in ((H,), (1, H)):
        raise ck.fail(D.OPS_ARG_SHAPE, f"g has shape {list(G.shape)}; it must be [{H}] or [1, {H}]")
    ck.stream(stream)
    inputs = (("q", q, Q), ("k", k, Kk), ("v", v, V), ("g", g, G))
    o, O = ck.output("out", out, v, V, (B, H, T, D_v), V.dtype, inputs)

    cfg = linear_attention_config(D_k, D_v)
    device = ck.device or 0
    key = ("linear_attention", lane, device, Q.dtype, D_k, D_v, G is not None, cfg)
    plan = plan_for(key, lambda: _build_linear(lane, device, Q.dtype, D_k, D_v, G is not None, cfg))
    g_2d = None if g is None else g.reshape(1, H) if G.ptr is None else g
    values = []
    for x, xv in ((q, Q), (k, Kk), (v, V), (o, O)):
        memref(values, x, xv)
    if G is not None:
        memref(values, g_2d, G, (1, H))
    fargs = [x for x in (q, k, v, o, g_2d) if x is not None] if lane == "reference" else None
    grid = (B * H, 1 if cfg.BLOCK_V is None else -(-D_v // cfg.BLOCK_V))  # LA.grid, inlined
    plan.run(grid, values, fargs, ck.launch_stream(stream), device)
    if warm is not None and lane == "cuda":  # in the order of `warm`'s addresses: q, k, v, out, g
        memrefs = ((0, 4), (1, 4), (2, 4), (3, 4)) + (((4, 2),) if G is not None else ())  # g goes in as [1, H]
        remember(warm, plan, grid, device, values, (Q, Kk, V, O, G), memrefs, (),
                 ((3, 2 if out is None else None, (0, 1, 2, 4)),), arrays.stream_reader(q, Q))
    return o


def _build_linear(lane, device, dtype, D_k, D_v, decay, cfg) -> Plan:
    T = records.tensor
    qk, v = T(("B", "H", "T", D_k), dtype), T(("B", "H", "T", D_v), dtype)
    specs = (qk, qk, v, v, T((1, "H"), "f32") if decay else None)
    meta = cfg.meta()
    return _plan("linear_attention", LINEAR, specs, meta, {**meta, "stages": cfg.stages, "decay": decay},
                 lane, device, {"stages": cfg.stages})


def _plan(op, kernel: str, specs, meta, config, lane, device, knobs: dict, arch=None) -> Plan:
    """`kernel`: its import path (`records.resolve`), loaded only to compile or to interpret."""
    if lane == "cuda":
        compiled = records.compiled(kernel, specs, meta, arch=arch or device_arch(device), shape=LaunchShape(**knobs))
        return Plan(op, lane, None, compiled, config)
    return Plan(op, lane, records.resolve(kernel).trace(*records.specs_of(specs), **meta), None, config)
