"""Split-K with fixup=scatter on the host emulator: each split of a tile, once all have arrived, sums and stores
its own 1/S of the tile's columns (nv.splitk_fixup scatter, nv.wgacc_store_tma window). The kernel is marked
co-resident: the runtime launches it cooperatively and the emulator runs all of its CTAs at once (max(3, S) of
them), so a split's wait for the others completes. Results against float64 and bit for bit the gather fixup's
(both add the splits in order); refusals are coded errors; the kernels compile with NVRTC without local memory."""

from __future__ import annotations

from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

from tessera.compiler import compile
from tessera.compiler.driver import lower
from tessera.compiler.launch_shape import LaunchShape
from tessera.dsl import tl
from tessera.dsl.specs import ScalarSpec, tensor
from tessera.ir import diagnostics as D
from tessera.kernels import gemm as G
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime import CompileCache
from tessera.runtime.host_emulator import run_on_host
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import count_instructions, has_local_memory

BIAS_SPECS = (tensor(("M", "K"), "bf16"), tensor(("N", "K"), "bf16"), tensor(("M", "N"), "bf16"),
              tensor((1, "N"), "f32"), None, ScalarSpec(tl.f32), None)


def _emit(bm, bn, bk, stages, splitk, fixup, out="bf16"):
    specs = (*BIAS_SPECS[:2], tensor(("M", "N"), out), *BIAS_SPECS[3:])
    traced = G.gemm.trace(*specs, BM=bm, BN=bn, BK=bk, TRANS_B=True, ACTIVATION="gelu")
    module, _ = lower(traced, f"tessera-lower-to-nv{{arch=sm_90a stages={stages} splitk={splitk} fixup={fixup}}}",
                      "sm_90a")
    return emit_cuda(module)


def _run(em, tile, M, N, K, out=ml_dtypes.bfloat16, seed=0, scratch=None):
    """Launch `em` (tile = (BM, BN)) on fresh inputs; (C, float64 reference)."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((M, K)) / np.sqrt(K)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    c = np.full((M, N), np.nan, out)
    run_on_host(em, [a, w, c, bias, 0.5], G.grid(M, N, BM=tile[0], BN=tile[1]), scratch=scratch)
    f64 = lambda x: x.astype(np.float64)  # noqa: E731
    ref = G.reference_gemm(f64(a), f64(w), None, bias, None, 0.5, trans_b=True, activation="gelu")
    return c.astype(np.float64), ref


# (BM, BN, BK, stages, splits), (M, N, K): ragged tiles, many units per CTA, uneven and empty splits
CASES = {
    "128x256-k4-ragged": ((128, 256, 64, 3, 4), (300, 520, 704)),  # 11 K steps: splits of 3, 3, 3, 2
    "128x256-k4-empty-splits": ((128, 256, 64, 3, 4), (130, 300, 128)),  # 2 K steps: splits 2 and 3 have none
    "128x256-k2": ((128, 256, 64, 3, 2), (256, 512, 512)),
    "128x128-k2-many-rounds": ((128, 128, 64, 4, 2), (520, 260, 256)),  # 15 tiles x 2 units on 3 CTAs
    "256x128-k2-two-blocks": ((256, 128, 64, 3, 2), (300, 136, 256)),  # each consumer holds two 64-row blocks
    "64x128-k2-one-consumer": ((64, 128, 64, 4, 2), (200, 136, 384)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_scatter_matches_float64_and_the_gather_bits(name):
    (bm, bn, bk, stages, S), (M, N, K) = CASES[name]
    scatter = _emit(bm, bn, bk, stages, S, "scatter")
    assert scatter.coresident and scatter.splitk == S
    got, ref = _run(scatter, (bm, bn), M, N, K)
    assert not np.isnan(got).any()
    assert rel_error(got, ref) <= error_bound("bf16")
    gather = _emit(bm, bn, bk, stages, S, "gather")
    assert not gather.coresident
    gathered, _ = _run(gather, (bm, bn), M, N, K)
    assert np.array_equal(got, gathered)


def test_scatter_leaves_its_counters_at_zero_for_the_next_launch():
    """Two launches on one kept scratch buffer: the second arrival that brings a block's counter to 2 x S resets
    it, so the buffer's counters read zero after each launch and the second launch gives the same bits."""
    em = _emit(128, 256, 64, 3, 4, "scatter")
    scratch = np.zeros(1 << 23, np.uint8)
    first, ref = _run(em, (128, 256), 300, 520, 704, scratch=scratch)
    record = 4 * 2 * 64 * 256 * 4 + 16  # S x blocks x 64 x n f32, then the counters
    tiles = 3 * 3
    counters = np.stack([scratch[t * record + record - 16:(t + 1) * record].view(np.uint32) for t in range(tiles)])
    assert not counters.any()
    again, _ = _run(em, (128, 256), 300, 520, 704, scratch=scratch)
    assert np.array_equal(first, again)


