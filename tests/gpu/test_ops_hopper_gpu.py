"""tessera.ops.gemm on an sm_90 device: bf16/f16 products in every layout take the sm_90a kernel, others sm_90.

Outputs start as NaN; results against float64; last_run() must name the arch and config that ran.
"""

from __future__ import annotations

import numpy as np
import pytest

import tessera.ops as ops
from tessera.kernels import gemm as G
from tessera.ops import _hopper as H
from tessera.ops._hopper import HOPPER_CANDIDATES
from tessera.reference.oracles import error_bound, rel_error

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("sm90_fresh_cache")  # off sm_90: skipped; an empty cache: default configs


def q(t):
    torch.cuda.synchronize()
    return t.float().cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("M, N, K", [(1000, 1000, 1000), (4096, 4096, 4096), (128, 1024, 8192)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_trans_b_products_run_the_sm90a_kernel(M, N, K, dtype):
    a = (torch.randn((M, K), device="cuda") / K ** 0.5).to(dtype)
    w = torch.randn((N, K), device="cuda").to(dtype)
    bias = torch.randn((N,), device="cuda").to(dtype)
    out = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)
    ops.gemm(a, w, trans_b=True, bias=bias, activation="gelu", out=out)
    rec = ops.last_run()
    assert rec.arch == "sm_90a" and rec.lane == "cuda" and rec.config["schedule"] in ("cooperative", "pingpong")
    ref = G.reference_gemm(q(a), q(w), None, q(bias).reshape(1, N), None, 1.0, trans_b=True, activation="gelu")
    name = "bf16" if dtype == torch.bfloat16 else "f16"
    assert rel_error(q(out), ref) <= error_bound(name)
    ops.gemm(a, w, trans_b=True, bias=bias, activation="gelu", out=out)  # warm path: same answer
    assert rel_error(q(out), ref) <= error_bound(name)


@pytest.mark.parametrize("config", [c for c in HOPPER_CANDIDATES if c.get("swap_ab")],
                         ids=lambda c: f"{c['BM']}x{c['BN']}-s{c['stages']}-k{c['splitk']}")
@pytest.mark.parametrize("trans_b", [True, False], ids=["NT", "NN"])
def test_every_swapped_candidate_runs_pinned(config, trans_b):
    """Each swapped config the tuner may pick, pinned, through ops at M = 64, N = 4096 + 64 (a ragged last tile
    for 128-row tiles), K = 4096, with a bias along C^T's rows; the warm path; against float64."""
    from tessera.ops import _hopper as H
    from tessera.ops import autotune

    M, N, K = 64, 4160, 4096
    autotune.pin(H.OP, config)
    try:
        a = (torch.randn((M, K), device="cuda") / K ** 0.5).bfloat16()
        w = torch.randn((N, K) if trans_b else (K, N), device="cuda").bfloat16()
        bias = torch.randn((N,), device="cuda").bfloat16()
        ref = G.reference_gemm(q(a), q(w), None, q(bias).reshape(1, N), None, 1.0, trans_b=trans_b)
        for _ in range(2):
            out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            ops.gemm(a, w, trans_b=trans_b, bias=bias, out=out)
            rec = ops.last_run()
            assert rec.config["swap_ab"] is True and rec.config["splitk"] == config["splitk"]
            assert rel_error(q(out), ref) <= error_bound("bf16")
    finally:
        autotune.unpin(H.OP)


@pytest.mark.parametrize("M", [1, 16, 24, 64])
@pytest.mark.parametrize("N, K", [(4096, 4096), (14336, 4096), (1000, 1000)])
@pytest.mark.parametrize("trans_a, trans_b", [(False, True), (False, False)], ids=["NT", "NN"])
def test_decode_products_run_swapped(M, N, K, trans_a, trans_b):
    """M <= SWAP_DEFAULT_M (decode) with nothing tuned: C^T = op(b)^T op(a)^T through C's transposed view (issue
    16); the swap configs of BN 16, 32 and 64; the warm path, against float64."""
    a = (torch.randn((K, M) if trans_a else (M, K), device="cuda") / K ** 0.5).bfloat16()
    w = torch.randn((N, K) if trans_b else (K, N), device="cuda").bfloat16()
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    ops.gemm(a, w, trans_a=trans_a, trans_b=trans_b, activation="relu", out=out)
    rec = ops.last_run()
    assert rec.arch == "sm_90a" and rec.config.get("swap_ab", False) == (M <= H.SWAP_DEFAULT_M)
    ref = G.reference_gemm(q(a), q(w), None, None, None, 1.0, trans_a=trans_a, trans_b=trans_b, activation="relu")
    assert rel_error(q(out), ref) <= error_bound("bf16")
    out.fill_(float("nan"))
    ops.gemm(a, w, trans_a=trans_a, trans_b=trans_b, activation="relu", out=out)  # warm path (a replay next)
    ops.gemm(a, w, trans_a=trans_a, trans_b=trans_b, activation="relu", out=out)
    assert rel_error(q(out), ref) <= error_bound("bf16")


@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (True, True)], ids=["NN", "TN", "TT"])
# 296 x 264 x 200: ragged against every tile, and A stored [K, M] keeps a 16-byte row pitch (592 bytes) that TMA can
# read (300 columns would be 600 bytes: the sm_90 kernel, by test_operands_tma_cannot_read_take_the_sm90_kernel)
@pytest.mark.parametrize("M, N, K", [(1000, 1000, 1000), (4096, 4096, 4096), (296, 264, 200), (128, 8192, 8192),
                                     (1024, 1024, 16384), (64, 4096, 4096)])  # split-K scatter; unswapped M = 64
