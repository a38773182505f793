"""The shipped kernels through tessera-lower-to-nv: the nv emulator must reproduce the reference interpreter.

Each kernel is traced to Tile IR, run on the Tile IR reference interpreter, lowered
(tile-to-fragments, pipeline-smem, lower-tile-to-nv) and run on the nv emulator with
the same inputs. Shapes are ragged so every edge guard is exercised; the emulator's
race check runs too. Both sides round bf16 the same way, so outputs agree to one
bf16 ulp (the f32 summation order may differ) and f32 outputs to 1e-5.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tessera
from tessera.ir.dialect import make_context
from tessera.target.nvidia.emulate.nv_ir import run_kernel
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.kernels import linear_attention as LA
from tessera.passes import parse_pipeline
from tessera.reference import run

T = tessera.tensor
BF16 = ml_dtypes.bfloat16


def lowered_matches_reference(tk, args, grid, outputs, stages=2, arch="sm_80", atol=1e-5):
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run(tk.module, grid, ref)
    module = tk.module.clone()
    parse_pipeline(f"tessera-lower-to-nv{{arch={arch} stages={stages}}}").apply(make_context(), module)
    assert not [op.name for op in module.walk() if op.name.startswith("tile.")]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_kernel(module, got, grid)
    for i in outputs:
        want, have = ref[i].astype(np.float64), got[i].astype(np.float64)
        rtol = 2.0 ** -7 if ref[i].dtype == BF16 else 1e-5  # bf16 outputs: one ulp of rounding-order noise
        np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"output #{i}")


@pytest.mark.parametrize("stages", [1, 3])
def test_gemm_full_epilogue(stages):
    """act(alpha*A@B + beta*C + bias) + residual in bf16, over a ragged 2x1 grid of 128x128 tiles."""
    rng = np.random.default_rng(stages)
    M, N, K = 150, 70, 50
    specs = (T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "bf16"), T((1, "N"), "f32"),
             T(("M", "N"), "bf16"), tessera.scalar("f32"), tessera.scalar("f32"))
    tk = G.gemm.trace(*specs, ACTIVATION="gelu")
    args = [rng.standard_normal(s).astype(t) for s, t in (((M, K), BF16), ((K, N), BF16), ((M, N), BF16),
                                                          ((1, N), np.float32), ((M, N), BF16))] + [0.5, 0.25]
    lowered_matches_reference(tk, args, G.grid(M, N), [2], stages=stages)


def test_gemm_pipelined_twelve_deep():
    """The deepest software pipeline the `stages` knob takes (12, the sm_90a ring's bound too) over a K loop of 30
    steps (the last partial), so every one of the 12 rotating buffers is refilled twice."""
    rng = np.random.default_rng(12)
    M, N, K = 100, 70, 32 * 29 + 9
    specs = (T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "f32"), None, None,
             tessera.scalar("f32"), None)
    tk = G.gemm.trace(*specs, BM=64, BN=64, BK=32)
    args = [rng.standard_normal((M, K)).astype(BF16), rng.standard_normal((K, N)).astype(BF16),
            np.zeros((M, N), np.float32), 1.0]
    lowered_matches_reference(tk, args, G.grid(M, N, BM=64, BN=64), [2], stages=12)


def test_gemm_transposed_a_small_tiles():
    rng = np.random.default_rng(5)
    M, N, K = 100, 70, 50
    specs = (T(("K", "M"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "f32"), None, None,
             tessera.scalar("f32"), None)
    tk = G.gemm.trace(*specs, TRANS_A=True, BM=64, BN=64, BK=32)
    args = [rng.standard_normal((K, M)).astype(BF16), rng.standard_normal((K, N)).astype(BF16),
            np.zeros((M, N), np.float32), 1.0]
    lowered_matches_reference(tk, args, G.grid(M, N, BM=64, BN=64), [2], arch="sm_90")


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention(causal):
    rng = np.random.default_rng(int(causal))
    B, H, S, D = 1, 2, 70, 64
    q = T(("B", "H", "S", D), "bf16")
    kv = T(("B", "H_kv", "S_k", D), "bf16")
    tk = FA.flash_attention.trace(q, kv, kv, q, T(("B", "H", "S"), "f32"), tessera.scalar("f32"),
                                  BLOCK_M=64, BLOCK_N=32, CAUSAL=causal)
    qkv = [rng.standard_normal((B, H, S, D)).astype(BF16) for _ in range(3)]
    args = qkv + [np.zeros((B, H, S, D), BF16), np.zeros((B, H, S), np.float32), 0.125]
    lowered_matches_reference(tk, args, FA.grid(B, H, S, BLOCK_M=64), [3, 4], atol=1e-5)


def test_linear_attention_with_decay():
    rng = np.random.default_rng(9)
    B, H, L, D = 1, 2, 100, 64
    qk, v = T(("B", "H", "T", D), "bf16"), T(("B", "H", "T", D), "bf16")
    tk = LA.linear_attention.trace(qk, qk, v, v, T((1, "H"), "f32"), CHUNK=64)
    args = [(rng.standard_normal((B, H, L, D)) * 0.2).astype(BF16) for _ in range(2)]
    args += [rng.standard_normal((B, H, L, D)).astype(BF16), np.zeros((B, H, L, D), BF16),
             np.full((1, H), -0.05, np.float32)]
    lowered_matches_reference(tk, args, LA.grid(B, H, D), [3])
