"""tile-to-fragments: the Fragment IR it produces, its warp-grid choice, its options and its diagnostics.

Numerics (Fragment IR == Tile IR on the reference interpreter) are in
test_tile_to_fragments_numerics.py; `gemm_ir` here is shared with it.
"""

from __future__ import annotations

import io

import pytest
from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.printer import Printer

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import (
    AllocOp,
    AsyncCopyOp,
    FragmentMmaOp,
    FragmentPackOp,
    FragmentStoreOp,
    FragmentUnpackOp,
    FragmentZeroOp,
    WaitOp,
)
from tessera.ir.parse import parse_module
from tessera.ir.tile_ops import LoadOp, MmaOp, StoreOp
from tessera.ir.types import FragmentType, TileType
from tessera.ir.verify import verify_module
from tessera.passes import parse_pipeline
from tessera.target.nvidia.passes.fragment_plan import plan_mma
from tessera.target.nvidia.passes.tile_to_fragments import TileToFragments


def gemm_ir(bm=128, bn=128, bk=32, elem="bf16", init="zero", epilogue="store", b_transposed=False) -> str:
    """A one-CTA-tile GEMM kernel in Tile IR: C (=|+=) A @ B over a K-loop, like the DSL's gemm.

    init: "zero" (C = A@B) or "c" (C += A@B: the accumulator starts from C's tile).
    epilogue: "store" (store the accumulator) or "relu" (max(acc, 0) then store).
    b_transposed: B is given as N x K and transposed in registers (an operand not staged via smem).
    """
    acc_t, a_t = f"!tile.tile<{bm}x{bn}xf32>", f"!tile.tile<{bm}x{bk}x{elem}>"
    b_t = f"!tile.tile<{bk}x{bn}x{elem}>"
    init_op = {"zero": f"%init = tile.constant 0.0 : {acc_t}",
               "c": f"%init = tile.load %C[%m0, %n0] pad 0.0 : memref<?x?xf32> -> {acc_t}"}[init]
    if b_transposed:
        b_ops = (f"%bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?x{elem}> -> !tile.tile<{bn}x{bk}x{elem}>\n"
                 f"      %b = tile.transpose %bt : !tile.tile<{bn}x{bk}x{elem}> -> {b_t}")
    else:
        b_ops = f"%b = tile.load %B[%k, %n0] pad 0.0 : memref<?x?x{elem}> -> {b_t}"
    if epilogue == "relu":
        out = (f"%zero = tile.constant 0.0 : {acc_t}\n    %r = tile.max %acc, %zero : {acc_t}\n"
               f"    tile.store %r, %C[%m0, %n0] : {acc_t} -> memref<?x?xf32>")
    else:
        out = f"tile.store %acc, %C[%m0, %n0] : {acc_t} -> memref<?x?xf32>"
    return f"""
func.func @gemm(%A: memref<?x?x{elem}>, %B: memref<?x?x{elem}>, %C: memref<?x?xf32>, %K: index) {{
    %pm = tile.program_id 0
    %pn = tile.program_id 1
    %c0 = arith.constant 0 : index
    %cbm = arith.constant {bm} : index
    %cbn = arith.constant {bn} : index
    %cbk = arith.constant {bk} : index
    %m0 = arith.muli %pm, %cbm : index
    %n0 = arith.muli %pn, %cbn : index
    {init_op}
    %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %init) -> ({acc_t}) {{
      %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?x{elem}> -> {a_t}
      {b_ops}
      %d = tile.mma %a, %b, %c : {a_t}, {b_t}, {acc_t}
      scf.yield %d : {acc_t}
    }}
    {out}
    func.return
}}
"""


def text_of(module) -> str:
    buf = io.StringIO()
    Printer(stream=buf).print_op(module)
    return buf.getvalue()


def lower(text: str, pipeline: str = "tile-to-fragments{arch=sm_80}"):
    module = parse_module(text, "gemm.mlir")
    verify_module(module)
    parse_pipeline(pipeline).apply(Context(), module)
    verify_module(module)
    return module


def ops_of(module, cls) -> list:
    return [op for op in module.walk() if isinstance(op, cls)]


