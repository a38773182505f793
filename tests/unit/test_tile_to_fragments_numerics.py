"""Fragment IR after tile-to-fragments (and pipeline-smem) computes what the Tile IR computes.

Each case runs the same GEMM kernel twice on the reference interpreter, as
Tile IR and after the passes, on fresh random inputs with ragged sizes (M, N,
K not multiples of the tile) and checks the outputs agree, and that both are
within the bf16 error bound of the float64 oracle. Deliberately broken Fragment
IR (a zeroed accumulator, a pipelined pack from the wrong stage buffer) must
fail the same check, so the check can fail.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from test_tile_to_fragments import gemm_ir, ops_of
from xdsl.context import Context
from xdsl.rewriter import InsertPoint, Rewriter

from tessera.ir.fragment_ops import FragmentMmaOp, FragmentPackOp, FragmentZeroOp
from tessera.ir.parse import parse_module
from tessera.passes import parse_pipeline
from tessera.reference import gemm_ref, rel_error, run
from tessera.reference.oracles import error_bound

BF16 = np.dtype(ml_dtypes.bfloat16)


def gemm_inputs(m, n, k, seed, init):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(BF16)
    b = rng.standard_normal((k, n)).astype(BF16)
    c = rng.standard_normal((m, n)).astype(np.float32) if init == "c" else np.zeros((m, n), np.float32)
    return a, b, c


def run_gemm(module, a, b, c, bm, bn):
    out = c.copy()
    m, n = out.shape
    run(module, (-(-m // bm), -(-n // bn)), [a, b, out, a.shape[1]])
    return out


def lowered(text, pipeline):
    module = parse_module(text, "gemm.mlir")
    parse_pipeline(pipeline).apply(Context(), module)
    return module


def check_same_numbers(text, module, bm, bn, sizes, init, epilogue="store", seed=0):
    """Fragment-IR `module` and Tile-IR `text` agree, and both match the oracle; AssertionError otherwise."""
    tile_ir = parse_module(text, "gemm.mlir")
    for i, (m, n, k) in enumerate(sizes):
        a, b, c = gemm_inputs(m, n, k, seed + i, init)
        want = run_gemm(tile_ir, a, b, c, bm, bn)
        got = run_gemm(module, a, b, c, bm, bn)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"M,N,K={m},{n},{k}")
        oracle = gemm_ref(a, b) + (c.astype(np.float64) if init == "c" else 0.0)
        if epilogue == "relu":
            oracle = np.maximum(oracle, 0.0)
        assert rel_error(want, oracle) <= error_bound("bf16")


RAGGED = [(150, 100, 70), (64, 24, 20), (40, 136, 96)]  # K=20 < BK: one partial step


@pytest.mark.parametrize("arch,tile", [
    ("sm_80", (128, 128, 32)), ("sm_80", (64, 64, 16)), ("sm_89", (16, 64, 32)),
    ("sm_90a", (128, 128, 32)), ("sm_90a", (64, 128, 16)),
])
@pytest.mark.parametrize("init", ["zero", "c"])
def test_fragments_match_tile_ir(arch, tile, init):
    text = gemm_ir(*tile, init=init)
    check_same_numbers(text, lowered(text, f"tile-to-fragments{{arch={arch}}}"), tile[0], tile[1], RAGGED, init)


@pytest.mark.parametrize("variant", [dict(epilogue="relu"), dict(b_transposed=True)])
def test_epilogue_and_register_operands_match_tile_ir(variant):
    text = gemm_ir(64, 64, 32, init="c", **variant)
    module = lowered(text, "tile-to-fragments{arch=sm_80}")
    if variant.get("b_transposed"):
        # B arrives as N x K: run both sides on B^T laid out that way.
        tile_ir = parse_module(text)
        for i, (m, n, k) in enumerate(RAGGED):
            a, b, c = gemm_inputs(m, n, k, 10 + i, "c")
            bt = np.ascontiguousarray(b.T)
            np.testing.assert_allclose(run_gemm(module, a, bt, c, 64, 64), run_gemm(tile_ir, a, bt, c, 64, 64),
                                       rtol=1e-6, atol=1e-6)
    else:
        check_same_numbers(text, module, 64, 64, RAGGED, "c", epilogue="relu")


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_pipelined_fragments_match_tile_ir(stages, arch):
    text = gemm_ir(64, 64, 16, init="c")
    module = lowered(text, f"tile-to-fragments{{arch={arch}}},pipeline-smem{{stages={stages}}}")
    # K = 20 and 40: fewer iterations than stages, so the prologue copies more than the loop reads.
    check_same_numbers(text, module, 64, 64, [(100, 70, 90), (64, 64, 20), (70, 30, 40)], "c", seed=stages)


def zero_the_accumulator(module):
    """The classic broken lowering: every fragment_mma starts from a fresh zero instead of its accumulator."""
    for mma in ops_of(module, FragmentMmaOp):
        zero = FragmentZeroOp(mma.acc.type)
        Rewriter.insert_op(zero, InsertPoint.before(mma))
        mma.operands[2] = zero.result


@pytest.mark.parametrize("init", ["zero", "c"])
def test_a_dropped_accumulator_fails_the_check(init):
    text = gemm_ir(64, 64, 16, init=init)
    module = lowered(text, "tile-to-fragments{arch=sm_80}")
    zero_the_accumulator(module)
    with pytest.raises(AssertionError):
        check_same_numbers(text, module, 64, 64, [(64, 64, 48)], init)


def test_packing_from_the_wrong_stage_buffer_fails_the_check():
    text = gemm_ir(64, 64, 16, init="zero")
    module = lowered(text, "tile-to-fragments{arch=sm_80},pipeline-smem{stages=3}")
    pack_a = next(p for p in ops_of(module, FragmentPackOp) if p.result.type.role.data == "a")
    stage0 = pack_a.source
    assert stage0.name_hint == "sa_s0"
    pack_a.operands[0] = stage0.block.args[stage0.index + 1]  # the buffer of iteration k+1
    with pytest.raises(AssertionError):
        check_same_numbers(text, module, 64, 64, [(64, 64, 64)], "zero")


# --- the shipped tile programs (tessera.kernels), traced by the DSL --------------------------------------------

PIPELINES = ["tile-to-fragments{arch=sm_80}", "tile-to-fragments{arch=sm_90a},pipeline-smem{stages=3}",
             "tile-to-fragments{arch=sm_86},pipeline-smem{stages=2}"]


def _outputs_agree(traced, grid, make_args, outputs):
    """Run the traced Tile IR and each pipeline's Fragment IR on the same inputs; every output must agree."""
    results = []
    for pipeline in ["", *PIPELINES]:
        module = traced.module.clone()
        if pipeline:
            parse_pipeline(pipeline).apply(Context(), module)
        args = make_args()
        run(module, grid, traced.func_args(*args))
        results.append([np.asarray(args[i]).astype(np.float64) for i in outputs])
    for pipeline, got in zip(PIPELINES, results[1:]):
        for want, have in zip(results[0], got):
            np.testing.assert_allclose(have, want, rtol=1e-6, atol=1e-6, err_msg=pipeline)
    return results[0]


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True)])
def test_dsl_gemm_with_epilogue(trans_a, trans_b):
    import tessera
    from tessera.kernels import gemm as G

    m, n, k = 100, 70, 90
    meta = dict(BM=64, BN=64, BK=32, ACTIVATION="gelu", TRANS_A=trans_a, TRANS_B=trans_b)
    a_shape, b_shape = ((k, m) if trans_a else (m, k)), ((n, k) if trans_b else (k, n))
    T = tessera.tensor
    traced = G.gemm.trace(T(("K", "M") if trans_a else ("M", "K"), tessera.bf16),
                          T(("N", "K") if trans_b else ("K", "N"), tessera.bf16), T(("M", "N"), tessera.f32),
                          T((1, "N"), tessera.f32), None, 1.0, 1.0, **meta)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(a_shape).astype(BF16), rng.standard_normal(b_shape).astype(BF16)
    c, bias = rng.standard_normal((m, n)).astype(np.float32), rng.standard_normal((1, n)).astype(np.float32)
    (out,) = _outputs_agree(traced, G.grid(m, n, **meta), lambda: [a, b, c.copy(), bias, None, 0.5, 0.25], [2])
    want = G.reference_gemm(a, b, c, bias, None, 0.5, 0.25, trans_a=trans_a, trans_b=trans_b, activation="gelu")
    assert rel_error(out, want) <= error_bound("bf16")


