"""pipeline-smem{stages=N}: the pipelined loop's shape, the loops it refuses, and stages=1 identity."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from test_tile_to_fragments import gemm_ir, lower, ops_of, text_of
from xdsl.context import Context
from xdsl.dialects import scf

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import AllocOp, AsyncCopyOp, FragmentPackOp, WaitOp
from tessera.ir.parse import parse_module
from tessera.ir.types import AsyncTokenType, TileType
from tessera.ir.verify import verify_module
from tessera.passes import parse_pipeline
from tessera.reference import run


def fragment_gemm() -> str:
    return text_of(lower(gemm_ir(64, 64, 16)))


def pipelined(text: str, stages: int):
    module = parse_module(text, "frag.mlir")
    parse_pipeline(f"pipeline-smem{{stages={stages}}}").apply(Context(), module)
    verify_module(module)
    return module


def test_the_pass_and_the_sm90a_ring_take_the_same_stages():
    from tessera.passes.pipeline_stages import MAX_STAGES
    from tessera.target.nvidia.knobs import MAX_STAGES as RING
    assert MAX_STAGES == RING == 12


@pytest.mark.parametrize("stages", [2, 3, 4, 12])
def test_pipelined_loop_shape(stages):
    module = pipelined(fragment_gemm(), stages)
    allocs = ops_of(module, AllocOp)
    assert len(allocs) == 2 * stages
    (loop,) = ops_of(module, scf.ForOp)
    copies = ops_of(module, AsyncCopyOp)
    prologue = [c for c in copies if not loop.is_ancestor(c)]
    steady = [c for c in copies if loop.is_ancestor(c)]
    assert len(prologue) == 2 * (stages - 1) and len(steady) == 2
    args = loop.body.block.args
    kinds = [("tok" if isinstance(a.type, AsyncTokenType) else "buf" if isinstance(a.type, TileType) else "acc")
             for a in args[1:]]
    assert kinds == ["acc"] + ["buf"] * (2 * stages) + ["tok"] * (2 * (stages - 1))
    a_bufs, b_bufs = args[2:2 + stages], args[2 + stages:2 + 2 * stages]
    a_toks = args[2 + 2 * stages:2 + 2 * stages + stages - 1]
    # Body: wait on the oldest copies, refill the buffer iteration k-1 read, pack from the stage-0 buffers.
    body_wait = next(op for op in loop.body.block.ops if isinstance(op, WaitOp))
    assert list(body_wait.tokens)[0] is a_toks[0]
    assert steady[0].dest is a_bufs[-1] and steady[1].dest is b_bufs[-1]
    assert [p.source for p in ops_of(module, FragmentPackOp)] == [a_bufs[0], b_bufs[0]]
    # Rotation: buffers shift by one stage, the new token joins at the end.
    yielded = list(loop.body.block.last_op.operands)
    assert yielded[1:1 + stages] == [*a_bufs[1:], a_bufs[0]]
    assert yielded[1 + 2 * stages + stages - 2] is steady[0].token
    # Prologue fills stages 0..N-2 with iterations 0..N-2; the epilogue drains what is still in flight.
    assert [c.dest for c in prologue[0::2]] == list(loop.iter_args[1:stages])
    (drain,) = [op for op in ops_of(module, WaitOp) if not loop.is_ancestor(op)]
    assert list(drain.tokens) == list(loop.results[1 + 2 * stages:])


def test_stages_1_leaves_the_module_byte_identical():
    text = fragment_gemm()
    before = text_of(parse_module(text, "frag.mlir"))
    assert text_of(pipelined(text, 1)) == before


def test_loops_without_copies_are_left_alone():
    text = gemm_ir(64, 64, 16)  # Tile IR: loads, no async copies
    assert text_of(pipelined(text, 3)) == text_of(parse_module(text, "frag.mlir"))


DUAL_GEMM = """
func.func @dual(%A: memref<?x?xbf16>, %B1: memref<?x?xbf16>, %B2: memref<?x?xbf16>, %C1: memref<?x?xf32>,
                %C2: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %pm, %c64 : index
  %n0 = arith.muli %pn, %c64 : index
  %i1 = tile.load %C1[%m0, %n0] pad 0.0 : memref<?x?xf32> -> !tile.tile<64x64xf32>
  %i2 = tile.constant 0.0 : !tile.tile<64x64xf32>
  %r1, %r2 = scf.for %k = %c0 to %K step %c16 iter_args(%x = %i1, %y = %i2)
      -> (!tile.tile<64x64xf32>, !tile.tile<64x64xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x16xbf16>
    %b1 = tile.load %B1[%k, %n0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<16x64xbf16>
    %x2 = tile.mma %a, %b1, %x : !tile.tile<64x16xbf16>, !tile.tile<16x64xbf16>, !tile.tile<64x64xf32>
    %kb = arith.addi %k, %c0 : index
    %b2 = tile.load %B2[%kb, %n0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<16x64xbf16>
    %y2 = tile.mma %a, %b2, %y : !tile.tile<64x16xbf16>, !tile.tile<16x64xbf16>, !tile.tile<64x64xf32>
    scf.yield %x2, %y2 : !tile.tile<64x64xf32>, !tile.tile<64x64xf32>
  }
  tile.store %r1, %C1[%m0, %n0] : !tile.tile<64x64xf32> -> memref<?x?xf32>
  tile.store %r2, %C2[%m0, %n0] : !tile.tile<64x64xf32> -> memref<?x?xf32>
  func.return
}
"""


def test_two_waits_per_iteration_are_pipelined_with_the_same_numbers():
    """Two mmas per K-step (one wait each, an offset computed in the body) still pipeline correctly."""
    tile_ir = parse_module(DUAL_GEMM, "dual.mlir")
    frag = lower(DUAL_GEMM, "tile-to-fragments{arch=sm_80},pipeline-smem{stages=3}")
    (loop,) = ops_of(frag, scf.ForOp)
    assert len([w for w in loop.body.block.ops if isinstance(w, WaitOp)]) == 2
    rng = np.random.default_rng(7)
    m, n, k = 100, 70, 50
    a, b1, b2 = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((m, k), (k, n), (k, n)))
    c1 = rng.standard_normal((m, n)).astype(np.float32)
    outs = []
    for module in (tile_ir, frag):
        o1, o2 = c1.copy(), np.zeros((m, n), np.float32)
        run(module, (2, 2), [a, b1, b2, o1, o2, k])
        outs.append((o1, o2))
    for want, got in zip(*outs):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(outs[0][1], a.astype(np.float64) @ b2.astype(np.float64), rtol=2e-2, atol=2e-2)


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


FA = 'role="a", layout="row", family="mma_sync">'
_WAIT = "      tile.wait %ta, %tb\n"


def _carried_offset(t: str) -> str:
    t = _edit(t, "iter_args(%c = %acc_init) -> (", "iter_args(%c = %acc_init, %kk = %c0) -> (")
    t = _edit(t, 'family="mma_sync">) {', 'family="mma_sync">, index) {')
    t = _edit(t, "%acc = scf.for", "%acc, %kend = scf.for")
    t = _edit(t, "tile.view %A[%m0, %k]", "tile.view %A[%m0, %kk]")
    t = _edit(t, "      scf.yield %d : ", "      %kn = arith.addi %kk, %cbk : index\n      scf.yield %d, %kn : ")
    return t.replace('family="mma_sync">\n    }', 'family="mma_sync">, index\n    }')


def _read_after_loop(t: str) -> str:
    pack = f"    %late = tile.fragment_pack %sa[%c0, %c0] warps [2, 2] : !tile.tile<64x16xbf16, smem> -> " \
           f"!tile.fragment<m=32, n=32, k=16, elem=bf16, acc=f32, {FA}\n"
    return _edit(t, "    tile.fragment_store", pack + "    tile.fragment_store")


def _pack_before_wait(t: str) -> str:
    t = _edit(t, _WAIT, "")
    return _edit(t, "      %d = tile.fragment_mma", _WAIT + "      %d = tile.fragment_mma")


def _foreign_token(t: str) -> str:
    pre = ("    %sx = tile.alloc : !tile.tile<64x16xbf16, smem>\n"
           "    %gx = tile.view %A[%m0, %c0] : memref<?x?xbf16> -> !tile.tile<64x16xbf16, global>\n"
           "    %tx = tile.async_copy %gx, %sx pad 0.0 : !tile.tile<64x16xbf16, global>, "
           "!tile.tile<64x16xbf16, smem>\n")
    t = _edit(t, "    %acc = scf.for", pre + "    %acc = scf.for")
    return _edit(t, "tile.wait %ta, %tb", "tile.wait %ta, %tb, %tx")


def _alloc_in_loop(t: str) -> str:
    t = _edit(t, "    %sa = tile.alloc : !tile.tile<64x16xbf16, smem>\n", "")
    alloc = "      %sa = tile.alloc : !tile.tile<64x16xbf16, smem>\n"
    return _edit(t, "      %ga = tile.view", alloc + "      %ga = tile.view")


@pytest.mark.parametrize("mutate,phrase", [
    (_carried_offset, "depends on a loop-carried value"),
    (_read_after_loop, "is also used by tile.fragment_pack"),
    (_pack_before_wait, "is read before the tile.wait"),
    (_foreign_token, "also waits on copies issued outside the loop body"),
    (_alloc_in_loop, "not a tile.alloc buffer allocated before the loop"),
])
def test_loops_it_cannot_pipeline_are_refused_with_a_reason(mutate, phrase):
    module = parse_module(mutate(fragment_gemm()), "frag.mlir")
    verify_module(module)
    before = text_of(module)
    with pytest.raises(D.TesseraError) as info:
        parse_pipeline("pipeline-smem{stages=2}").apply(Context(), module)
    assert info.value.code is D.TILE_PIPELINE_UNSUPPORTED and phrase in info.value.message
    assert "frag.mlir:" in str(info.value)
    assert text_of(module) == before  # nothing is pipelined partially


@pytest.mark.parametrize("pipeline,code", [
    ("pipeline-smem", D.OPT_OPTION_MISSING),
    ("pipeline-smem{stages=0}", D.OPT_OPTION_INVALID),
    ("pipeline-smem{stages=13}", D.OPT_OPTION_INVALID),
    ("pipeline-smem{stages=two}", D.OPT_OPTION_INVALID),
    ("pipeline-smem{stages=2 bogus=1}", D.OPT_OPTION_UNKNOWN),
])
def test_bad_stages_options_are_rejected(pipeline, code):
    with pytest.raises(D.TesseraError) as info:
        parse_pipeline(pipeline)
    assert info.value.code is code


def test_pipelining_twice_is_refused_not_compounded():
    module = pipelined(fragment_gemm(), 2)
    with pytest.raises(D.TesseraError) as info:
        parse_pipeline("pipeline-smem{stages=2}").apply(Context(), module)
    assert info.value.code is D.TILE_PIPELINE_UNSUPPORTED and "pipelined already" in info.value.message
