"""Split-K GEMM (kernels/gemm_splitk.py) on the reference interpreter against float64, and its sm_90a compile."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tessera
from tessera.dsl import tl
from tessera.dsl.specs import ScalarSpec, tensor
from tessera.kernels import gemm_splitk as SK
from tessera.kernels.gemm import reference_gemm
from tessera.reference import run
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime.cache import CompileCache


def _partials(M, N, K, S, BM=64, BN=128, BK=64, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    ws = np.full((SK.workspace_rows(M, BM, S), N), np.nan, np.float32)
    t = SK.gemm_splitk.trace(tensor(("M", "K"), "bf16"), tensor(("N", "K"), "bf16"), tensor(("R", "N"), "f32"),
                             BM=BM, BN=BN, BK=BK, SPLIT_K=S, TRANS_B=True)
    run(t.module, SK.grid(M, N, BM=BM, BN=BN, SPLIT_K=S), [a, w, ws])
    return a, w, ws


@pytest.mark.parametrize("M, N, K, S", [(200, 136, 1000, 3), (64, 128, 64, 4), (130, 8, 700, 2)])
def test_split_k_with_fused_epilogue_matches_float64(M, N, K, S):
    """Ragged M/N/K, a split past the end of K (64 x 128 x 64 over 4 splits: three add nothing), bias + gelu."""
    a, w, ws = _partials(M, N, K, S)
    bias = np.random.default_rng(5).standard_normal((1, N)).astype(np.float32)
    out = np.full((M, N), np.nan, ml_dtypes.bfloat16)
    t = SK.splitk_reduce.trace(tensor(("R", "N"), "f32"), tensor(("M", "N"), "bf16"), tensor((1, "N"), "f32"), None,
                               ScalarSpec(tl.f32), None, SPLIT_K=S, ACTIVATION="gelu")
    run(t.module, SK.reduce_grid(M, N), [ws, out, bias, 0.5])
    ref = reference_gemm(a.astype(np.float64), w.astype(np.float64), None, bias, None, 0.5, trans_b=True,
                         activation="gelu")
    assert rel_error(out.astype(np.float64), ref) <= error_bound("bf16")


def test_each_split_owns_whole_row_blocks():
    """Split s writes rows [s*Mp, s*Mp + M): the partials sum to the product, rows past M stay untouched."""
    M, N, K, S = 100, 128, 512, 2
    a, w, ws = _partials(M, N, K, S)
    Mp = SK.workspace_rows(M, 64, S) // S
    total = ws[:M] + ws[Mp:Mp + M]
    ref = a.astype(np.float64) @ w.astype(np.float64).T
    assert rel_error(total, ref) < 1e-5
    assert not np.isnan(ws[:M]).any() and not np.isnan(ws[Mp:Mp + M]).any()


def test_split_k_partials_compile_to_the_sm_90a_wgmma_kernel():
    t = SK.gemm_splitk.trace(tensor(("M", "K"), "bf16"), tensor(("N", "K"), "bf16"), tensor(("R", "N"), "f32"),
                             BM=128, BN=128, BK=64, SPLIT_K=2, TRANS_B=True)
    ck = tessera.compile(t, arch="sm_90a", stages=4, cache=CompileCache(disk=False))
    assert "HGMMA.64x128x16.F32.BF16" in ck.sass() and ck.emitted.persistent
    assert [p.dim for p in ck.emitted.params if p.role == "grid"] == [0, 1, 2]