def test_gemm_sm80_gives_staged_mma_sync_fragments_with_a_carried_accumulator():
    module = lower(gemm_ir())
    assert not ops_of(module, MmaOp) and not ops_of(module, LoadOp) and not ops_of(module, StoreOp)
    (loop,) = ops_of(module, scf.ForOp)
    acc_t = loop.body.block.args[1].type
    assert acc_t == loop.results[0].type == loop.iter_args[0].type
    assert isinstance(acc_t, FragmentType)
    contract = (acc_t.m.data, acc_t.n.data, acc_t.k.data, acc_t.role.data, acc_t.family.data)
    assert contract == (64, 64, 32, "acc", "mma_sync")
    # The loop-carried accumulator is what the mma reads, and its result is what the loop yields.
    (mma,) = ops_of(module, FragmentMmaOp)
    assert mma.acc is loop.body.block.args[1] and loop.body.block.last_op.operands[0] is mma.result
    assert isinstance(loop.iter_args[0].owner, FragmentZeroOp)
    # Buffers are allocated outside the loop, filled by async copies inside it and waited on before packing.
    allocs = ops_of(module, AllocOp)
    assert [a.result.type.get_shape() for a in allocs] == [(128, 32), (32, 128)]
    assert all(not loop.is_ancestor(a) for a in allocs)
    copies, (wait,) = ops_of(module, AsyncCopyOp), ops_of(module, WaitOp)
    assert [c.dest for c in copies] == [a.result for a in allocs] and list(wait.tokens) == [c.token for c in copies]
    packs = ops_of(module, FragmentPackOp)
    assert [p.source for p in packs] == [a.result for a in allocs]
    assert [p.result.type.layout.data for p in packs] == ["row", "row"]
    assert all(p.warps.data[0].data == 2 and p.warps.data[1].data == 2 for p in packs)
    (store,) = ops_of(module, FragmentStoreOp)
    assert store.value is loop.results[0]


def test_sm90a_gives_wgmma_fragments_over_two_warpgroups():
    module = lower(gemm_ir(), "tile-to-fragments{arch=sm_90a}")
    (mma,) = ops_of(module, FragmentMmaOp)
    t = mma.acc.type
    assert (t.m.data, t.n.data, t.k.data, t.family.data) == (64, 128, 32, "wgmma")
    assert [w.data for w in ops_of(module, FragmentPackOp)[0].warps.data] == [2, 1]


def test_nonzero_initial_accumulator_is_packed_from_its_tile_never_zeroed():
    module = lower(gemm_ir(init="c"))
    assert not ops_of(module, FragmentZeroOp)
    (loop,) = ops_of(module, scf.ForOp)
    init = loop.iter_args[0].owner
    assert isinstance(init, FragmentPackOp) and isinstance(init.source.owner, LoadOp)
    assert isinstance(init.source.type, TileType) and init.source.type.space_name == "reg"


def test_epilogue_reads_the_accumulator_through_one_unpack():
    module = lower(gemm_ir(epilogue="relu"))
    (loop,) = ops_of(module, scf.ForOp)
    (unpack,) = ops_of(module, FragmentUnpackOp)
    assert unpack.source is loop.results[0]
    assert unpack.result.type == TileType((128, 128), unpack.result.type.element_type)
    (store,) = ops_of(module, StoreOp)  # the stored value is max(acc, 0), not the fragment: no fragment_store
    assert not ops_of(module, FragmentStoreOp) and store.value.owner.name == "tile.max"


def test_a_transposed_operand_is_packed_from_registers():
    module = lower(gemm_ir(b_transposed=True))
    (alloc,) = ops_of(module, AllocOp)  # only A is staged through shared memory
    assert alloc.result.type.get_shape() == (128, 32)
    pack_b = [p for p in ops_of(module, FragmentPackOp) if p.result.type.role.data == "b"][0]
    assert pack_b.source.owner.name == "tile.transpose" and pack_b.source.type.space_name == "reg"


def test_output_prints_parses_and_verifies_again():
    text = text_of(lower(gemm_ir(init="c", epilogue="relu")))
    again = parse_module(text, "again.mlir")
    verify_module(again)
    assert text_of(again) == text


def test_a_module_without_mma_is_left_byte_identical():
    text = """
func.func @softmax_row(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %t = tile.load %X[%c0, %c0] pad -inf : memref<?x?xf32> -> !tile.tile<16x32xf32>
  %e = tile.exp %t : !tile.tile<16x32xf32>
  %z = tile.constant 0.0 : !tile.tile<16x32xf32>
  tile.store %e, %Y[%c0, %c0] : !tile.tile<16x32xf32> -> memref<?x?xf32>
  func.return
}
"""
    module = parse_module(text)
    before = text_of(module)
    TileToFragments(arch="sm_80").apply(Context(), module)
    assert text_of(module) == before


@pytest.mark.parametrize("family,bm,bn,want", [
    ("mma_sync", 128, 128, (2, 2)), ("mma_sync", 64, 64, (2, 2)), ("mma_sync", 16, 64, (1, 4)),
    ("mma_sync", 16, 8, (1, 1)), ("mma_sync", 256, 128, (4, 2)), ("mma_sync", 128, 256, (2, 4)),
    ("wgmma", 128, 128, (2, 1)), ("wgmma", 64, 256, (1, 1)), ("wgmma", 128, 512, (2, 2)),
])
def test_default_warp_grid(family, bm, bn, want):
    module = parse_module(gemm_ir(bm, bn, 32))
    (mma,) = ops_of(module, MmaOp)
    plan = plan_mma(mma, family, None)
    assert plan.warps == want
    assert (plan.m * want[0], plan.n * want[1], plan.k) == (bm, bn, 32)


