"""The sm_90a GEMM (warp-specialize: TMA + mbarrier ring, wgmma, persistent tiles) on the GPU, against float64.

Every config the benchmark may pick, on shapes with ragged edges in M, N and
K (TMA zero-fills past the edge, stores past it are dropped), with a plain
product and with the fused epilogue (alpha, bias, activation, residual).
Outputs start as NaN so an unwritten element fails. Skipped without an
sm_90 device.
"""

from __future__ import annotations

import numpy as np
import pytest

import tessera
from tessera.dsl.specs import ScalarSpec, tensor
from tessera.dsl import tl
from tessera.kernels import gemm as G
from tessera.reference.oracles import error_bound, rel_error

torch = pytest.importorskip("torch")

TORCH = {"bf16": torch.bfloat16, "f16": torch.float16}
CONFIGS = [dict(BM=128, BN=256, BK=64, stages=4), dict(BM=128, BN=128, BK=64, stages=5),
           dict(BM=64, BN=256, BK=64, stages=4), dict(BM=128, BN=256, BK=32, stages=6),
           dict(BM=128, BN=128, BK=64, stages=5, schedule="pingpong"),
           dict(BM=128, BN=64, BK=64, stages=3, schedule="pingpong"),
           dict(BM=128, BN=256, BK=64, stages=4, cluster=2), dict(BM=128, BN=128, BK=64, stages=5, cluster=2),
           dict(BM=128, BN=128, BK=64, stages=5, schedule="pingpong", cluster=2),
           dict(BM=128, BN=64, BK=64, stages=8, cluster=2, multicast="a"),
           dict(BM=128, BN=64, BK=64, stages=8, schedule="pingpong", cluster=2, multicast="a"),
           dict(BM=256, BN=128, BK=64, stages=4), dict(BM=256, BN=128, BK=64, stages=4, cluster=2),
           dict(BM=192, BN=160, BK=64, stages=4), dict(BM=192, BN=160, BK=64, stages=4, cluster=2),
           dict(BM=128, BN=128, BK=64, stages=5, splitk=2), dict(BM=128, BN=64, BK=64, stages=8, schedule="pingpong",
                                                                   splitk=3),
           dict(BM=128, BN=128, BK=64, stages=5, cluster=2, splitk=2), dict(BM=128, BN=256, BK=64, stages=4, splitk=4)]
SHAPES = [(256, 512, 128), (300, 200, 136), (1000, 1000, 1000), (64, 8, 8192), (4000, 264, 72)]


@pytest.fixture(autouse=True)
def _needs_hopper():
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 device (H100/H200)")


def _run(M, N, K, dtype, cfg, epilogue, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)) / np.sqrt(K)
    w = rng.standard_normal((N, K))
    bias = rng.standard_normal((1, N)) if epilogue else None
    res = rng.standard_normal((M, N)) if epilogue else None
    alpha = 0.75
    d = lambda x: torch.from_numpy(np.asarray(x, np.float32)).cuda().to(TORCH[dtype])  # noqa: E731
    A, W = d(a), d(w)
    out = torch.full((M, N), float("nan"), dtype=TORCH[dtype], device="cuda")
    Bias, Res = (d(bias), d(res)) if epilogue else (None, None)
    specs = (tensor(("M", "K"), dtype), tensor(("N", "K"), dtype), tensor(("M", "N"), dtype),
             tensor((1, "N"), dtype) if epilogue else None, tensor(("M", "N"), dtype) if epilogue else None,
             ScalarSpec(tl.f32), None)
    meta = dict(BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], TRANS_B=True, ACTIVATION="gelu" if epilogue else "none")
    pipeline = (f"tessera-lower-to-nv{{arch=sm_90a stages={cfg['stages']} "
                f"schedule={cfg.get('schedule', 'cooperative')} cluster={cfg.get('cluster', 1)} "
                f"splitk={cfg.get('splitk', 1)} multicast={cfg.get('multicast', 'b')} streamk={cfg.get('streamk', 0)} "
                f"fixup={cfg.get('fixup', 'gather')}}}")
    ck = tessera.compile(G.gemm.trace(*specs, **meta), arch="sm_90a", pipeline=pipeline)
    args = [A, W, out] + ([Bias, Res] if epilogue else []) + [alpha]
    rec = ck.launch(G.grid(M, N, **meta), args, sync=True)
    assert rec.lane == "cuda" and rec.artifact_hash == ck.artifact_hash and rec.arch == "sm_90a"
    got = out.float().cpu().numpy().astype(np.float64)
    q = lambda t: t.float().cpu().numpy().astype(np.float64)  # noqa: E731 - the rounded inputs, exactly
    ref = G.reference_gemm(q(A), q(W), None, q(Bias) if epilogue else None, q(Res) if epilogue else None, alpha,
                           trans_b=True, activation="gelu" if epilogue else "none")
    assert not np.isnan(got).any(), "an element was never written"
    err = rel_error(got, ref)
    assert err <= error_bound(dtype), (M, N, K, cfg, err)
    return ck, args, out, got


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "{BM}x{BN}x{BK}s{stages}".format(**c) + c.get("schedule", "")
                         + ("c%d" % c["cluster"] if "cluster" in c else "") + ("k%d" % c["splitk"] if "splitk" in c else "")
                         + ("m" + c["multicast"] if "multicast" in c else ""))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_plain_product_bf16(shape, cfg):
    _run(*shape, "bf16", cfg, epilogue=False, seed=hash((shape, cfg["BN"])) % 2**32)


