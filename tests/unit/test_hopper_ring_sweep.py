"""The sm_90a GEMM for every ring depth x K-loop length, and every config the ops may pick, on the host emulator.

Issue 13: `tessera.compile(gemm, "sm_90a")` with its default stages=1 built a
kernel that deadlocked once the K-loop had two steps (the consumer kept the
only slot while a wgmma group stayed in flight), and nothing tested stages=1.
Here the emitted C++ of the named pipeline (`default_pipeline`, what
`tessera.compile` runs) runs on the g++ host emulator, where a wait that never
completes is RUNTIME_LAUNCH_TIMEOUT, against float64. tests/gpu/test_hopper_ring_sweep_gpu.py
runs the same matrix on the H200.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tessera.runtime.host_emulator as EH
from _hopper_sweep import (KPAIR_CONFIGS, KPAIR_SHAPES, RING_CONFIGS, RING_CTAS, RING_SHAPE, STAGES, STEPS, candidate_id,
                           candidates, compile_options, default_rule_outputs, k_for, operands, trace)
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.compiler.driver import default_pipeline, lower
from tessera.kernels import gemm as G
from tessera.reference.oracles import error_bound, rel_error


@pytest.fixture(autouse=True)
def _short_deadlock_limit(monkeypatch):
    """A deadlock here ends in 5 s, not 20 (the sweep's kernels finish in well under a second)."""
    monkeypatch.setattr(EH, "WAIT_LIMIT_S", 5)


def _emitted(cfg: dict, dtype: str = "f16", layout: str = "NT"):
    module, _ = lower(trace(cfg, dtype, layout), default_pipeline("sm_90a", **compile_options(cfg)), "sm_90a")
    return emit_cuda(module)


def _check(em, cfg: dict, M: int, N: int, K: int, dtype: str = "f16", seed: int = 0, layout: str = "NT") -> None:
    np_dtype = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    a, w, c, want = operands(M, N, K, np_dtype, seed, layout)
    EH.run_on_host(em, [a, w, c, 1.0], G.grid(M, N, BM=cfg["BM"], BN=cfg["BN"]))
    err = rel_error(c, want)
    assert err <= error_bound(dtype), f"{cfg} M={M} N={N} K={K}: relative error {err:.3g}"


@pytest.mark.parametrize("stages", STAGES)
@pytest.mark.parametrize("schedule", sorted(RING_CONFIGS))
def test_every_ring_depth_meets_every_k_loop_length(schedule, stages, monkeypatch):
    """stages 1..6 x K steps 1..8 (the last step partial), several ragged tiles per CTA."""
    monkeypatch.setattr(EH, "PERSISTENT_CTAS", RING_CTAS)
    cfg = {**RING_CONFIGS[schedule], "stages": stages}
    em = _emitted(cfg)
    for steps in STEPS:
        _check(em, cfg, *RING_SHAPE, k_for(steps), seed=steps)


@pytest.mark.parametrize("name", sorted(KPAIR_CONFIGS))
def test_split_k_in_a_cluster_meets_every_k_loop_length(name):
    """Split-K in a 2-CTA cluster: 6-12 tiles per cluster over the emulator's 2 clusters, K steps 1..8."""
    cfg = KPAIR_CONFIGS[name]
    em = _emitted(cfg, "bf16")
    for steps in STEPS:
        _check(em, cfg, *KPAIR_SHAPES[name], k_for(steps), "bf16", seed=steps)


def test_the_autotuner_candidates_hold_every_default_rule_output():
    """So the candidate sweep below covers what ops.gemm runs with no tuning run too."""
    held = {tuple(sorted(c.items())) for c in candidates()}
    missing = default_rule_outputs() - held
    assert not missing, f"default_config returns configs no candidate names: {sorted(missing)}"


def wrapping_k(cfg: dict) -> int:
    """A K whose loop goes round the config's ring twice and then some (both barrier phases, a slot refilled
    twice), the last step partial: 600 took 5 steps of a 128-deep config, which never wrapped an 8-deep ring."""
    return max(600, cfg["BK"] * 2 * cfg["stages"] + 24)


@pytest.mark.parametrize("cfg", candidates(), ids=candidate_id)
def test_every_config_the_autotuner_may_pick(cfg):
    """264 x 200 x `wrapping_k`: ragged, several tiles per CTA (one each for 128 x 256 tiles: split-K and stream-K
    still give CTAs several units), a K-loop more than twice the config's ring."""
    _check(_emitted(cfg, "bf16"), cfg, 264, 200, wrapping_k(cfg), "bf16", seed=7)


@pytest.mark.parametrize("cfg", candidates(), ids=candidate_id)
def test_every_config_the_autotuner_may_pick_for_a_plain_a_at_b(cfg):
    """The same for NN (B stored [K, N], MN-major in shared memory), the layout of a plain ops.gemm(a, b); TN and
    TT run a subset here (test_hopper_layouts) and every candidate on the H200."""
    _check(_emitted(cfg, "bf16", "NN"), cfg, 264, 200, wrapping_k(cfg), "bf16", seed=8, layout="NN")
