"""The sm_90a kernels' emitted C++ on the g++ host emulator: TMA boxes, mbarrier phases, wgmma descriptors.

The warp-specialised kernels cannot run without a Hopper GPU; the host
emulator (tessera.runtime.host_emulator) runs the very text NVRTC compiles, with
mbarriers as counters (phase parity as on the device), TMA as swizzled box
copies and wgmma as per-thread sums over descriptor-addressed shared memory.
So CI checks the ring, the barrier phases, ping-pong's turn order, the
persistent raster (several tiles per CTA), the register epilogue and split-K,
on shapes with ragged edges and K-loops longer than the ring, against float64.
"""

from __future__ import annotations

import re
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.runtime.host_emulator import run_on_host
from tessera.compiler.driver import lower
from tessera.dsl import tl
from tessera.dsl.specs import ScalarSpec, tensor
from tessera.kernels import gemm as G
from tessera.kernels import gemm_splitk as SK
from tessera.reference.oracles import error_bound, rel_error

NP = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


def _emit(traced, stages: int, schedule: str, cluster: int = 1, store: str = "tma", splitk: int = 1,
          multicast: str = "b"):
    """splitk "stream": stream-K (warp-specialize streamk=1)."""
    k_split = "streamk=1" if splitk == "stream" else f"splitk={splitk}"
    module, _ = lower(traced, f"tessera-lower-to-nv{{arch=sm_90a stages={stages} schedule={schedule} "
                              f"cluster={cluster} store={store} {k_split} multicast={multicast}}}", "sm_90a")
    return emit_cuda(module)


def _gemm(M, N, K, dtype, cfg, *, full, edit=None, seed=0):
    BM, BN, BK, stages, schedule, *rest = cfg
    cluster, store, splitk, multicast = (rest + [1, "tma", 1, "b"][len(rest):])[:4]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(NP[dtype])
    w = rng.standard_normal((N, K)).astype(NP[dtype])
    bias = rng.standard_normal((1, N)).astype(np.float32)
    c = (rng.standard_normal((M, N)) if full else np.full((M, N), np.nan)).astype(NP[dtype])
    res = rng.standard_normal((M, N)).astype(NP[dtype])
    c0 = c.astype(np.float64)
    specs = (tensor(("M", "K"), dtype), tensor(("N", "K"), dtype), tensor(("M", "N"), dtype),
             tensor((1, "N"), "f32"), tensor(("M", "N"), dtype) if full else None, ScalarSpec(tl.f32),
             ScalarSpec(tl.f32) if full else None)
    act = "relu" if full else "gelu"
    em = _emit(G.gemm.trace(*specs, BM=BM, BN=BN, BK=BK, TRANS_B=True, ACTIVATION=act), stages, schedule, cluster,
               store, splitk, multicast)
    if edit is not None:
        em = edit(em)
    args = [a, w, c, bias] + ([res, 0.5, 0.25] if full else [0.5])
    run_on_host(em, args, G.grid(M, N, BM=BM, BN=BN))
    f64 = lambda x: x.astype(np.float64)  # noqa: E731
    ref = G.reference_gemm(f64(a), f64(w), c0 if full else None, bias, f64(res) if full else None, 0.5,
                           0.25 if full else None, trans_b=True, activation=act)
    return c.astype(np.float64), ref