def test_dsl_flash_attention():
    """Two mmas per step, a rescaled loop-carried accumulator and a loop-invariant Q operand."""
    import tessera
    from tessera.kernels import flash_attention as F

    b, h, h_kv, s, d = 1, 2, 1, 100, 64
    meta = dict(BLOCK_M=64, BLOCK_N=32, CAUSAL=True)
    T = tessera.tensor
    traced = F.flash_attention.trace(T((b, h, "S", d), tessera.bf16), T((b, h_kv, "S", d), tessera.bf16),
                                     T((b, h_kv, "S", d), tessera.bf16), T((b, h, "S", d), tessera.bf16),
                                     T((b, h, "S"), tessera.f32), 0.125, **meta)
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal(shape).astype(BF16) for shape in ((b, h, s, d), (b, h_kv, s, d), (b, h_kv, s, d)))

    def args():
        return [q, k, v, np.zeros((b, h, s, d), BF16), np.zeros((b, h, s), np.float32), 0.125]

    o, lse = _outputs_agree(traced, F.grid(b, h, s, **meta), args, [3, 4])
    want_o, want_lse = F.reference_attention(q, k, v, 0.125, causal=True)
    assert rel_error(o, want_o) <= error_bound("bf16") and rel_error(lse, want_lse) <= error_bound("bf16")