def test_every_layout_runs_the_sm90a_kernel(M, N, K, trans_a, trans_b):
    """A plain a@b (B as [K, N]) and transposed A: MN-major operands, the default config, ragged shapes; the
    output starts as NaN, bias and gelu fused."""
    a = (torch.randn((M, K), device="cuda") / K ** 0.5).bfloat16()
    b = torch.randn((K, N), device="cuda").bfloat16()
    A = a.t().contiguous() if trans_a else a
    B = b.t().contiguous() if trans_b else b
    bias = torch.randn((N,), device="cuda").bfloat16()
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    ops.gemm(A, B, trans_a=trans_a, trans_b=trans_b, bias=bias, activation="gelu", out=out)
    rec = ops.last_run()
    assert rec.arch == "sm_90a" and rec.lane == "cuda"
    assert (rec.config["TRANS_A"], rec.config["TRANS_B"]) == (trans_a, trans_b)
    ref = G.reference_gemm(q(a), q(b), None, q(bias).reshape(1, N), None, 1.0, activation="gelu")
    assert rel_error(q(out), ref) <= error_bound("bf16")
    assert rel_error(q(ops.gemm(A, B, trans_a=trans_a, trans_b=trans_b)), q(a) @ q(b)) <= error_bound("bf16")


@pytest.mark.parametrize("M", [1, 16, 64])
@pytest.mark.parametrize("N, K", [(4096, 4096), (1000, 1000)])
@pytest.mark.parametrize("trans_b", [True, False], ids=["NT", "NN"])
def test_decode_products_with_a_bias_run_swapped(M, N, K, trans_b):
    """nn.Linear at decode: a bias swaps too, added along C^T's rows (BIAS_AXIS="m", a column-stride-0 view),
    before a gelu; the warm path and a replay, against float64."""
    a = (torch.randn((M, K), device="cuda") / K ** 0.5).bfloat16()
    w = torch.randn((N, K) if trans_b else (K, N), device="cuda").bfloat16()
    bias = torch.randn((N,), device="cuda").bfloat16()
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    ops.gemm(a, w, trans_b=trans_b, bias=bias, activation="gelu", out=out)
    rec = ops.last_run()
    swapped = M <= H.SWAP_DEFAULT_M  # unswapped above it: the bias along the columns
    assert rec.arch == "sm_90a" and rec.config.get("swap_ab", False) == swapped
    assert rec.config.get("BIAS_AXIS", "n") == ("m" if swapped else "n")
    ref = G.reference_gemm(q(a), q(w), None, q(bias).reshape(1, N), None, 1.0, trans_b=trans_b, activation="gelu")
    assert rel_error(q(out), ref) <= error_bound("bf16")
    out.fill_(float("nan"))
    ops.gemm(a, w, trans_b=trans_b, bias=bias, activation="gelu", out=out)  # warm path (a replay next)
    ops.gemm(a, w, trans_b=trans_b, bias=bias, activation="gelu", out=out)
    assert rel_error(q(out), ref) <= error_bound("bf16")


