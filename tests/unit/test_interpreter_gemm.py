"""GEMM on the reference interpreter: Tile IR vs Fragment IR numerics, speed, and a broken K-loop.

The Fragment IR kernel is the hand-written form of what tile-to-fragments
produces (shared-memory staging, typed fragments over a warp grid, a
loop-carried accumulator fragment). Running it and the Tile IR kernel on the
same inputs and getting the same numbers is the precursor of "Fragment IR
after tile-to-fragments runs with the same numerics as the Tile IR".
"""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest

from tessera.ir.parse import parse_module
from tessera.reference import gemm_ref, rel_error, run
from tessera.reference.oracles import error_bound

NP = {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16), "f32": np.dtype(np.float32)}


def tile_gemm_ir(bm: int, bn: int, bk: int, elem: str = "f32", acc: str = "f32", carried: bool = True) -> str:
    """C[m0:, n0:] += A @ B per program (pm, pn), one BK slab per K-loop step; `carried=False` breaks it."""
    A, C = f"memref<?x?x{elem}>", f"memref<?x?x{acc}>"
    ta, tb, tc = f"!tile.tile<{bm}x{bk}x{elem}>", f"!tile.tile<{bk}x{bn}x{elem}>", f"!tile.tile<{bm}x{bn}x{acc}>"
    inner = "%c" if carried else "%zero"  # the bug: every step starts from a fresh zero accumulator
    return f"""func.func @gemm(%A: {A}, %B: {A}, %C: {C}) {{
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant {bm} : index
  %bn = arith.constant {bn} : index
  %bk = arith.constant {bk} : index
  %K = memref.dim %A, %c1 : {A}
  %m0 = arith.muli %pm, %bm : index
  %n0 = arith.muli %pn, %bn : index
  %zero = tile.constant 0.0 : {tc}
  %c_in = tile.load %C[%m0, %n0] pad 0.0 : {C} -> {tc}
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%c = %c_in) -> ({tc}) {{
    %a = tile.load %A[%m0, %k] pad 0.0 : {A} -> {ta}
    %b = tile.load %B[%k, %n0] pad 0.0 : {A} -> {tb}
    %d = tile.mma %a, %b, {inner} : {ta}, {tb}, {tc}
    scf.yield %d : {tc}
  }}
  tile.store %acc, %C[%m0, %n0] : {tc} -> {C}
  func.return
}}"""


def fragment_gemm_ir(bm: int, bn: int, bk: int, warps: tuple[int, int], elem: str = "bf16", acc: str = "f32",
                     carried: bool = True) -> str:
    """The same GEMM as Fragment IR: smem staging via async copies, fragments over `warps`."""
    wm, wn = warps
    m, n = bm // wm, bn // wn
    A, C = f"memref<?x?x{elem}>", f"memref<?x?x{acc}>"
    sa, sb = f"!tile.tile<{bm}x{bk}x{elem}, smem>", f"!tile.tile<{bk}x{bn}x{elem}, smem>"
    ga, gb = f"!tile.tile<{bm}x{bk}x{elem}, global>", f"!tile.tile<{bk}x{bn}x{elem}, global>"
    tc = f"!tile.tile<{bm}x{bn}x{acc}>"

    def frag(role: str, layout: str) -> str:
        return (f'!tile.fragment<m={m}, n={n}, k={bk}, elem={elem}, acc={acc}, role="{role}", '
                f'layout="{layout}", family="mma_sync">')

    fa, fb, fc = frag("a", "row"), frag("b", "row"), frag("acc", "row")
    w = f"[{wm}, {wn}]"
    inner = "%c" if carried else "%zero"
    return f"""func.func @gemm(%A: {A}, %B: {A}, %C: {C}) {{
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant {bm} : index
  %bn = arith.constant {bn} : index
  %bk = arith.constant {bk} : index
  %K = memref.dim %A, %c1 : {A}
  %m0 = arith.muli %pm, %bm : index
  %n0 = arith.muli %pn, %bn : index
  %sa = tile.alloc : {sa}
  %sb = tile.alloc : {sb}
  %zero = tile.fragment_zero : {fc}
  %c_tile = tile.load %C[%m0, %n0] pad 0.0 : {C} -> {tc}
  %c_in = tile.fragment_pack %c_tile[%c0, %c0] warps {w} : {tc} -> {fc}
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%c = %c_in) -> ({fc}) {{
    %va = tile.view %A[%m0, %k] : {A} -> {ga}
    %vb = tile.view %B[%k, %n0] : {A} -> {gb}
    %ta = tile.async_copy %va, %sa pad 0.0 : {ga}, {sa}
    %tb = tile.async_copy %vb, %sb pad 0.0 : {gb}, {sb}
    tile.wait %ta, %tb
    %fa = tile.fragment_pack %sa[%c0, %c0] warps {w} : {sa} -> {fa}
    %fb = tile.fragment_pack %sb[%c0, %c0] warps {w} : {sb} -> {fb}
    %d = tile.fragment_mma %fa, %fb, {inner} : {fa}, {fb}, {fc}
    scf.yield %d : {fc}
  }}
  tile.fragment_store %acc, %C[%m0, %n0] warps {w} : {fc} -> {C}
  func.return
}}"""


