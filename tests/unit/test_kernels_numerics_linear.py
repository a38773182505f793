"""The shipped chunked linear-attention tile program on the reference interpreter against the float64 oracle.

The full product: T in {1, 64, 100, 256} x {no decay, per-head decay g_h
drawn from [-0.5, -0.05]} x d in {64, 128} x {bf16, f32}, B=2, H=3. d=64 runs
CHUNK=32 (T=100 ends in a ragged chunk, T=256 walks 8 chunks) with all of d_v
per program; d=128 runs the default CHUNK=64 with BLOCK_V=64 (two d_v blocks).
O starts as NaN. Every traced variant also round-trips through `tessera-opt`.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
import pytest
from _kernel_check import check, fresh_seed, opt_round_trip, poisoned, randn

import tessera
from tessera.kernels import linear_attention as L
from tessera.reference import run

STEPS = (1, 64, 100, 256)
B, H = 2, 3
META = {64: dict(CHUNK=32, BLOCK_V=None), 128: dict(CHUNK=64, BLOCK_V=64)}  # by d


@lru_cache(maxsize=None)
def traced(kernel, dtype: str, d: int, decay: bool):
    T = tessera.tensor
    x = T(("B", "H", "T", d), dtype)
    return kernel.trace(x, x, x, x, T((1, "H"), "f32") if decay else None, **META[d])


def linear_outputs(kernel, dtype, steps, d, decay, seed) -> dict:
    """Run one case on fresh inputs from `seed`: {"O": (got, oracle)}."""
    rng = np.random.default_rng(seed)
    tk = traced(kernel, dtype, d, decay)
    q, k, v = (randn(rng, (B, H, steps, d), dtype) for _ in range(3))
    g = rng.uniform(-0.5, -0.05, (1, H)).astype(np.float32) if decay else None
    o = poisoned((B, H, steps, d), dtype)
    run(tk.module, L.grid(B, H, d, **META[d]), tk.func_args(q, k, v, o, g))
    return {"O": (o, L.reference_linear_attention(q, k, v, g))}


def case_name(dtype, steps, d, decay) -> str:
    meta = " ".join(f"{k}={v}" for k, v in META[d].items())
    return f"linear_attention {dtype} T={steps} d={d} {'decay' if decay else 'no-decay'} {meta}"


CASES = list(itertools.product(("f32", "bf16"), STEPS, (64, 128), (False, True)))
IDS = [f"{dt}-T{t}-d{d}-{'decay' if g else 'plain'}" for dt, t, d, g in CASES]


@pytest.mark.parametrize("dtype,steps,d,decay", CASES, ids=IDS)
def test_linear_attention(dtype, steps, d, decay):
    seed = fresh_seed()
    outputs = linear_outputs(L.linear_attention, dtype, steps, d, decay, seed)
    check(case_name(dtype, steps, d, decay), seed, dtype, outputs)


def test_linear_attention_variants_round_trip_through_tessera_opt(tmp_path):
    keys = sorted({(dt, d, g) for dt, _t, d, g in CASES})
    texts = {case_name(dt, "?", d, g): traced(L.linear_attention, dt, d, g).ir_text() for dt, d, g in keys}
    assert len(texts) == 8
    opt_round_trip(texts, tmp_path)
