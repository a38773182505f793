"""The shipped GEMM tile program on the reference interpreter against the float64 oracle.

Covering set (not the full cross product): every shape x layout (TRANS_A,
TRANS_B) x {plain, beta + bias + activation + residual} x {64x64x32 tiles,
the default 128x128x32} in f32; beta alone and the epilogue without beta on
the same shapes; bf16 and f16 inputs (narrow and f32 outputs) on two ragged
shapes. beta=None runs with NaN in C, so a kernel that read C would leak it.
Every traced variant also round-trips through the `tessera-opt` CLI.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
import pytest
from _kernel_check import Expected, check, fresh_seed, misplace_a_definition, opt_round_trip, poisoned, randn

import tessera
from tessera.kernels import gemm as G
from tessera.reference import run

SHAPES = [(128, 96, 64), (100, 37, 53), (1, 1, 1), (257, 129, 65)]  # (M, N, K)
LAYOUTS = list(itertools.product((False, True), repeat=2))  # (TRANS_A, TRANS_B)
SMALL, DEFAULT = (64, 64, 32), (128, 128, 32)  # (BM, BN, BK): 64 leaves ragged edges on every shape
ACTS = ("relu", "gelu", "silu")
# epilogue variants: (beta given, bias + activation + residual)
PLAIN, BETA, EPILOGUE, FULL = (False, False), (True, False), (False, True), (True, True)
VARIANT_NAMES = {PLAIN: "plain", BETA: "beta", EPILOGUE: "bias+act+res", FULL: "beta+bias+act+res"}


def activation_for(shape, layout) -> str:
    """Spread relu/gelu/silu over shapes and layouts so each meets every shape and layout."""
    return ACTS[(SHAPES.index(shape) + LAYOUTS.index(layout)) % len(ACTS)]


@lru_cache(maxsize=None)
def traced(kernel, dtype: str, out: str, trans_a: bool, trans_b: bool, variant: tuple, act: str, tiles: tuple):
    """One specialisation: symbolic M, N, K, so a trace serves every shape."""
    beta, epilogue = variant
    T = tessera.tensor
    specs = (T(("K", "M") if trans_a else ("M", "K"), dtype), T(("N", "K") if trans_b else ("K", "N"), dtype),
             T(("M", "N"), out), T((1, "N"), "f32") if epilogue else None,
             T(("M", "N"), out) if epilogue else None, tessera.scalar("f32"), tessera.scalar("f32") if beta else None)
    bm, bn, bk = tiles
    return kernel.trace(*specs, BM=bm, BN=bn, BK=bk, TRANS_A=trans_a, TRANS_B=trans_b, ACTIVATION=act)


def gemm_outputs(kernel, shape, dtype, out, layout, variant, act, tiles, seed) -> dict:
    """Run one case on fresh inputs from `seed`: {"C": Expected(...)} for `_kernel_check.compare`.

    act: the ACTIVATION ("none" unless the variant has the epilogue). The
    error floor is 10% of the size of the terms C sums (the oracle on absolute
    values, activation left out: |act(x)| <= |x| for relu, gelu and silu):
    only a result that cancels more than 10x (a 1x1x1 case) ever reaches it."""
    (M, N, K), (trans_a, trans_b), (beta_on, epilogue) = shape, layout, variant
    rng = np.random.default_rng(seed)
    tk = traced(kernel, dtype, out, trans_a, trans_b, variant, act, tiles)
    a = randn(rng, (K, M) if trans_a else (M, K), dtype)
    b = randn(rng, (N, K) if trans_b else (K, N), dtype)
    c = randn(rng, (M, N), out) if beta_on else poisoned((M, N), out)  # beta=None: C must not be read
    bias = randn(rng, (1, N), "f32") if epilogue else None
    residual = randn(rng, (M, N), out) if epilogue else None
    alpha = float(np.float32(rng.uniform(0.5, 1.5)))
    beta = float(np.float32(rng.uniform(-1.0, 1.0))) if beta_on else None
    c_in = c.copy()
    run(tk.module, G.grid(M, N, BM=tiles[0], BN=tiles[1]), tk.func_args(a, b, c, bias, residual, alpha, beta))
    want = G.reference_gemm(a, b, c_in, bias, residual, alpha, beta, trans_a=trans_a, trans_b=trans_b,
                            activation=act)
    mag = [None if x is None else np.abs(x.astype(np.float64)) for x in (a, b, c_in, bias, residual)]
    terms = G.reference_gemm(*mag, abs(alpha), None if beta is None else abs(beta), trans_a=trans_a, trans_b=trans_b)
    return {"C": Expected(c, want, c_in if beta_on else None, floor=0.1 * float(np.linalg.norm(terms)))}


def case_name(shape, dtype, out, layout, variant, act, tiles) -> str:
    epi = VARIANT_NAMES[variant].replace("act", act)
    return f"gemm {dtype}->{out} {dims(shape)} {layout_name(layout)} {epi} tiles={dims(tiles)}"


def dims(xs) -> str:
    return "x".join(map(str, xs))


def layout_name(layout) -> str:
    return "".join("T" if t else "N" for t in layout)


def check_gemm(shape, dtype, out, layout, variant, tiles, kernel=G.gemm, check_fn=check):
    """Run one case on a fresh seed and judge it with `check_fn` (the shared `check`; the broken-kernel
    tests pass one that requires the same comparison to fail)."""
    act = activation_for(shape, layout) if variant[1] else "none"
    seed = fresh_seed()
    outputs = gemm_outputs(kernel, shape, dtype, out, layout, variant, act, tiles, seed)
    return check_fn(case_name(shape, dtype, out, layout, variant, act, tiles), seed, (dtype, out), outputs)


F32_CASES = ([(s, lay, v, t) for s in SHAPES for lay in LAYOUTS for v in (PLAIN, FULL) for t in (SMALL, DEFAULT)]
             + [(s, lay, v, SMALL) for s in SHAPES for lay in LAYOUTS for v in (BETA, EPILOGUE)])
# bf16/f16 on two ragged shapes. Output dtype: plain runs write the input dtype on the mixed layouts (NT, TN)
# and f32 on NN/TT; beta+epilogue runs the other way round, so each layout and variant meets both.
NARROW_CASES = [(dt, s, lay, v, t, dt if (v == PLAIN) != (lay[0] == lay[1]) else "f32")
                for dt in ("bf16", "f16") for s, t in (((100, 37, 53), SMALL), ((257, 129, 65), DEFAULT))
                for lay in LAYOUTS for v in (PLAIN, FULL)]


F32_IDS = [f"{dims(s)}-{layout_name(lay)}-{VARIANT_NAMES[v]}-{dims(t)}" for s, lay, v, t in F32_CASES]
NARROW_IDS = [f"{dt}-{out}-{dims(s)}-{layout_name(lay)}-{VARIANT_NAMES[v]}" for dt, s, lay, v, _t, out in NARROW_CASES]


@pytest.mark.parametrize("shape,layout,variant,tiles", F32_CASES, ids=F32_IDS)
def test_gemm_f32(shape, layout, variant, tiles):
    check_gemm(shape, "f32", "f32", layout, variant, tiles)


@pytest.mark.parametrize("dtype,shape,layout,variant,tiles,out", NARROW_CASES, ids=NARROW_IDS)
def test_gemm_narrow(dtype, shape, layout, variant, tiles, out):
    check_gemm(shape, dtype, out, layout, variant, tiles)


def all_variants() -> dict[str, str]:
    """The IR of every variant the tests above run, by case-independent name."""
    def act(s, lay, v):
        return activation_for(s, lay) if v[1] else "none"

    keys = {("f32", "f32", lay, v, act(s, lay, v), t) for s, lay, v, t in F32_CASES}
    keys |= {(dt, out, lay, v, act(s, lay, v), t) for dt, s, lay, v, t, out in NARROW_CASES}
    return {case_name(("M", "N", "K"), dt, out, lay, v, a, t): traced(G.gemm, dt, out, *lay, v, a, t).ir_text()
            for dt, out, lay, v, a, t in sorted(keys)}


def test_gemm_variants_round_trip_through_tessera_opt(tmp_path):
    texts = all_variants()
    assert len(texts) >= 40
    opt_round_trip(texts, tmp_path)


def test_the_round_trip_fails_on_ir_that_does_not_verify(tmp_path):
    """The control: tessera-opt really verifies what it round-trips (a misplaced definition is refused)."""
    name, text = next(iter(all_variants().items()))
    with pytest.raises(AssertionError, match=r"rc=1[\s\S]*error: IR_DOMINANCE"):
        opt_round_trip({name: text, "broken": misplace_a_definition(text)}, tmp_path)
