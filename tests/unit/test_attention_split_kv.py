"""Split-KV attention ("flash decoding"): flash_attention with KV_SPLITS writes per-slice partials, and
attention_combine merges them. Numerics against float64 on the reference interpreter and on the host emulator
(the sm_90a wgmma kernel for the slices, the sm_90 kernel for the merge), SASS without local memory, coded
errors for the meta-parameters it refuses."""

from __future__ import annotations

import shutil

import ml_dtypes
import numpy as np
import pytest

import tessera
import tessera.reference as R
import tessera.runtime.host_emulator as EH
from tessera.compiler.driver import default_pipeline, lower
from tessera.ir.diagnostics import TesseraError
from tessera.kernels import attention_combine as AC
from tessera.kernels import flash_attention as FA
from tessera.reference.oracles import error_bound, rel_error
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import count_instructions, disassemble, resource_usage

T = tessera.tensor
BF16 = ml_dtypes.bfloat16
LSE_TOL = 1e-4


def _combine_trace(D: int, splits: int, dtype: str = "bf16", BM: int = 64):
    return AC.attention_combine.trace(T(("B", "HS", "S", D), "f32"), T(("B", "HS", "S"), "f32"),
                                      T(("B", "H", "S", D), dtype), T(("B", "H", "S"), "f32"),
                                      BLOCK_M=BM, SPLITS=splits)


def _split_trace(D: int, BN: int, splits: int, BM: int = 64, even: bool = False):
    q, kv = T(("B", "H", "S", D), "bf16"), T(("B", "H_kv", "S_k", D), "bf16")
    return FA.flash_attention.trace(q, kv, kv, T(("B", "HS", "S", D), "f32"), T(("B", "HS", "S"), "f32"),
                                    tessera.scalar("f32"), BLOCK_M=BM, BLOCK_N=BN, EVEN_N=even, FOLD_SCALE=True,
                                    KV_SPLITS=splits)


def _merge64(op, lp, splits):
    """The float64 merge of partials [B, H * splits, ...] into (O, LSE)."""
    B, HS, S_q, D = op.shape
    o = op.reshape(B, HS // splits, splits, S_q, D).astype(np.float64)
    lse = lp.reshape(B, HS // splits, splits, S_q).astype(np.float64)
    m = lse.max(2, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)
    w = np.exp(lse - m)
    total = w.sum(2)
    safe = np.where(total > 0, total, 1.0)
    return ((w[..., None] * o).sum(2) / safe[..., None] * (total > 0)[..., None],
            np.where(total > 0, m[:, :, 0] + np.log(safe), -np.inf))


def test_combine_on_the_reference_interpreter_weighs_empty_slices_zero():
    """Slices with no key (LSE -inf) weigh nothing; a row with no key in any slice gets O = 0, LSE = -inf."""
    B, H, S_q, D, splits = 2, 3, 70, 64, 3
    rng = np.random.default_rng(1)
    op = rng.standard_normal((B, H * splits, S_q, D)).astype(np.float32)
    lp = (3 * rng.standard_normal((B, H * splits, S_q))).astype(np.float32)
    lp[0, 1, :5] = -np.inf
    lp[1, 3:6, 7] = -np.inf
    o, lse = np.full((B, H, S_q, D), np.nan, BF16), np.full((B, H, S_q), np.nan, np.float32)
    R.run(_combine_trace(D, splits).module, AC.grid(B, H, S_q, 64), [op, lp, o, lse])
    want_o, want_lse = _merge64(op, lp, splits)
    assert rel_error(o, want_o) <= error_bound("bf16")
    assert lse[1, 1, 7] == -np.inf and not o[1, 1, 7].astype(np.float32).any()
    finite = np.isfinite(want_lse)
    assert np.abs(lse[finite] - want_lse[finite]).max() <= LSE_TOL


@pytest.mark.skipif(shutil.which("g++") is None, reason="the host emulator needs g++ (C++20)")
@pytest.mark.parametrize("S_q, S_k, splits, BN, H, H_kv", [(1, 700, 4, 128, 4, 1), (5, 130, 3, 64, 2, 2),
                                                            (3, 200, 8, 64, 2, 1)],
                         ids=["decode-gqa", "ragged", "slices-past-the-keys"])
def test_split_slices_and_merge_on_the_host_emulator(S_q, S_k, splits, BN, H, H_kv):
    """The sm_90a kernel writes each slice's partials, the sm_90 merge makes them O and LSE: against float64.
    200 keys in 8 slices of 64-key steps: slices 4..7 start past the last key and must weigh nothing."""
    B, D = 1, 128
    rng = np.random.default_rng(S_k)
    q = rng.standard_normal((B, H, S_q, D)).astype(BF16)
    k, v = (rng.standard_normal((B, H_kv, S_k, D)).astype(BF16) for _ in range(2))
    op = np.full((B, H * splits, S_q, D), np.nan, np.float32)
    lp = np.full((B, H * splits, S_q), np.nan, np.float32)
    scale = 1.0 / np.sqrt(D)
    sliced = emit_cuda(lower(_split_trace(D, BN, splits), default_pipeline("sm_90a", stages=2), "sm_90a")[0])
    EH.run_on_host(sliced, [q, k, v, op, lp, scale], FA.grid(B, H, S_q, BLOCK_M=64, KV_SPLITS=splits))
    o, lse = np.full((B, H, S_q, D), np.nan, BF16), np.full((B, H, S_q), np.nan, np.float32)
    merge = emit_cuda(lower(_combine_trace(D, splits, BM=16), default_pipeline("sm_90"), "sm_90")[0])
    EH.run_on_host(merge, [op, lp, o, lse], AC.grid(B, H, S_q, 16))
    f64 = lambda x: x.astype(np.float64)  # noqa: E731
    want_o, want_lse = FA.reference_attention(f64(q), f64(k), f64(v), scale)
    assert rel_error(o, want_o) <= error_bound("bf16")
    assert np.abs(lse - want_lse).max() <= LSE_TOL


def test_split_kernel_and_merge_compile_without_local_memory():
    """The slices' kernel keeps HGMMA and no local memory on sm_90a; the merge none on sm_80 and sm_90."""
    ck = tessera.compile(_split_trace(128, 128, 4, even=True), "sm_90a", stages=2, schedule="cooperative")
    usage = next(iter(resource_usage(ck.cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0, usage
    assert count_instructions(disassemble(ck.cubin), "HGMMA") > 0
    for arch in ("sm_80", "sm_90"):
        ck = tessera.compile(_combine_trace(128, 4, BM=16), arch)
        usage = next(iter(resource_usage(ck.cubin).values()))
        assert usage.local_bytes == 0 and usage.stack_bytes == 0, (arch, usage)


@pytest.mark.parametrize("meta", [{"KV_SPLITS": 2, "CAUSAL": True}, {"KV_SPLITS": 0}, {"KV_SPLITS": 1.5}])
def test_key_slices_the_kernel_refuses_are_coded(meta):
    q, kv = T(("B", "H", "S", 64), "bf16"), T(("B", "H_kv", "S_k", 64), "bf16")
    with pytest.raises(TesseraError) as err:
        FA.flash_attention.trace(q, kv, kv, q, T(("B", "H", "S"), "f32"), tessera.scalar("f32"), **meta)
    assert err.value.code.name == "DSL_META_INVALID" and "KV_SPLITS" in err.value.message
