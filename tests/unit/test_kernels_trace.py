"""Every shipped kernel variant traces to Tile IR that verifies and prints/parses back byte-identically.

Numerics are the reference interpreter's tests; here the IR's structure is
checked (what is loaded, what is loop-carried, which epilogue ops exist) and
the float64 references are checked against independent formulations.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from xdsl.dialects import scf

import tessera
from tessera.ir.parse import parse_module
from tessera.ir.verify import verify_module
from tessera.kernels import KERNELS
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.kernels import linear_attention as LA

T = tessera.tensor
DTYPES = ("bf16", "f16", "f32")


def check_module(tk) -> str:
    verify_module(tk.module)
    text = tk.ir_text()
    assert str(parse_module(text, f"{tk.name}.mlir")) + "\n" == text
    return text


def ops(tk, name: str, root=None) -> list:
    return [op for op in (root or tk.module).walk() if op.name == name]


def loaded(tk, root=None) -> list[str]:
    return [op.source.name_hint for op in ops(tk, "tile.load", root)]


def only_loop(tk) -> scf.ForOp:
    (loop,) = [op for op in tk.module.walk() if isinstance(op, scf.ForOp)]
    return loop


# --- GEMM ---------------------------------------------------------------------------------------


def gemm_specs(dtype, out="f32", trans_a=False, trans_b=False, bias=False, residual=False, beta=False):
    a = T(("K", "M") if trans_a else ("M", "K"), dtype)
    b = T(("N", "K") if trans_b else ("K", "N"), dtype)
    c = T(("M", "N"), out)
    return (a, b, c, T((1, "N"), "f32") if bias else None, T(("M", "N"), out) if residual else None,
            tessera.scalar("f32"), tessera.scalar("f32") if beta else None)


@pytest.mark.parametrize("dtype,trans_a,trans_b,act", itertools.product(DTYPES, (False, True), (False, True),
                                                                         G.ACTIVATIONS))
def test_gemm_layouts_and_activations(dtype, trans_a, trans_b, act):
    tk = G.gemm.trace(*gemm_specs(dtype, dtype, trans_a, trans_b), BM=64, BN=32, BK=16, TRANS_A=trans_a,
                      TRANS_B=trans_b, ACTIVATION=act)
    text = check_module(tk)
    loop = only_loop(tk)
    assert sorted(loaded(tk, loop)) == ["A", "B"]
    (mma,) = ops(tk, "tile.mma", loop)
    assert mma.acc is loop.body.block.args[1] and mma.result.type.get_shape() == (64, 32)
    assert mma.result.type.element_type == tessera.f32.ir
    transposed = {op.source.owner.source.name_hint for op in ops(tk, "tile.transpose", loop)}
    assert transposed == {n for n, t in (("A", trans_a), ("B", trans_b)) if t}
    assert "C" not in loaded(tk)  # no beta: C is never read
    expected = {"none": set(), "relu": {"tile.max"}, "gelu": {"tile.erf"}, "silu": {"tile.exp", "tile.div"}}[act]
    after = {op.name for op in tk.func.body.block.ops}
    assert expected <= after and not ({"tile.max", "tile.erf", "tile.exp"} - expected) & after
    assert (f"tile.convert" in after) == (dtype != "f32")
    assert text.count("tile.store") == 1


@pytest.mark.parametrize("bias,residual,beta", itertools.product((False, True), repeat=3))
def test_gemm_epilogue_reads_exactly_what_it_is_given(bias, residual, beta):
    tk = G.gemm.trace(*gemm_specs("bf16", "bf16", bias=bias, residual=residual, beta=beta), BM=32, BN=32)
    check_module(tk)
    want = {"A", "B"} | {n for n, on in (("bias", bias), ("residual", residual), ("C", beta)) if on}
    assert set(loaded(tk)) == want
    assert tk.arg_names == tuple(n for n in G.gemm.params if n in want | {"C", "alpha"} or n == "beta" and beta)
    if bias:
        (bias_load,) = [op for op in ops(tk, "tile.load") if op.source.name_hint == "bias"]
        assert bias_load.result.type.get_shape() == (1, 32)


def test_gemm_rejects_an_unknown_activation():
    with pytest.raises(tessera.KernelError) as info:
        G.gemm.trace(*gemm_specs("f32"), ACTIVATION="swish")
    assert info.value.code.name == "DSL_META_INVALID"


def test_gemm_grid():
    assert G.grid(1000, 300, BM=128, BN=64) == (8, 5)
    assert G.grid(128, 128) == (1, 1)


# --- flash attention ----------------------------------------------------------------------------


def attention_specs(dtype, d):
    q = T(("B", "H", "S", d), dtype)
    kv = T(("B", "H_kv", "S_k", d), dtype)
    return q, kv, kv, q, T(("B", "H", "S"), "f32"), tessera.scalar("f32")


@pytest.mark.parametrize("dtype,causal,d", itertools.product(DTYPES, (False, True), (64, 128)))
def test_flash_attention_variants(dtype, causal, d):
    tk = FA.flash_attention.trace(*attention_specs(dtype, d), BLOCK_M=64, BLOCK_N=32, CAUSAL=causal)
    check_module(tk)
    loop = only_loop(tk)
    assert [r.name_hint for r in loop.results] == ["l_i", "acc", "m_i"]
    assert [r.type.get_shape() for r in loop.results] == [(64, 1), (64, d), (64, 1)]
    assert sorted(loaded(tk, loop)) == ["K", "V"]
    assert len(ops(tk, "tile.exp2", loop)) == 2 and len(ops(tk, "tile.mma", loop)) == 2
    assert (loop.ub.owner.name == "arith.minsi") == causal  # causal programs stop at their diagonal
    stores = {op.dest.name_hint: op.value.type.get_shape() for op in ops(tk, "tile.store")}
    assert stores == {"O": (64, d), "LSE": (1, 64)}


def test_flash_attention_grid():
    assert FA.grid(2, 8, 1000, BLOCK_M=128) == (8, 16)


# --- linear attention ---------------------------------------------------------------------------


def linear_specs(dtype, dk, dv, decay):
    qk, v = T(("B", "H", "T", dk), dtype), T(("B", "H", "T", dv), dtype)
    return qk, qk, v, v, T((1, "H"), "f32") if decay else None


@pytest.mark.parametrize("dtype,decay,dk,dv,bv", [(dt, dec, d, d, None) for dt in DTYPES for dec in (False, True)
                                                  for d in (64, 128)] + [("bf16", True, 64, 128, 32)])
def test_linear_attention_variants(dtype, decay, dk, dv, bv):
    tk = LA.linear_attention.trace(*linear_specs(dtype, dk, dv, decay), CHUNK=64, BLOCK_V=bv)
    check_module(tk)
    loop = only_loop(tk)
    state = (dk, bv or dv)
    assert [r.name_hint for r in loop.results] == ["S"] and loop.results[0].type.get_shape() == state
    assert loop.results[0].type.element_type == tessera.f32.ir
    assert sorted(loaded(tk, loop)) == ["K", "Q", "V"]
    assert len(ops(tk, "tile.mma", loop)) == 4
    assert ("G" in loaded(tk)) == decay and bool(ops(tk, "tile.exp")) == decay
    (store,) = ops(tk, "tile.store")
    assert store.value.type.get_shape() == (64, bv or dv)


def test_linear_attention_grid():
    assert LA.grid(4, 16, 128) == (64, 1)
    assert LA.grid(4, 16, 128, BLOCK_V=32) == (64, 4)


def test_registry_names_every_kernel():
    assert set(KERNELS) == {"gemm", "flash_attention", "linear_attention"}
    assert all(isinstance(k, tessera.Kernel) for k in KERNELS.values())


# --- the float64 references against independent formulations -------------------------------------


def test_reference_gemm_matches_a_direct_formula():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))  # b stored as N x K
    c, bias, r = rng.standard_normal((5, 4)), rng.standard_normal((1, 4)), rng.standard_normal((5, 4))
    got = G.reference_gemm(a, b, c, bias, r, 2.0, 0.5, trans_b=True, activation="gelu")
    x = 2.0 * a @ b.T + 0.5 * c + bias
    want = np.array([[0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in row] for row in x]) + r
    np.testing.assert_allclose(got, want, rtol=1e-12)
    silu = G.reference_gemm(a, b.T, activation="silu")
    np.testing.assert_allclose(silu, (a @ b.T) / (1 + np.exp(-(a @ b.T))), rtol=1e-12)


def test_reference_attention_matches_per_row_softmax_with_gqa():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((1, 4, 5, 8)), rng.standard_normal((1, 2, 7, 8)), rng.standard_normal((1, 2, 7, 8))
    o, lse = FA.reference_attention(q, k, v, scale=0.3, causal=True)
    for h in range(4):
        for i in range(5):
            s = np.array([0.3 * q[0, h, i] @ k[0, h // 2, j] for j in range(i + 1)])
            p = np.exp(s - s.max())
            np.testing.assert_allclose(o[0, h, i], (p / p.sum()) @ v[0, h // 2, :i + 1], rtol=1e-10)
            np.testing.assert_allclose(lse[0, h, i], math.log(np.exp(s).sum()), rtol=1e-10)


def test_reference_linear_attention_matches_the_recurrent_form():
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((2, 3, 9, 4)), rng.standard_normal((2, 3, 9, 4)), rng.standard_normal((2, 3, 9, 5))
    g = np.array([-0.5, 0.0, -2.0])
    got = LA.reference_linear_attention(q, k, v, g.reshape(1, 3))
    want = np.zeros_like(got)
    for b in range(2):
        for h in range(3):
            state = np.zeros((4, 5))
            for t in range(9):
                state = math.exp(g[h]) * state + np.outer(k[b, h, t], v[b, h, t])
                want[b, h, t] = q[b, h, t] @ state
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
