"""The sm_90a GEMM for every ring depth x K-loop length and every config the ops may pick, on the H200 (issue 13).

The same matrix as tests/unit/test_hopper_ring_sweep.py (tests/_hopper_sweep.py
holds it), compiled by `tessera.compile` and run with sync=True under a
short launch bound: a deadlock is RUNTIME_LAUNCH_TIMEOUT, not a stuck run.
Outputs start as NaN, inputs are fresh random values, checked against float64.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import tessera  # noqa: E402
from _hopper_sweep import (KPAIR_CONFIGS, LAYOUTS, RING_CONFIGS, STAGES, STEPS, candidate_id, candidates,  # noqa: E402
                           compile_options, k_for, trace)
from tessera.kernels import gemm as G  # noqa: E402
from tessera.reference.oracles import error_bound, rel_error  # noqa: E402

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _hopper_and_a_short_bound(monkeypatch):
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 device (H100/H200)")
    monkeypatch.setenv("TESSERA_LAUNCH_TIMEOUT_S", "20")


def _check(ck, cfg, M, N, K, seed, layout="NT"):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)) / np.sqrt(K)
    w = rng.standard_normal((N, K))
    A = torch.from_numpy(a.astype(np.float32)).cuda().bfloat16()
    W = torch.from_numpy(w.astype(np.float32)).cuda().bfloat16()
    out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    args = [A.t().contiguous() if layout[0] == "T" else A, W if layout[1] == "T" else W.t().contiguous(), out, 1.0]
    rec = ck.launch(G.grid(M, N, BM=cfg["BM"], BN=cfg["BN"]), args, sync=True)
    assert rec.lane == "cuda" and rec.arch == "sm_90a"
    q = lambda t: t.float().cpu().numpy().astype(np.float64)  # noqa: E731 - the rounded inputs, exactly
    got = q(out)
    assert not np.isnan(got).any(), f"{cfg} {M}x{N}x{K}: an element was never written"
    err = rel_error(got, q(A) @ q(W).T)
    assert err <= error_bound("bf16"), f"{cfg} {M}x{N}x{K}: relative error {err:.3g}"


@pytest.mark.parametrize("stages", STAGES)
@pytest.mark.parametrize("schedule", sorted(RING_CONFIGS))
def test_every_ring_depth_meets_every_k_loop_length(schedule, stages):
    """Many tiles per CTA on the GPU too: 132 SMs over 4 x 33 (or 66) ragged tiles of a 4000-row output."""
    cfg = {**RING_CONFIGS[schedule], "stages": stages}
    ck = tessera.compile(trace(cfg, "bf16"), "sm_90a", **compile_options(cfg))
    for steps in STEPS:
        for M, N in ((200, 136), (4000, 520)):
            _check(ck, cfg, M, N, k_for(steps), seed=steps)


@pytest.mark.parametrize("name", sorted(KPAIR_CONFIGS))
def test_split_k_in_a_cluster_meets_every_k_loop_length(name):
    """Split-K in a 2-CTA cluster (multicast=k) on the GPU: 66 clusters over 567 (or 96) ragged tiles of a
    4000 x 136 output, K steps 1..8; a lost distributed-shared-memory arrival is RUNTIME_LAUNCH_TIMEOUT."""
    cfg = KPAIR_CONFIGS[name]
    ck = tessera.compile(trace(cfg, "bf16"), "sm_90a", **compile_options(cfg))
    for steps in STEPS:
        for M, N in ((264, 40), (4000, 136)):
            _check(ck, cfg, M, N, k_for(steps), seed=steps)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("cfg", candidates(), ids=candidate_id)
def test_every_config_the_autotuner_may_pick(cfg, layout):
    ck = tessera.compile(trace(cfg, "bf16", layout), "sm_90a", **compile_options(cfg))
    for M, N, K in ((264, 200, 600), (2000, 1000, 1000), (64, 8, 4160)):
        _check(ck, cfg, M, N, K, seed=M, layout=layout)


@pytest.mark.parametrize("K", [64, 128, 1024])
def test_the_default_stages_of_compile_run_k_loops_of_several_steps(K):
    """The issue's reproducer: tessera.compile(gemm, "sm_90a") with no stages (1), 256 x 256 in 128 x 128 tiles;
    K=128 and 1024 never returned before."""
    cfg = dict(BM=128, BN=128, BK=64)
    ck = tessera.compile(trace(cfg, "bf16"), "sm_90a")
    _check(ck, cfg, 256, 256, K, seed=K)