@pytest.mark.parametrize("shape", SHAPES[:3], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("cfg", [CONFIGS[0], CONFIGS[4], CONFIGS[6], CONFIGS[8], CONFIGS[10]],
                         ids=["cooperative", "pingpong", "cooperative-cluster2", "pingpong-cluster2",
                              "pingpong-cluster2-multicast-a"])
def test_fused_epilogue(shape, dtype, cfg):
    _run(*shape, dtype, cfg, epilogue=True, seed=7)


@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("split", [2, 3, 4])
@pytest.mark.parametrize("shape", [(1024, 1024, 16384), (128, 512, 8192), (200, 136, 1000), (300, 136, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_split_k_with_epilogue(shape, split, cluster):
    """gemm_splitk (sm_90a, wgmma) into an f32 workspace, then splitk_reduce with bias + gelu, against float64.
    With 2-CTA clusters an odd tile-row count (128 or 300 rows) leaves a spare CTA that must store nothing."""
    from tessera.kernels import gemm_splitk as SK

    M, N, K = shape
    rng = np.random.default_rng(split)
    q = lambda t: t.float().cpu().numpy().astype(np.float64)  # noqa: E731
    A = torch.from_numpy(rng.standard_normal((M, K)).astype(np.float32) / np.sqrt(K)).cuda().bfloat16()
    W = torch.from_numpy(rng.standard_normal((N, K)).astype(np.float32)).cuda().bfloat16()
    bias = torch.from_numpy(rng.standard_normal((1, N)).astype(np.float32)).cuda().bfloat16()
    out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    ws = torch.full((SK.workspace_rows(M, 128, split), N), float("nan"), dtype=torch.float32, device="cuda")
    part = tessera.compile(SK.gemm_splitk.trace(tensor(("M", "K"), "bf16"), tensor(("N", "K"), "bf16"),
                                                tensor(("R", "N"), "f32"), BM=128, BN=128, BK=64, SPLIT_K=split,
                                                TRANS_B=True), arch="sm_90a", stages=4, cluster=cluster)
    red = tessera.compile(SK.splitk_reduce.trace(tensor(("R", "N"), "f32"), tensor(("M", "N"), "bf16"),
                                                 tensor((1, "N"), "bf16"), None, ScalarSpec(tl.f32), None,
                                                 SPLIT_K=split, ACTIVATION="gelu"), arch="sm_90a")
    part.launch(SK.grid(M, N, BM=128, BN=128, SPLIT_K=split), [A, W, ws], sync=True)
    red.launch(SK.reduce_grid(M, N), [ws, out, bias, 1.0], sync=True)
    ref = G.reference_gemm(q(A), q(W), None, q(bias), None, 1.0, trans_b=True, activation="gelu")
    got = q(out)
    assert not np.isnan(got).any()
    assert rel_error(got, ref) <= error_bound("bf16")


@pytest.mark.parametrize("cfg", CONFIGS[-4:], ids=["coop-k2", "pingpong-k3", "coop-cluster2-k2", "coop-128x256-k4"])
@pytest.mark.parametrize("shape", [(1024, 1024, 16384), (128, 512, 8192), (300, 136, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_split_k_in_one_launch_repeats_bit_for_bit(shape, cfg):
    """warp-specialize splitk=S with bias + gelu + residual: right against float64, and a second launch (the
    runtime's scratch counters left at zero by the first) gives the same bits: the splits are added in order."""
    ck, args, out, got = _run(*shape, "bf16", cfg, epilogue=True, seed=3)
    out.fill_(float("nan"))
    ck.launch(G.grid(shape[0], shape[1], BM=cfg["BM"], BN=cfg["BN"]), args, sync=True)
    again = out.float().cpu().numpy().astype(np.float64)
    assert np.array_equal(got, again)


STREAMK = [dict(BM=128, BN=256, BK=64, stages=4, streamk=1), dict(BM=128, BN=256, BK=64, stages=4, cluster=2, streamk=1),
           dict(BM=128, BN=128, BK=64, stages=6, schedule="pingpong", streamk=1),
           dict(BM=128, BN=64, BK=64, stages=8, schedule="pingpong", streamk=1),
           dict(BM=256, BN=128, BK=64, stages=4, cluster=2, streamk=1)]


@pytest.mark.parametrize("cfg", STREAMK, ids=["coop-128x256", "coop-128x256-c2", "pingpong-128x128", "pingpong-128x64",
                                              "coop-256x128-c2"])
@pytest.mark.parametrize("shape", [(1024, 1024, 16384), (4096, 4096, 1024), (2048, 2048, 2048), (300, 136, 1000),
                                   (4000, 264, 72)], ids=lambda s: "x".join(map(str, s)))
def test_stream_k_repeats_bit_for_bit(shape, cfg):
    """warp-specialize streamk=1 with bias + gelu + residual: the partial last wave's K steps shared by all SMs
    (fewer tiles than SMs, 3.9 waves, a tile per SM, small grids, one K step), right against float64, and a
    second launch gives the same bits (the pieces are added in order; the counters were left at zero)."""
    ck, args, out, got = _run(*shape, "bf16", cfg, epilogue=True, seed=5)
    out.fill_(float("nan"))
    ck.launch(G.grid(shape[0], shape[1], BM=cfg["BM"], BN=cfg["BN"]), args, sync=True)
    again = out.float().cpu().numpy().astype(np.float64)
    assert np.array_equal(got, again)


SCATTER = [dict(BM=128, BN=256, BK=64, stages=4, splitk=4), dict(BM=128, BN=256, BK=64, stages=4, splitk=2),
           dict(BM=128, BN=128, BK=64, stages=5, splitk=2), dict(BM=256, BN=128, BK=64, stages=4, splitk=2)]


@pytest.mark.parametrize("cfg", SCATTER, ids=["128x256-k4", "128x256-k2", "128x128-k2", "256x128-k2"])
@pytest.mark.parametrize("shape", [(1024, 1024, 16384), (128, 512, 8192), (300, 520, 1000), (4096, 4096, 1024),
                                   (256, 512, 128)], ids=lambda s: "x".join(map(str, s)))
def test_split_k_scatter_fixup_gives_the_gather_bits(shape, cfg):
    """fixup=scatter (every split sums and stores its own columns once all have arrived; a cooperative launch)
    against float64, bit for bit the gather fixup's result (both add the splits in order), and again on a second
    launch (the counters went back to zero): few tiles, many rounds of units per CTA, ragged tiles, splits with
    no K steps (256 x 512 x 128: 2 steps among 4 splits)."""
    ck, args, out, got = _run(*shape, "bf16", {**cfg, "fixup": "scatter"}, epilogue=False, seed=11)
    assert ck.emitted.coresident and ck.loaded(0).cooperative
    _, _, _, gathered = _run(*shape, "bf16", cfg, epilogue=False, seed=11)
    assert np.array_equal(got, gathered)
    out.fill_(float("nan"))
    ck.launch(G.grid(shape[0], shape[1], BM=cfg["BM"], BN=cfg["BN"]), args, sync=True)
    assert np.array_equal(got, out.float().cpu().numpy().astype(np.float64))
