"""tiles=dynamic (warp-specialize's dynamic tile scheduler, passes/ws_sched.py), without a GPU.

A persistent CTA runs its block index first, then the tiles a launch-wide counter hands out (nv.tile_fetch,
through the producer and a ring of shared-memory words). Checked here on both warp-specialised roads (the GEMM
K-loop and the general loop body: attention, with and without tile overlap and ping-pong turns): the emitted
C++ matches float64 on the g++ host emulator (3 persistent CTAs, so most tiles are fetched); the counter is
back at zero after every launch, so a kept scratch buffer serves the next launch; NVRTC compiles the kernels
with HGMMA, one atomic and no local memory; and the combinations it cannot take are coded errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import tessera
import tessera.runtime.host_emulator as EH
from tessera.compiler.driver import lower
from tessera.compiler.launch_shape import LaunchShape
from tessera.ir.diagnostics import TesseraError
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime.scratch import scratch_bytes
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.ir.sched_ops import TileFetchOp
from tessera.target.nvidia.toolchain.sass import count_instructions, disassemble, resource_usage

from test_attention_sm90a import LSE_TOL, _run as run_attention, _trace as trace_attention
from test_hopper_layouts import LAYOUTS, NP, trace as trace_gemm


@pytest.fixture(autouse=True)
def _short_deadlock_limit(monkeypatch):
    """A deadlock ends in 5 s (these kernels finish in a few seconds on the emulator)."""
    monkeypatch.setattr(EH, "WAIT_LIMIT_S", 5)


def _emitted(traced, **knobs):
    module, _ = lower(traced, LaunchShape(tiles="dynamic", **knobs).pipeline("sm_90a"), "sm_90a")
    return emit_cuda(module)


ATTENTION = {  # name: (D, causal, BM, BN, stages, schedule, overlap, B, H, H_kv, S_q, S_k)
    "causal-d128-tile-overlap": (128, True, 128, 128, 2, "cooperative", True, 1, 3, 1, 389, 389),
    "causal-d64-no-overlap": (64, True, 128, 64, 2, "cooperative", False, 1, 2, 1, 300, 300),
    "full-d64-192rows-pingpong": (64, False, 192, 128, 2, "pingpong", True, 1, 2, 2, 400, 333),
    "decode-bm64-gqa": (128, False, 64, 128, 2, "cooperative", True, 2, 4, 2, 12, 300),
}


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_attention_on_the_host_emulator(name):
    D, causal, BM, BN, stages, schedule, overlap, B, H, H_kv, S_q, S_k = ATTENTION[name]
    em = _emitted(trace_attention(D, causal, BN, BM=BM, fold=True), stages=stages, schedule=schedule,
                  overlap=overlap)
    o, lse, (q, k, v, scale) = run_attention(em, B, H, H_kv, S_q, S_k, D, "bf16", causal, BM=BM)
    ro, rl = FA.reference_attention(q, k, v, scale, causal)
    assert rel_error(o, ro) <= error_bound("bf16"), name
    assert np.abs(lse - rl).max() <= LSE_TOL, name


def _gemm_operands(layout, M, N, K, seed=0):
    ta, tb = LAYOUTS[layout]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((K, M) if ta else (M, K)).astype(NP["bf16"])
    b = rng.standard_normal((N, K) if tb else (K, N)).astype(NP["bf16"])
    ref = G.reference_gemm(a.astype(np.float64), b.astype(np.float64), alpha=0.5, trans_a=ta, trans_b=tb)
    return a, b, ref


@pytest.mark.parametrize("layout, knobs", [("NT", {"stages": 3}), ("NN", {"stages": 4, "splitk": 2}),
                                           ("TN", {"stages": 3, "store": "registers"})],
                         ids=["NT", "NN-splitk2", "TN-registers"])
def test_gemm_on_the_host_emulator(layout, knobs):
    """300 x 264 x 200 in 128 x 64 tiles: 3 x 5 tiles over 3 CTAs, ragged everywhere."""
    M, N, K = 300, 264, 200
    em = _emitted(trace_gemm(layout, 128, 64, 64), **knobs)
    a, b, ref = _gemm_operands(layout, M, N, K)
    c = np.full((M, N), np.nan, NP["bf16"])
    EH.run_on_host(em, [a, b, c, 0.5], G.grid(M, N, BM=128, BN=64))
    assert rel_error(c.astype(np.float64), ref) <= error_bound("bf16")


def test_the_counter_is_reset_for_the_next_launch():
    """One scratch buffer over three launches, as the runtime keeps one per stream: each launch computes every
    tile (outputs start as NaN) and leaves the tile counter (and split-K's, the last 16 bytes of each tile's
    record) at zero."""
    M, N, K = 300, 264, 200
    em = _emitted(trace_gemm("NT", 128, 64, 64), stages=3, splitk=2)
    param = next(p for p in em.params if p.role == "scratch")
    assert param.head == TileFetchOp.COUNTER_BYTES
    logical = G.grid(M, N, BM=128, BN=64) + (1,)
    scratch = np.zeros(param.head + scratch_bytes(param.dim, logical, param.per_cta, (EH.PERSISTENT_CTAS, 1, 1)),
                       np.uint8)
    for seed in range(3):
        a, b, ref = _gemm_operands("NT", M, N, K, seed)
        c = np.full((M, N), np.nan, NP["bf16"])
        EH.run_on_host(em, [a, b, c, 0.5], G.grid(M, N, BM=128, BN=64), scratch=scratch)
        assert rel_error(c.astype(np.float64), ref) <= error_bound("bf16"), seed
        counters = [scratch[:param.head]] + [scratch[param.head + (t + 1) * param.dim - 16:][:16]
                                             for t in range(logical[0] * logical[1])]
        assert not np.concatenate(counters).any(), seed  # the tile counter and split-K's are back at zero


def test_a_scratch_buffer_too_small_is_refused():
    em = _emitted(trace_gemm("NT", 128, 64, 64), stages=3)
    a, b, _ = _gemm_operands("NT", 300, 264, 200)
    with pytest.raises(TesseraError, match="RUNTIME_ARG_INVALID.*at least 16 bytes"):
        EH.run_on_host(em, [a, b, np.zeros((300, 264), NP["bf16"]), 0.5], G.grid(300, 264, BM=128, BN=64),
                       scratch=np.zeros(8, np.uint8))


@pytest.mark.parametrize("what", ["causal-attention", "gemm"])
def test_compiles_with_hgmma_one_atomic_and_no_local_memory(what):
    if what == "gemm":
        traced, knobs, hgmma = trace_gemm("NT", 128, 256, 64), {"stages": 4}, 2 * 4
    else:
        traced, knobs, hgmma = trace_attention(128, True, 128, even=True, fold=True), {"stages": 2}, None
    ck = tessera.compile(traced, "sm_90a", tiles="dynamic", **knobs)
    static = tessera.compile(traced, "sm_90a", **knobs)
    sass = disassemble(ck.cubin)
    usage = next(iter(resource_usage(ck.cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0, usage
    assert count_instructions(sass, "LDL") == 0 and count_instructions(sass, "STL") == 0
    assert count_instructions(sass, "HGMMA") == count_instructions(disassemble(static.cubin), "HGMMA") > 0
    assert count_instructions(sass, "ATOMG") == 1  # the producer's fetch; the static kernel has none
    assert count_instructions(disassemble(static.cubin), "ATOMG") == 0


@pytest.mark.parametrize("knobs, words", [({"cluster": 2}, "cluster=2"), ({"streamk": True}, "streamk=True"),
                                          ({"tiles": "greedy"}, "tiles='greedy' is not one of")])
def test_launch_shape_refuses_what_dynamic_tiles_cannot_take(knobs, words):
    with pytest.raises(TesseraError, match="COMPILE_LAUNCH_SHAPE_INVALID") as err:
        LaunchShape(**{"tiles": "dynamic", **knobs})
    assert words in str(err.value)


def test_the_pipeline_text_names_dynamic_tiles_and_leaves_static_out():
    assert "tiles=dynamic" in LaunchShape(stages=2, tiles="dynamic").pipeline("sm_90a")
    assert "tiles" not in LaunchShape(stages=2).pipeline("sm_90a")  # cache keys written before the knob stay valid


def test_gemm_pingpong_with_dynamic_tiles_is_refused():
    with pytest.raises(TesseraError, match="NV_WGMMA_UNSUPPORTED.*tiles=dynamic with schedule=pingpong"):
        lower(trace_gemm("NT", 128, 128, 64), LaunchShape(stages=4, schedule="pingpong", tiles="dynamic")
              .pipeline("sm_90a"), "sm_90a")