@pytest.mark.parametrize("M", [1, 64])
@pytest.mark.parametrize("epilogue", ["c", "c_in_place", "residual"])
def test_decode_products_reading_c_or_a_residual_run_swapped(M, epilogue):
    """c (beta; another out or in place) and a residual are read through their transposed views as C^T is
    written; with a bias and a relu, against float64."""
    N, K = 4096, 4096
    a = (torch.randn((M, K), device="cuda") / K ** 0.5).bfloat16()
    w = torch.randn((N, K), device="cuda").bfloat16()
    bias = torch.randn((N,), device="cuda").bfloat16()
    extra = torch.randn((M, N), device="cuda").bfloat16()
    out = extra.clone() if epilogue == "c_in_place" else torch.full((M, N), float("nan"), device="cuda",
                                                                      dtype=torch.bfloat16)
    if epilogue == "residual":
        ops.gemm(a, w, trans_b=True, bias=bias, residual=extra, activation="relu", out=out)
        ref = G.reference_gemm(q(a), q(w), None, q(bias).reshape(1, N), q(extra), 1.0, trans_b=True, activation="relu")
    else:
        ops.gemm(a, w, out if epilogue == "c_in_place" else extra, beta=0.5, trans_b=True, bias=bias,
                 activation="relu", out=out)
        ref = G.reference_gemm(q(a), q(w), q(extra), q(bias).reshape(1, N), None, 1.0, 0.5, trans_b=True,
                               activation="relu")
    assert ops.last_run().config.get("swap_ab", False) == (M <= H.SWAP_DEFAULT_M)
    assert rel_error(q(out), ref) <= error_bound("bf16")


@pytest.mark.parametrize("layout", ["NN", "TT"])
def test_tune_gemm_in_a_layout_caches_that_layout(layout):
    ta, tb = layout[0] == "T", layout[1] == "T"
    res = ops.tune_gemm(512, 512, 1024, "bf16", layout=layout, progress=False, runs=3)
    assert res.source == "measured" and len(res.timings) >= 5
    a = torch.randn((1024, 512) if ta else (512, 1024), device="cuda").bfloat16()
    b = torch.randn((512, 1024) if tb else (1024, 512), device="cuda").bfloat16()
    ops.gemm(a, b, trans_a=ta, trans_b=tb)
    assert ops.last_run().config["config_source"] == "cache"
    ops.gemm(torch.randn((512, 1024), device="cuda").bfloat16(), torch.randn((512, 1024), device="cuda").bfloat16(),
             trans_b=True)
    assert ops.last_run().config["config_source"] == "default"  # NT was not tuned


def test_operands_tma_cannot_read_take_the_sm90_kernel():
    a = torch.randn((64, 100), device="cuda").bfloat16()  # 200-byte rows: not a multiple of 16
    w = torch.randn((32, 100), device="cuda").bfloat16()
    out = ops.gemm(a, w, trans_b=True)
    assert ops.last_run().arch == "sm_90"
    assert rel_error(q(out), q(a) @ q(w).T) <= error_bound("bf16")
    at = torch.randn((200, 300), device="cuda").bfloat16()  # A stored [K, M] with 600-byte rows
    b = torch.randn((200, 64), device="cuda").bfloat16()
    out = ops.gemm(at, b, trans_a=True)
    assert ops.last_run().arch == "sm_90"
    assert rel_error(q(out), q(at).T @ q(b)) <= error_bound("bf16")


def test_tune_gemm_measures_caches_and_ops_gemm_uses_the_winner():
    res = ops.tune_gemm(512, 512, 1024, "bf16", progress=False, runs=3)
    assert res.source == "measured" and len(res.timings) >= 5
    again = ops.tune_gemm(512, 512, 1024, "bf16", progress=False)
    assert again.source == "cache" and again.config == res.config
    a, w = torch.randn((512, 1024), device="cuda").bfloat16(), torch.randn((512, 1024), device="cuda").bfloat16()
    ops.gemm(a, w, trans_b=True)
    rec = ops.last_run()
    assert rec.config["config_source"] == "cache" and rec.config["BN"] == res.config["BN"]


