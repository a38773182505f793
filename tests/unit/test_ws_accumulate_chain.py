"""Two accumulators in one K-loop on the sm_90a general body: a gated MLP's gate and up projections.

warp-specialize keeps wgmma groups in flight across loop steps wherever a loop's only register work is its
wgmmas accumulating into the values it carries (ws_match.accumulates_only), not only for a GEMM's single
accumulator: here silu(A W1^T) * (A W2^T) in one kernel, two wgmmas a step. Host-emulator numerics against
float64 (ragged M, N and K, more K steps than ring slots, several tiles per CTA) and the SASS: both wgmmas'
HGMMAs, TMA loads, no local memory. Lit: passes/warp-specialize-accumulate-chain.mlir.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tessera.runtime.host_emulator as EH
from tessera.compiler import compile
from tessera.compiler.driver import default_pipeline, lower
from tessera.dsl import kernel, tl
from tessera.dsl.specs import tensor
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime import CompileCache
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import count_instructions, has_local_memory

BM, BN, BK = 128, 64, 64


@kernel
def gated_mlp(A, W1, W2, C, *, BM=128, BN=64, BK=64):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    gate = tl.zeros((BM, BN), tl.f32)
    up = tl.zeros((BM, BN), tl.f32)
    for k in tl.range(0, A.shape[1], BK):
        a = tl.load(A, [m0, k], (BM, BK))
        gate = tl.dot(a, tl.load(W1, [n0, k], (BN, BK)).T, gate)
        up = tl.dot(a, tl.load(W2, [n0, k], (BN, BK)).T, up)
    tl.store(C, [m0, n0], gate * tl.sigmoid(gate) * up)


def _traced():
    bf = "bf16"
    return gated_mlp.trace(tensor(("M", "K"), bf), tensor(("N", "K"), bf), tensor(("N", "K"), bf),
                           tensor(("M", "N"), "f32"), BM=BM, BN=BN, BK=BK)


@pytest.fixture(autouse=True)
def _short_deadlock_limit(monkeypatch):
    monkeypatch.setattr(EH, "WAIT_LIMIT_S", 5)
    monkeypatch.setattr(EH, "PERSISTENT_CTAS", 2)  # several tiles per CTA: the step counter crosses tiles


@pytest.mark.parametrize("stages, schedule", [(1, "cooperative"), (2, "cooperative"), (3, "cooperative"),
                                             (1, "pingpong"), (3, "pingpong")])
def test_two_accumulators_match_float64_on_the_host_emulator(stages, schedule):
    """stages=1 waits each step (the one slot is needed next); 2 and 3 keep a step's groups in flight (two, or four
    with whole-tile ping-pong: each consumer holds both 64-row blocks of its tile, two accumulators each, and the
    consumers take alternate tiles, handing the ring over through the turn barriers)."""
    module, _ = lower(_traced(), default_pipeline("sm_90a", stages=stages, store="registers", schedule=schedule),
                      "sm_90a")
    waits = [op.pending.value.data for op in module.walk() if op.name == "nv.wgmma_wait"]
    in_flight = 4 if schedule == "pingpong" else 2
    assert (in_flight in waits) == (stages > 1) and max(waits) <= in_flight, waits
    M, N, K = 200, 136, 456  # ragged: 2 x 3 tiles, 8 K steps (the last partial)
    rng = np.random.default_rng(5)
    bf = ml_dtypes.bfloat16
    a = rng.standard_normal((M, K)).astype(bf)
    w1 = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(bf)
    w2 = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(bf)
    c = np.full((M, N), np.nan, np.float32)
    EH.run_on_host(emit_cuda(module), [a, w1, w2, c], (-(-M // BM), -(-N // BN)))
    f = lambda x: x.astype(np.float64)  # noqa: E731
    g, u = f(a) @ f(w1).T, f(a) @ f(w2).T
    assert rel_error(c, g / (1 + np.exp(-g)) * u) <= error_bound("bf16")


@pytest.mark.parametrize("schedule, blocks", [("cooperative", 1), ("pingpong", 2)])
def test_two_accumulators_compile_to_hgmma_without_local_memory(schedule, blocks):
    ck = compile(_traced(), "sm_90a", stages=3, store="registers", schedule=schedule, cache=CompileCache(disk=False))
    sass = ck.sass()
    assert count_instructions(sass, f"HGMMA.64x{BN}x16.F32.BF16") == 2 * blocks * BK // 16
    assert count_instructions(sass, "UTMALDG") >= 4 and not has_local_memory(ck.cubin)