CONFIGS = {  # (BM, BN, BK, stages, schedule[, cluster[, store[, splitk[, multicast]]]]); the output goes through TMA
    # unless "registers"; splitk > 1 splits each tile's K steps over that many units of the persistent loop;
    # multicast "a": the cluster pairs tile columns and shares A (300 x 264 in 128 x 64 tiles: 5 columns, odd)
    "coop-128x256-sw128": (128, 256, 64, 3, "cooperative"),
    "coop-128x256-registers": (128, 256, 64, 3, "cooperative", 1, "registers"),
    "pingpong-128x128-registers": (128, 128, 64, 4, "pingpong", 1, "registers"),
    "coop-128x128-cluster2": (128, 128, 64, 3, "cooperative", 2),
    "pingpong-128x128-cluster2": (128, 128, 64, 3, "pingpong", 2),
    "coop-64x128-sw64": (64, 128, 32, 5, "cooperative"),
    "pingpong-128x128": (128, 128, 64, 4, "pingpong"),
    "pingpong-128x64-bk128": (128, 64, 128, 2, "pingpong"),
    "coop-128x128-splitk3": (128, 128, 64, 3, "cooperative", 1, "tma", 3),
    "coop-128x256-registers-splitk2": (128, 256, 64, 3, "cooperative", 1, "registers", 2),
    "pingpong-128x64-cluster2-splitk2": (128, 64, 64, 4, "pingpong", 2, "tma", 2),
    "coop-64x128-splitk6-empty-splits": (64, 128, 32, 4, "cooperative", 1, "tma", 6),  # 7 K steps: split 6 gets none
    "coop-128x64-cluster2-multicast-a": (128, 64, 64, 3, "cooperative", 2, "tma", 1, "a"),
    # 256-row tiles: each consumer warpgroup owns two 64-row blocks (rows 128c .. 128c + 127)
    "coop-256x128": (256, 128, 64, 3, "cooperative"),
    "coop-256x128-cluster2": (256, 128, 64, 3, "cooperative", 2),
    "coop-256x64-splitk2": (256, 64, 64, 4, "cooperative", 1, "tma", 2),
    "pingpong-128x64-cluster2-multicast-a-splitk2": (128, 64, 64, 3, "pingpong", 2, "tma", 2, "a"),
    "coop-64x128-cluster2-multicast-a-registers": (64, 128, 64, 4, "cooperative", 2, "registers", 1, "a"),
    # 192-row tiles: three consumer warpgroups of 64 rows (512 threads); 160 columns leave through five 32-column
    # TMA boxes of 64-byte rows (64-byte swizzle)
    "coop-192x160": (192, 160, 64, 3, "cooperative"),
    "coop-192x160-cluster2": (192, 160, 64, 3, "cooperative", 2),
    "coop-192x128-splitk2": (192, 128, 64, 3, "cooperative", 1, "tma", 2),
    "coop-192x160-registers": (192, 160, 64, 3, "cooperative", 1, "registers"),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_sm90a_gemm_on_the_host_emulator_matches_float64(name):
    """300 x 264 x 200: ragged in every dim, 6-15 tiles over 3 CTAs, K-loops longer than the ring."""
    got, ref = _gemm(300, 264, 200, "bf16", CONFIGS[name], full=False)
    assert not np.isnan(got).any()
    assert rel_error(got, ref) <= error_bound("bf16")


@pytest.mark.parametrize("name", ["coop-128x256-sw128", "pingpong-128x128", "coop-128x256-registers",
                                  "coop-128x128-splitk3", "coop-256x128", "coop-192x160"])
def test_sm90a_full_epilogue_reads_c_and_residual_in_the_accumulator_layout(name):
    got, ref = _gemm(200, 136, 136, "f16", CONFIGS[name], full=True, seed=3)
    assert rel_error(got, ref) <= error_bound("f16")


@pytest.mark.parametrize("name", ["coop-128x256-sw128", "coop-128x256-registers"])
def test_interior_tiles_take_the_unchecked_epilogue_and_match_float64(name):
    """256 x 256 x 128 in 128 x 256 tiles: every window is interior, so only the unchecked path runs (C, residual
    and bias read, and with store=registers C written through per-thread base pointers); the ragged cases above
    mix both paths."""
    got, ref = _gemm(256, 256, 128, "f16", CONFIGS[name], full=True, seed=5)
    assert rel_error(got, ref) <= error_bound("f16")


_STAGED_SWIZZLE = re.compile(r"\^ \(\((\w+) \+ 8 \* \(\(i_ >> 1\) & 1\)\) & 7\)\) << 4\)")


def _unswizzle(em):
    """The emitted kernel with its staged stores' chunk XOR (row % 8) taken out."""
    from dataclasses import replace

    assert _STAGED_SWIZZLE.search(em.source)
    return replace(em, source=_STAGED_SWIZZLE.sub(") << 4)", em.source))


def test_a_wrong_staging_swizzle_is_caught():
    """The TMA store reads its box through the 128-byte swizzle: staging without it scrambles the columns."""
    got, ref = _gemm(128, 128, 64, "bf16", CONFIGS["pingpong-128x128"], full=False, edit=_unswizzle)
    assert rel_error(got, ref) > 0.1


def test_a_wrong_descriptor_is_caught():
    """The emulator reads shared memory through the emitted descriptors: shifting one K step's start breaks it."""
    from dataclasses import replace

    def shift(em):
        assert em.source.count("tsr_wgmma_desc(a_ + 32u,") >= 1
        return replace(em, source=em.source.replace("tsr_wgmma_desc(a_ + 32u,", "tsr_wgmma_desc(a_ + 64u,"))

    got, ref = _gemm(128, 128, 64, "bf16", CONFIGS["pingpong-128x128"], full=False, edit=shift)
    assert rel_error(got, ref) > 0.1


def _unswizzle_f32(em):
    assert "tsr_st_shared_f32x2(" in em.source
    return _unswizzle(em)


@pytest.mark.parametrize("schedule, edit, M, cluster", [("cooperative", None, 200, 1), ("pingpong", None, 200, 1),
                                                         ("pingpong", _unswizzle_f32, 200, 1),
                                                         ("pingpong", None, 100, 2), ("cooperative", None, 300, 2)],
                         ids=["cooperative", "pingpong", "pingpong-unswizzled-staging-is-caught",
                              "pingpong-cluster2-odd-rows", "cooperative-cluster2-odd-rows"])
def test_split_k_partials_on_the_host_emulator(schedule, edit, M, cluster):
    """A 3-D logical grid (tiles x K splits) through the persistent raster, then the reduce on the interpreter.
    The f32 partials leave through the TMA store epilogue (32-column boxes); staging them without the swizzle
    that the box is read with must break the result. With 2-CTA clusters and an odd number of tile rows the
    second CTA of the last pair has no tile: it must load for its peer and store nothing (its rows would be
    the next split's in the workspace)."""
    N, K, S = 136, 1000, 3
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    ws = np.full((SK.workspace_rows(M, 128, S), N), np.nan, np.float32)
    traced = SK.gemm_splitk.trace(tensor(("M", "K"), "bf16"), tensor(("N", "K"), "bf16"), tensor(("R", "N"), "f32"),
                                  BM=128, BN=128, BK=64, SPLIT_K=S, TRANS_B=True)
    em = _emit(traced, 4, schedule, cluster)
    run_on_host(edit(em) if edit else em, [a, w, ws], SK.grid(M, N, BM=128, BN=128, SPLIT_K=S))
    Mp = ws.shape[0] // S
    total = sum(ws[s * Mp:s * Mp + M].astype(np.float64) for s in range(S))
    err = rel_error(total, a.astype(np.float64) @ w.astype(np.float64).T)
    assert (err > 0.1) if edit else (err < 1e-5)


def test_split_k_in_one_launch_is_deterministic_and_a_wrong_last_split_is_caught():
    """The last split of a tile adds the splits in split order, its own from registers: the result is the same
    bits whichever CTA finishes last (here: a different persistent CTA count reorders them). Letting the second
    of three arrivals run the epilogue instead must break the result (it has not seen the third split)."""
    cfg = CONFIGS["coop-128x128-splitk3"]
    got, ref = _gemm(300, 264, 1000, "bf16", cfg, full=False)
    assert rel_error(got, ref) <= error_bound("bf16")
    import tessera.runtime.host_emulator as EH
    old = EH.PERSISTENT_CTAS
    try:
        EH.PERSISTENT_CTAS = 2
        again, _ = _gemm(300, 264, 1000, "bf16", cfg, full=False)
    finally:
        EH.PERSISTENT_CTAS = old
    assert np.array_equal(got, again)

    def second_wins(em):
        assert em.source.count("tsr_atom_add_u32(cnt_, 1u) == 2u") == 1
        return replace(em, source=em.source.replace("tsr_atom_add_u32(cnt_, 1u) == 2u", "tsr_atom_add_u32(cnt_, 1u) == 1u"))

    wrong, ref = _gemm(300, 264, 1000, "bf16", cfg, full=False, edit=second_wins)
    assert rel_error(np.nan_to_num(wrong, nan=1e6), ref) > 0.1


# Stream-K on the emulator's 3 persistent CTAs (2 clusters of 2): (M, N, K) and config (splitk "stream"). With
# P = 3 the streamed tiles are the partial last wave plus one wave (all tiles when fewer than 3); each CTA's range
# is an equal share of their K steps, so tiles are cut into 2 pieces, or 3 when there are fewer tiles than CTAs.
STREAM = {
    # 2 x 2 tiles of 4 K steps, all streamed: 16 steps in ranges of 6, 5, 5 -> tiles of 1, 2, 2 and 1 pieces
    "coop-128x128-all-streamed": ((200, 200, 200), (128, 128, 64, 3, "cooperative", 1, "tma", "stream")),
    # 2 x 5 tiles: 6 dealt whole (2 per CTA), the last 4 streamed
    "coop-128x64-whole-then-streamed": ((200, 300, 200), (128, 64, 64, 3, "cooperative", 1, "tma", "stream")),
    "pingpong-128x64-whole-then-streamed": ((200, 300, 200), (128, 64, 64, 3, "pingpong", 1, "tma", "stream")),
    # one tile of 10 K steps over 3 CTAs: 3 pieces
    "coop-128x128-one-tile-three-pieces": ((100, 100, 640), (128, 128, 64, 3, "cooperative", 1, "tma", "stream")),
    # one K step per tile and fewer tiles than CTAs: nothing to cut, every tile is whole
    "coop-128x128-one-step": ((100, 100, 32), (128, 128, 64, 3, "cooperative", 1, "tma", "stream")),
    "pingpong-128x128-long-k": ((200, 200, 640), (128, 128, 64, 3, "pingpong", 1, "tma", "stream")),
    # clusters stream pairs of tile rows (3 rows: the second CTA of the last pair has no tile)
    "coop-128x64-cluster2": ((300, 264, 200), (128, 64, 64, 3, "cooperative", 2, "tma", "stream")),
    "pingpong-128x128-cluster2": ((300, 264, 200), (128, 128, 64, 3, "pingpong", 2, "tma", "stream")),
    "coop-256x64-two-blocks-each": ((200, 136, 200), (256, 64, 64, 3, "cooperative", 1, "tma", "stream")),
    "coop-128x128-registers": ((200, 200, 200), (128, 128, 64, 3, "cooperative", 1, "registers", "stream")),
    "coop-192x160-three-consumers": ((400, 320, 200), (192, 160, 64, 3, "cooperative", 1, "tma", "stream")),
}


@pytest.mark.parametrize("name", sorted(STREAM))
def test_stream_k_on_the_host_emulator_matches_float64(name):
    shape, cfg = STREAM[name]
    got, ref = _gemm(*shape, "bf16", cfg, full=False)
    assert not np.isnan(got).any()
    assert rel_error(got, ref) <= error_bound("bf16")


@pytest.mark.parametrize("name", ["coop-128x128-all-streamed", "pingpong-128x64-whole-then-streamed"])
def test_stream_k_full_epilogue_runs_once_on_the_sum(name):
    """beta * C and the residual are read by the epilogue: run on a partial sum, or twice, it would show."""
    shape, cfg = STREAM[name]
    got, ref = _gemm(*shape, "f16", cfg, full=True, seed=3)
    assert rel_error(got, ref) <= error_bound("f16")


def _edit(old: str, new: str):
    def edit(em):
        assert em.source.count(old) >= 1, old
        return replace(em, source=em.source.replace(old, new))
    return edit


@pytest.mark.parametrize("name, edit", [
    ("coop-128x128-one-tile-three-pieces",
     _edit("tsr_atom_add_u32(cnt_, 1u) == sknp - 1u", "tsr_atom_add_u32(cnt_, 1u) == 1u")),
    ("coop-128x128-one-tile-three-pieces", _edit("p_ < sknp;", "p_ < 1u;")),
    ("coop-128x128-one-tile-three-pieces", _edit("own_ * ", "(own_ ^ 1u) * ")),
], ids=["second-of-three-runs-the-epilogue", "the-sum-skips-later-pieces", "a-piece-in-the-wrong-slot"])
def test_stream_k_mutations_are_caught(name, edit):
    """The fixture shapes do cut tiles into pieces: letting the second of three arrivals sum (it has not seen the
    third), dropping pieces from the sum, or storing a piece in its CTA's other slot must each break the result."""
    shape, cfg = STREAM[name]
    got, ref = _gemm(*shape, "bf16", cfg, full=False, edit=edit)
    assert rel_error(np.nan_to_num(got, nan=1e6), ref) > 0.05


def test_stream_k_other_cta_counts_cut_differently_and_still_match():
    """The cut points follow the CTA count (2 and 5 here, besides 3 above); every count sums the same product."""
    import tessera.runtime.host_emulator as EH
    shape, cfg = STREAM["coop-128x64-whole-then-streamed"]
    old = EH.PERSISTENT_CTAS
    try:
        for ctas in (2, 5):
            EH.PERSISTENT_CTAS = ctas
            got, ref = _gemm(*shape, "bf16", cfg, full=False)
            assert rel_error(got, ref) <= error_bound("bf16")
    finally:
        EH.PERSISTENT_CTAS = old


@pytest.mark.parametrize("ctas, shape, cluster", [(4, (100, 100, 640), 1), (7, (200, 100, 640), 1),
                                                  (8, (200, 136, 200), 1), (8, (100, 100, 200), 1),
                                                  (4, (200, 100, 640), 2)],
                         ids=["one-tile-4-ctas", "two-tiles-7-ctas", "four-tiles-8-ctas", "four-steps-8-ctas",
                              "one-pair-of-rows-4-clusters"])
def test_stream_k_with_few_tiles_splits_each_tile_evenly(ctas, shape, cluster):
    """At most P / 2 tiles: each tile's K steps are cut among S = min(P / tiles, steps) CTAs, one piece per CTA
    (one tile of 10 steps over 4 CTAs: pieces of 2-3; 2 tiles on 7 CTAs: 3 pieces each, one CTA idle; 4 tiles of 4
    steps on 8: 2 each; one tile of 4 steps on 8 CTAs: 4 pieces of one step, 4 CTAs idle; with 2-CTA clusters the
    units are pairs of tile rows, here 2 on 4 clusters). The sum is the same."""
    import tessera.runtime.host_emulator as EH
    cfg = (128, 128 // cluster, 64, 3, "cooperative", cluster, "tma", "stream")
    old = EH.PERSISTENT_CTAS, EH.PERSISTENT_CLUSTERS
    try:
        EH.PERSISTENT_CTAS = EH.PERSISTENT_CLUSTERS = ctas
        got, ref = _gemm(*shape, "bf16", cfg, full=False)
    finally:
        EH.PERSISTENT_CTAS, EH.PERSISTENT_CLUSTERS = old
    assert not np.isnan(got).any()
    assert rel_error(got, ref) <= error_bound("bf16")


def _swizzle64_dropped(em):
    """The 32-column boxes' staging without the 64-byte swizzle's chunk XOR."""
    pat = re.compile(r"\^ \(\(\((\w+) \+ 8 \* \(\(i_ >> 1\) & 1\)\) >> 1\) & 3\)\) << 4\)")
    assert pat.search(em.source)
    return replace(em, source=pat.sub(") << 4)", em.source))


def test_a_wrong_64_byte_staging_swizzle_is_caught():
    """TMA reads the 32-column boxes through the 64-byte swizzle: staging them without it scrambles columns."""
    got, ref = _gemm(192, 160, 64, "bf16", CONFIGS["coop-192x160"], full=False, edit=_swizzle64_dropped)
    assert rel_error(got, ref) > 0.1