def test_a_split_summing_another_splits_columns_is_caught():
    """Ownership edited (split s sums the columns of split s + 1): the stored columns then hold one split's sum
    over another's range, and the result must be wrong."""
    em = _emit(128, 256, 64, 3, 4, "scatter")
    old = "if (j_ / 8 == own_) "
    assert em.source.count(old) == 1
    wrong = replace(em, source=em.source.replace(old, "if (j_ / 8 == ((own_ + 1u) & 3u)) "))
    got, ref = _run(wrong, (128, 256), 256, 512, 512)
    assert rel_error(np.nan_to_num(got, nan=1e6), ref) > 0.1


def test_the_f32_output_of_a_scatter_split_goes_through_32_column_boxes():
    """f32 C: 128 columns are four 32-column boxes, one per split of 4."""
    em = _emit(128, 128, 64, 4, 4, "scatter", out="f32")
    got, ref = _run(em, (128, 128), 200, 260, 512, out=np.float32)
    assert rel_error(got, ref) <= error_bound("f32") * 16  # bf16 inputs summed in f32, rounded once to f32


@pytest.mark.parametrize("knobs, what", [
    (dict(splitk=1), "splitk=1"), (dict(splitk=2, schedule="pingpong"), "schedule='pingpong'"),
    (dict(splitk=2, cluster=2), "cluster=2"), (dict(splitk=2, tiles="dynamic"), "tiles='dynamic'"),
    (dict(splitk=2, store="registers"), "store='registers'")])
def test_launch_shape_refuses_scatter_where_a_split_could_wait_forever_or_not_store(knobs, what):
    with pytest.raises(D.TesseraError) as err:
        LaunchShape(fixup="scatter", **knobs)
    assert err.value.code == D.COMPILE_LAUNCH_SHAPE_INVALID and f"fixup='scatter' with {what}" in str(err.value)
    assert "leave fixup at 'gather'" in str(err.value.hint)


def test_an_unknown_fixup_is_a_coded_error():
    with pytest.raises(D.TesseraError) as err:
        LaunchShape(splitk=2, fixup="reduce")
    assert err.value.code == D.COMPILE_LAUNCH_SHAPE_INVALID and "'gather', 'scatter'" in str(err.value)


@pytest.mark.parametrize("bn, S, specs, why", [
    (64, 2, BIAS_SPECS, "the 64-column tile is stored in 1 TMA boxes, which do not split evenly among 2 splits"),
    (128, 2, (*BIAS_SPECS[:4], tensor(("M", "N"), "bf16"), ScalarSpec(tl.f32), None),
     "an epilogue whose store does not go through TMA")])
def test_warp_specialize_refuses_scatter_it_cannot_store_by_columns(bn, S, specs, why):
    traced = G.gemm.trace(*specs, BM=128, BN=bn, BK=64, TRANS_B=True, ACTIVATION="gelu")
    with pytest.raises(D.TesseraError) as err:
        lower(traced, f"tessera-lower-to-nv{{arch=sm_90a stages=4 splitk={S} fixup=scatter}}", "sm_90a")
    assert err.value.code == D.NV_WGMMA_UNSUPPORTED and why in str(err.value)


@pytest.mark.parametrize("bm, bn, stages, S", [(128, 256, 4, 4), (128, 128, 5, 2), (256, 128, 4, 2)])
def test_scatter_kernels_compile_without_local_memory(bm, bn, stages, S):
    """NVRTC for sm_90a: HGMMA, two counter atomics per 64-row block (arrive, then read), no spill."""
    ck = compile(G.gemm.trace(*BIAS_SPECS, BM=bm, BN=bn, BK=64, TRANS_B=True, ACTIVATION="gelu"), "sm_90a",
                 stages=stages, splitk=S, fixup="scatter", cache=CompileCache(disk=False))
    assert ck.emitted.coresident and "tsr_wait_count_u32(" in ck.source
    sass = ck.sass()
    assert count_instructions(sass, "ATOMG") == 2 * (bm // 128)
    assert count_instructions(sass, "HGMMA") > 0
    assert not has_local_memory(ck.cubin) and not has_local_memory(sass)
