"""The shipped flash-attention tile program on the reference interpreter against the float64 oracle.

Covering set: S (= S_q = S_k) in {1, 63, 128, 200} x causal x d in {64, 128}
x {GQA 8:2, MHA} in f32, and every S x causal in bf16 with (d=64, MHA) and
(d=128, GQA). d=64 runs 64x32 tiles (ragged key and query blocks on S=63,
200), d=128 the default 128x64. O and LSE are both checked; they start as NaN.
Every traced variant also round-trips through the `tessera-opt` CLI.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
import pytest
from _kernel_check import check, fresh_seed, opt_round_trip, poisoned, randn

import tessera
from tessera.kernels import flash_attention as F
from tessera.reference import run

SEQ = (1, 63, 128, 200)
HEADS = {"gqa": (1, 8, 2), "mha": (2, 4, 4)}  # (B, H, H_kv)
TILES = {64: (64, 32), 128: (128, 64)}  # d -> (BLOCK_M, BLOCK_N); 128x64 is the kernel's default
BF16_D_HEADS = ((64, "mha"), (128, "gqa"))


@lru_cache(maxsize=None)
def traced(kernel, dtype: str, d: int, causal: bool, tiles: tuple):
    T = tessera.tensor
    q = T(("B", "H", "S_q", d), dtype)
    kv = T(("B", "H_kv", "S_k", d), dtype)
    return kernel.trace(q, kv, kv, q, T(("B", "H", "S_q"), "f32"), tessera.scalar("f32"),
                        BLOCK_M=tiles[0], BLOCK_N=tiles[1], CAUSAL=causal)


def attention_outputs(kernel, dtype, S, d, heads, causal, seed, *, trace_causal=None) -> dict:
    """Run one case on fresh inputs from `seed`: {"O": ..., "LSE": ...} as (got, oracle) pairs.

    trace_causal: trace with this CAUSAL while the oracle keeps `causal`
    (the broken-kernel test uses it to drop the mask).
    """
    B, H, H_kv = HEADS[heads]
    rng = np.random.default_rng(seed)
    tiles = TILES[d]
    tk = traced(kernel, dtype, d, causal if trace_causal is None else trace_causal, tiles)
    q = randn(rng, (B, H, S, d), dtype)
    k, v = randn(rng, (B, H_kv, S, d), dtype), randn(rng, (B, H_kv, S, d), dtype)
    o, lse = poisoned((B, H, S, d), dtype), poisoned((B, H, S), "f32")
    scale = float(np.float32(1.0 / np.sqrt(d)))
    run(tk.module, F.grid(B, H, S, BLOCK_M=tiles[0]), tk.func_args(q, k, v, o, lse, scale))
    want_o, want_lse = F.reference_attention(q, k, v, scale, causal=causal)
    return {"O": (o, want_o), "LSE": (lse, want_lse)}


def case_name(dtype, S, d, heads, causal) -> str:
    B, H, H_kv = HEADS[heads]
    return (f"attention {dtype} S={S} d={d} {heads} B={B} H={H}:{H_kv} {'causal' if causal else 'full'} "
            f"tiles={'x'.join(map(str, TILES[d]))}")


def check_attention(dtype, S, d, heads, causal):
    seed = fresh_seed()
    return check(case_name(dtype, S, d, heads, causal), seed, dtype,
                 attention_outputs(F.flash_attention, dtype, S, d, heads, causal, seed))


CASES = ([("f32", S, d, h, c) for S, c, d, h in itertools.product(SEQ, (False, True), (64, 128), HEADS)]
         + [("bf16", S, d, h, c) for S, c, (d, h) in itertools.product(SEQ, (False, True), BF16_D_HEADS)])
IDS = [f"{dt}-S{S}-d{d}-{h}-{'causal' if c else 'full'}" for dt, S, d, h, c in CASES]


@pytest.mark.parametrize("dtype,S,d,heads,causal", CASES, ids=IDS)
def test_flash_attention(dtype, S, d, heads, causal):
    check_attention(dtype, S, d, heads, causal)


def test_no_keys_gives_zero_output_and_minus_inf_lse():
    """The documented fully-masked row (here: S_k = 0): O = 0 and LSE = -inf, never NaN."""
    tk = traced(F.flash_attention, "f32", 64, True, TILES[64])
    rng = np.random.default_rng(fresh_seed())
    q, kv = randn(rng, (1, 2, 5, 64), "f32"), np.zeros((1, 1, 0, 64), np.float32)
    o, lse = poisoned((1, 2, 5, 64), "f32"), poisoned((1, 2, 5), "f32")
    run(tk.module, F.grid(1, 2, 5, BLOCK_M=64), tk.func_args(q, kv, kv, o, lse, 0.125))
    want_o, want_lse = F.reference_attention(q, kv, kv, 0.125, causal=True)
    np.testing.assert_array_equal(o, want_o)
    np.testing.assert_array_equal(lse, want_lse)
    assert np.all(lse == -np.inf)


def test_flash_attention_variants_round_trip_through_tessera_opt(tmp_path):
    keys = sorted({(dt, d, c) for dt, _S, d, _h, c in CASES})
    texts = {f"attention {dt} d={d} causal={c}": traced(F.flash_attention, dt, d, c, TILES[d]).ir_text()
             for dt, d, c in keys}
    assert len(texts) == 8
    opt_round_trip(texts, tmp_path)
