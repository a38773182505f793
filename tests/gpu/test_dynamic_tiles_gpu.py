"""tiles=dynamic on an sm_90 device: every tile runs on every launch (the tile counter resets itself), causal and not.

Each launch starts from NaN outputs, so a tile that a launch skipped (a counter left raised by the launch before)
shows as NaN or a wrong value; launches repeat on one stream and on a second stream (its own scratch buffer).
Results against float64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tessera
from tessera.dsl import tl
from tessera.dsl.specs import ScalarSpec, tensor
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.reference.oracles import error_bound, rel_error

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("sm90_fresh_cache")  # off sm_90: skipped; an empty cache: default configs


def f64(t):
    torch.cuda.synchronize()
    return t.float().cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("D", [64, 128])
def test_attention_runs_every_tile_on_every_launch(causal, D):
    B, H, S = 2, 16, 1000 + 24 * causal  # 8 x 32 tiles: more than the SMs, so CTAs fetch
    T = tessera.tensor
    qs, kvs = T(("B", "H", "S", D), "bf16"), T(("B", "H_kv", "S_k", D), "bf16")
    traced = FA.flash_attention.trace(qs, kvs, kvs, qs, T(("B", "H", "S"), "f32"), tessera.scalar("f32"),
                                      BLOCK_M=128, BLOCK_N=128, CAUSAL=causal, FOLD_SCALE=True)
    ck = tessera.compile(traced, "sm_90a", stages=2, tiles="dynamic")
    g = torch.Generator(device="cuda").manual_seed(D + causal)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=g).bfloat16() for _ in range(3))
    want_o, want_lse = FA.reference_attention(f64(q), f64(k), f64(v), causal=causal)
    streams = [torch.cuda.current_stream(), torch.cuda.Stream()]
    for i in range(5):
        stream = streams[i % 2 if i >= 3 else 0]
        with torch.cuda.stream(stream):
            o = torch.full_like(q, float("nan"))
            lse = torch.full((B, H, S), float("nan"), device="cuda")
            ck.launch(FA.grid(B, H, S, BLOCK_M=128), [q, k, v, o, lse, 1 / math.sqrt(D)], stream=stream)
        stream.synchronize()
        assert rel_error(f64(o), want_o) <= error_bound("bf16"), i
        assert np.abs(f64(lse) - want_lse).max() <= 1e-3, i


def test_gemm_runs_every_tile_on_every_launch():
    M, N, K = 2000, 3000, 512  # 16 x 24 tiles of 128 x 128
    specs = (tensor(("M", "K"), "bf16"), tensor(("N", "K"), "bf16"), tensor(("M", "N"), "bf16"), None, None,
             ScalarSpec(tl.f32), None)
    traced = G.gemm.trace(*specs, BM=128, BN=128, BK=64, TRANS_B=True)
    ck = tessera.compile(traced, "sm_90a", stages=4, tiles="dynamic")
    a = (torch.randn(M, K, device="cuda") / K ** 0.5).bfloat16()
    w = torch.randn(N, K, device="cuda").bfloat16()
    want = G.reference_gemm(f64(a), f64(w), trans_b=True)
    for i in range(4):
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        ck.launch(G.grid(M, N, BM=128, BN=128), [a, w, c, 1.0], sync=True)
        assert rel_error(f64(c), want) <= error_bound("bf16"), i


def test_a_prepared_launch_keeps_its_scratch_and_takes_a_new_one_after_a_drop():
    """The ops' warm path replays prepared launches: one with the tile counter keeps the stream's scratch buffer
    (each launch leaves it at zero); after a failed launch drops that buffer (its counters may be raised) the
    prepared launch goes the full path, to a fresh buffer. Every launch starts from NaN outputs."""
    B, H, S, D = 2, 16, 1024, 128
    T = tessera.tensor
    qs, kvs = T(("B", "H", "S", D), "bf16"), T(("B", "H_kv", "S_k", D), "bf16")
    traced = FA.flash_attention.trace(qs, kvs, kvs, qs, T(("B", "H", "S"), "f32"), tessera.scalar("f32"),
                                      BLOCK_M=128, BLOCK_N=128, CAUSAL=True, FOLD_SCALE=True)
    ck = tessera.compile(traced, "sm_90a", stages=2, tiles="dynamic")
    q, k, v = (torch.randn(B, H, S, D, device="cuda").bfloat16() for _ in range(3))
    o, lse = torch.empty_like(q), torch.empty(B, H, S, device="cuda")
    want_o, _ = FA.reference_attention(f64(q), f64(k), f64(v), causal=True)
    values, _ = ck.values([q, k, v, o, lse, 1 / math.sqrt(D)])
    fire = ck.prepare(FA.grid(B, H, S, BLOCK_M=128), values)
    assert fire is not None
    scratch = ck._derived.scratch
    for dropped in (False, False, True, False):
        if dropped:
            scratch.drop()
        o.fill_(float("nan"))
        fire()
        assert rel_error(f64(o), want_o) <= error_bound("bf16"), dropped
    assert scratch.generation == 1