@pytest.mark.parametrize("trans_b", [True, False], ids=["NT", "NN"])
def test_tune_gemm_for_decode_measures_the_swapped_configs_and_ops_runs_the_winner(trans_b):
    """M <= 64: the swapped configs are candidates (measured as ops runs them: b, a and C's transposed view); the
    winner, swapped or not, is what the next call runs, against float64."""
    from tessera.ops import _hopper as H

    M, N, K = 16, 4096, 4096
    res = ops.tune_gemm(M, N, K, "bf16", layout="NT" if trans_b else "NN", progress=False, runs=3)
    assert res.source == "measured" and len(res.timings) == len(H.candidates(M, N))
    swapped = [t for t in res.timings if t.config.get("swap_ab")]
    assert len(swapped) == sum(1 for c in H.HOPPER_CANDIDATES if c.get(H.SWAP))
    assert all(t.error is None for t in swapped), [t.error for t in swapped]
    a = torch.randn((M, K), device="cuda").bfloat16()
    w = (torch.randn((N, K) if trans_b else (K, N), device="cuda") / K ** 0.5).bfloat16()
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    ops.gemm(a, w, trans_b=trans_b, out=out)
    rec = ops.last_run()
    assert rec.config["config_source"] == "cache" and rec.config.get("swap_ab", False) == res.config.get("swap_ab", False)
    assert rel_error(q(out), G.reference_gemm(q(a), q(w), trans_b=trans_b)) <= error_bound("bf16")


# --- ops.attention's sm_90a configs: every autotuning candidate, and the tuner itself ------------------------

from tessera.kernels import flash_attention as FA  # noqa: E402
from tessera.ops import _hopper_attention as HA  # noqa: E402
from tessera.ops import autotune  # noqa: E402

ATTN_CASES = [(cand, d, causal) for d in (64, 128, 256) for causal in (False, True) for cand in HA.candidates(d, causal)]


@pytest.mark.parametrize("cand, d, causal", ATTN_CASES,
                         ids=["{BLOCK_M}x{BLOCK_N}s{stages}-{schedule}".format(**c) + f"-d{d}-{'causal' if k else 'full'}"
                              + ("-" + c["tiles"] if "tiles" in c else "") for c, d, k in ATTN_CASES])
def test_every_attention_candidate_runs_pinned(cand, d, causal):
    """Each config the tuner may pick, pinned, on a ragged GQA shape: O and LSE against float64."""
    B, H, H_kv, S = 2, 4, 2, 2 * cand["BLOCK_M"] + 45
    g = torch.Generator(device="cuda").manual_seed(d + causal + cand["stages"] + (cand["schedule"] == "pingpong"))
    qt = torch.randn(B, H, S, d, device="cuda", generator=g).bfloat16()
    k, v = (torch.randn(B, H_kv, S + 17, d, device="cuda", generator=g).bfloat16() for _ in range(2))
    autotune.pin(HA.OP, cand)
    try:
        o, lse = ops.attention(qt, k, v, causal=causal)
        rec = ops.last_run()
    finally:
        autotune.unpin(HA.OP)
    assert rec.arch == "sm_90a" and rec.config["config_source"] == "pinned"
    assert {k: rec.config[k] for k in cand} == cand  # the pinned tile, ring and schedule ran
    want_o, want_lse = FA.reference_attention(q(qt), q(k), q(v), causal=causal)
    assert rel_error(q(o), want_o) <= error_bound("bf16")
    assert np.abs(q(lse) - want_lse).max() <= 1e-3


def test_tune_attention_measures_caches_and_ops_attention_uses_the_winner():
    res = ops.tune_attention(2, 8, 1024, 1024, 128, H_kv=2, progress=False, runs=3)
    assert res.source == "measured" and len(res.timings) == len(HA.candidates(128))
    assert all(t.error is None for t in res.timings), [t.error for t in res.timings]
    again = ops.tune_attention(2, 8, 1024, 1024, 128, H_kv=2, progress=False)
    assert again.source == "cache" and again.config == res.config
    qt = torch.randn(2, 8, 1000, 128, device="cuda").bfloat16()  # same buckets as 1024
    k, v = (torch.randn(2, 2, 1000, 128, device="cuda").bfloat16() for _ in range(2))
    o, _ = ops.attention(qt, k, v)
    rec = ops.last_run()
    assert rec.config["config_source"] == "cache" and rec.config["BLOCK_M"] == res.config["BLOCK_M"]
    assert rel_error(q(o), FA.reference_attention(q(qt), q(k), q(v))[0]) <= error_bound("bf16")