def operands(rng, M: int, N: int, K: int, elem: str, acc: str = "f32"):
    a = rng.standard_normal((M, K)).astype(np.float32).astype(NP[elem])
    b = rng.standard_normal((K, N)).astype(np.float32).astype(NP[elem])
    c = rng.standard_normal((M, N)).astype(np.float32).astype(NP[acc])
    return a, b, c


def grid_for(M: int, N: int, bm: int, bn: int) -> tuple[int, int]:
    return (-(-M // bm), -(-N // bn))


def test_gemm_512_f32_tile_ir_under_5s():
    rng = np.random.default_rng()
    a, b, _ = operands(rng, 512, 512, 512, "f32")
    c = np.zeros((512, 512), np.float32)
    module = parse_module(tile_gemm_ir(64, 64, 32), "gemm512.mlir")
    start = time.perf_counter()
    res = run(module, (8, 8), [a, b, c])
    wall = time.perf_counter() - start
    print(f"512x512x512 f32 GEMM, 64x64 tiles, BK=32: {wall:.3f} s total, {res.elapsed_s:.3f} s in the grid loop, "
          f"{res.ops_executed} ops")
    assert wall < 5.0
    assert res.programs == 64 and res.lane == "reference" and res.kernel == "gemm"
    assert rel_error(c, gemm_ref(a, b)) <= error_bound("f32")


@pytest.mark.parametrize("elem", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("M,N,K", [(256, 256, 128), (200, 136, 88)])  # exact and ragged
def test_fragment_ir_gemm_matches_tile_ir_gemm(M, N, K, elem):
    rng = np.random.default_rng()
    a, b, c0 = operands(rng, M, N, K, elem)
    bm, bn, bk = 128, 128, 32
    c_tile, c_frag = c0.copy(), c0.copy()
    run(parse_module(tile_gemm_ir(bm, bn, bk, elem)), grid_for(M, N, bm, bn), [a, b, c_tile])
    run(parse_module(fragment_gemm_ir(bm, bn, bk, (2, 2), elem)), grid_for(M, N, bm, bn), [a, b, c_frag])
    want = gemm_ref(a, b, c0, beta=1.0)  # C += A @ B: a non-zero initial accumulator is threaded
    assert rel_error(c_tile, want) <= error_bound(elem)
    assert rel_error(c_frag, want) <= error_bound(elem)
    if elem == "f32":  # f32 products: K-sums may round differently by blocking, by at most an ulp
        np.testing.assert_array_max_ulp(c_frag, c_tile, maxulp=1)
    else:  # bf16/f16 products and their K-sums are exact in float64: bitwise equal
        np.testing.assert_array_equal(c_frag, c_tile)


@pytest.mark.parametrize("warps", [(1, 1), (2, 1), (1, 4), (4, 2)])
def test_fragment_gemm_warp_grids_agree(warps):
    rng = np.random.default_rng()
    M, N, K = 128, 128, 96
    a, b, c0 = operands(rng, M, N, K, "bf16")
    c_tile, c_frag = c0.copy(), c0.copy()
    run(parse_module(tile_gemm_ir(64, 64, 32, "bf16")), (2, 2), [a, b, c_tile])
    run(parse_module(fragment_gemm_ir(64, 64, 32, warps, "bf16")), (2, 2), [a, b, c_frag])
    np.testing.assert_array_equal(c_frag, c_tile)


@pytest.mark.parametrize("build", [tile_gemm_ir, fragment_gemm_ir], ids=["tile", "fragment"])
def test_k_loop_that_drops_the_accumulator_fails_the_numeric_check(build):
    """Lesson 1 of DESIGN: an mma that starts each step from a fresh zero computes only the last K step."""
    rng = np.random.default_rng()
    M, N, K = 64, 64, 128
    a, b, c0 = operands(rng, M, N, K, "bf16")
    args = (64, 64, 32, (2, 2)) if build is fragment_gemm_ir else (64, 64, 32)
    good, bad = c0.copy(), c0.copy()
    run(parse_module(build(*args, elem="bf16")), (1, 1), [a, b, good])
    run(parse_module(build(*args, elem="bf16", carried=False)), (1, 1), [a, b, bad])
    want = gemm_ref(a, b, c0, beta=1.0)
    assert rel_error(good, want) <= error_bound("bf16")
    assert rel_error(bad, want) > 10 * error_bound("bf16")
    # What the broken kernel computes instead: only the last BK slab, and no C.
    np.testing.assert_allclose(bad, gemm_ref(a[:, 96:], b[96:, :]), rtol=1e-6, atol=1e-5)


def test_run_result_names_lane_kernel_and_ir_hash():
    text = tile_gemm_ir(32, 32, 16)
    rng = np.random.default_rng()
    a, b, c = operands(rng, 32, 32, 32, "f32")
    r1 = run(parse_module(text, "one.mlir"), (1, 1), [a, b, c])
    r2 = run(parse_module(text, "two.mlir"), (1, 1), [a, b, c])
    r3 = run(parse_module(tile_gemm_ir(32, 32, 8)), (1, 1), [a, b, c])
    assert (r1.lane, r1.kernel) == ("reference", "gemm")
    assert len(r1.ir_hash) == 64 and r1.ir_hash == r2.ir_hash == r1.artifact_hash
    assert r3.ir_hash != r1.ir_hash