def test_warps_option_overrides_the_grid():
    module = lower(gemm_ir(), "tile-to-fragments{arch=sm_80 warps=4,1}")
    t = ops_of(module, FragmentMmaOp)[0].acc.type
    assert (t.m.data, t.n.data) == (32, 128)


@pytest.mark.parametrize("ir,pipeline,phrase", [
    (gemm_ir(elem="f16").replace("xf32", "xf16"), "tile-to-fragments{arch=sm_80}", "a f16 accumulator"),
    (gemm_ir(bm=8, bn=64), "tile-to-fragments{arch=sm_80}", "m=8 is not a multiple of 16"),
    (gemm_ir(bk=8), "tile-to-fragments{arch=sm_86}", "k=8 is not a multiple of 16"),
    (gemm_ir(bm=32), "tile-to-fragments{arch=sm_90a}", "m=32 is not a multiple of 64"),
    (gemm_ir(), "tile-to-fragments{arch=sm_80 warps=3,1}", "does not split evenly over warps [3, 1]"),
    (gemm_ir(), "tile-to-fragments{arch=sm_80 warps=16,1}", "m=8 is not a multiple of 16"),
])
def test_untileable_mma_is_a_coded_error_at_the_mma(ir, pipeline, phrase):
    module = parse_module(ir, "gemm.mlir")
    before = text_of(module)
    with pytest.raises(D.TesseraError) as info:
        parse_pipeline(pipeline).apply(Context(), module)
    err = info.value
    assert err.code is D.TILE_FRAGMENT_UNSUPPORTED and phrase in err.message
    assert str(err).startswith("gemm.mlir:15:7: error: TILE_FRAGMENT_UNSUPPORTED:")  # the tile.mma line
    assert text_of(module) == before  # refused before any rewrite


@pytest.mark.parametrize("pipeline,code,phrase", [
    ("tile-to-fragments", D.OPT_OPTION_MISSING, "requires option 'arch'"),
    ("tile-to-fragments{arch=sm_80 bogus=1}", D.OPT_OPTION_UNKNOWN, "no option 'bogus'"),
    ("tile-to-fragments{arch=sm_75}", D.OPT_OPTION_INVALID, "'sm_75'"),
    ("tile-to-fragments{arch=sm_80 warps=2}", D.OPT_OPTION_INVALID, "two positive integers"),
    ("tile-to-fragments{arch=sm_80 warps=2,0}", D.OPT_OPTION_INVALID, "two positive integers"),
])
def test_bad_options_are_rejected_when_the_pipeline_is_parsed(pipeline, code, phrase):
    with pytest.raises(D.TesseraError) as info:
        parse_pipeline(pipeline)
    assert info.value.code is code and phrase in info.value.message


def test_arch_has_no_default_and_direct_construction_checks_it():
    with pytest.raises(TypeError):
        TileToFragments()  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="sm_100"):
        TileToFragments(arch="sm_100")


def test_a_loop_invariant_operand_is_staged_and_packed_once_before_the_loop():
    text = """
func.func @invariant_a(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %N: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %a = tile.load %A[%c0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x32xbf16>
  %init = tile.constant 0.0 : !tile.tile<64x64xf32>
  %acc = scf.for %j = %c0 to %N step %c64 iter_args(%c = %init) -> (!tile.tile<64x64xf32>) {
    %b = tile.load %B[%c0, %j] pad 0.0 : memref<?x?xbf16> -> !tile.tile<32x64xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<64x32xbf16>, !tile.tile<32x64xbf16>, !tile.tile<64x64xf32>
    scf.yield %d : !tile.tile<64x64xf32>
  }
  tile.store %acc, %C[%c0, %c0] : !tile.tile<64x64xf32> -> memref<?x?xf32>
  func.return
}
"""
    module = lower(text)
    (loop,) = ops_of(module, scf.ForOp)
    pack_a, pack_b = ops_of(module, FragmentPackOp)
    assert not loop.is_ancestor(pack_a) and loop.is_ancestor(pack_b)
    copies = ops_of(module, AsyncCopyOp)
    assert [loop.is_ancestor(c) for c in copies] == [False, True]
    waits = ops_of(module, WaitOp)
    assert [list(w.tokens) for w in waits] == [[copies[0].token], [copies[1].token]]
    (mma,) = ops_of(module, FragmentMmaOp)
    assert mma.a is pack_a.result
