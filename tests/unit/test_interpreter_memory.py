"""Global memory, grids and staging in the reference interpreter: ragged edges, negative offsets,
program ids, shared-memory buffers, fragment pack/unpack/store and scalar arith."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tessera.ir import diagnostics as D
from tessera.ir.parse import parse_module
from tessera.reference import run

BF16 = np.dtype(ml_dtypes.bfloat16)


def copy_kernel(tm: int, tn: int, elem: str = "f32", pad: str = "-1.5") -> str:
    """@copy(%X, %Y, %i, %j): Y[i:i+tm, j:j+tn] = X[i:i+tm, j:j+tn] with padding `pad` on reads."""
    t = f"!tile.tile<{tm}x{tn}x{elem}>"
    return f"""func.func @copy(%X: memref<?x?x{elem}>, %Y: memref<?x?x{elem}>, %i: index, %j: index) {{
  %t = tile.load %X[%i, %j] pad {pad} : memref<?x?x{elem}> -> {t}
  tile.store %t, %Y[%i, %j] : {t} -> memref<?x?x{elem}>
  func.return
}}"""


def load_kernel(tm: int, tn: int) -> str:
    """@peek(%X, %Y, %i, %j): Y (tm x tn) = the tile of X at (i, j), padded with -1.5."""
    t = f"!tile.tile<{tm}x{tn}xf32>"
    return f"""func.func @peek(%X: memref<?x?xf32>, %Y: memref<{tm}x{tn}xf32>, %i: index, %j: index) {{
  %c0 = arith.constant 0 : index
  %t = tile.load %X[%i, %j] pad -1.5 : memref<?x?xf32> -> {t}
  tile.store %t, %Y[%c0, %c0] : {t} -> memref<{tm}x{tn}xf32>
  func.return
}}"""


def padded_window(x: np.ndarray, i: int, j: int, tm: int, tn: int, pad: float) -> np.ndarray:
    """The window by explicit index checks (the rule, written independently of the interpreter)."""
    out = np.full((tm, tn), pad, x.dtype)
    for r in range(tm):
        for c in range(tn):
            if 0 <= i + r < x.shape[0] and 0 <= j + c < x.shape[1]:
                out[r, c] = x[i + r, j + c]
    return out


@pytest.mark.parametrize("i,j", [(0, 0), (8, 4), (-3, 2), (5, -6), (-20, 0), (11, 13), (-4, -5), (40, 40)])
def test_ragged_and_negative_loads(i, j):
    rng = np.random.default_rng()
    x = rng.uniform(1, 2, size=(13, 17)).astype(np.float32)
    y = np.zeros((8, 8), np.float32)
    run(parse_module(load_kernel(8, 8)), 1, [x, y, i, j])
    np.testing.assert_array_equal(y, padded_window(x, i, j, 8, 8, -1.5))


@pytest.mark.parametrize("i,j", [(8, 4), (-3, 2), (5, -6), (11, 13), (-4, -5), (30, 0)])
def test_ragged_and_negative_stores_drop_outside(i, j):
    rng = np.random.default_rng()
    x = rng.uniform(1, 2, size=(13, 17)).astype(np.float32)
    y = np.full_like(x, 7.0)
    run(parse_module(copy_kernel(8, 8)), 1, [x, y, i, j])
    want = np.full_like(x, 7.0)
    rows = slice(max(i, 0), min(i + 8, 13))
    cols = slice(max(j, 0), min(j + 8, 17))
    want[rows, cols] = x[rows, cols]
    np.testing.assert_array_equal(y, want)


def test_grid_of_ragged_tiles_covers_a_matrix_exactly():
    rng = np.random.default_rng()
    x = rng.uniform(1, 2, size=(50, 37)).astype(BF16)
    y = np.zeros_like(x)
    text = """func.func @tiles(%X: memref<?x?xbf16>, %Y: memref<?x?xbf16>) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c16 = arith.constant 16 : index
  %i = arith.muli %pm, %c16 : index
  %j = arith.muli %pn, %c16 : index
  %t = tile.load %X[%i, %j] pad 0.0 : memref<?x?xbf16> -> !tile.tile<16x16xbf16>
  tile.store %t, %Y[%i, %j] : !tile.tile<16x16xbf16> -> memref<?x?xbf16>
  func.return
}"""
    res = run(parse_module(text), (4, 3), [x, y])
    assert res.programs == 12 and res.grid == (4, 3, 1)
    np.testing.assert_array_equal(y, x)


def test_tile_covers_trailing_dims_of_a_rank3_memref():
    rng = np.random.default_rng()
    x = rng.uniform(1, 2, size=(3, 10, 12)).astype(np.float32)
    y = np.zeros_like(x)
    text = """func.func @k(%X: memref<?x?x?xf32>, %Y: memref<?x?x?xf32>) {
  %b = tile.program_id 0
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %t = tile.load %X[%b, %c4, %c0] pad 0.0 : memref<?x?x?xf32> -> !tile.tile<8x12xf32>
  tile.store %t, %Y[%b, %c0, %c0] : !tile.tile<8x12xf32> -> memref<?x?x?xf32>
  func.return
}"""
    run(parse_module(text), 3, [x, y])
    want = np.zeros_like(x)
    want[:, 0:6, :] = x[:, 4:10, :]  # rows 10..11 of the window are padding, rows 6..7 of Y get zeros
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("grid", [5, (3, 2), (2, 3, 2)])
def test_program_id_and_num_programs(grid):
    dims = (grid,) if isinstance(grid, int) else grid
    full = tuple(dims) + (1,) * (3 - len(dims))
    out = np.full((full[2], full[1], full[0], 6), -1, np.int32)
    text = """func.func @ids(%O: memref<?x?x?x?xi32>) {
  %x = tile.program_id 0
  %y = tile.program_id 1
  %z = tile.program_id 2
  %nx = tile.num_programs 0
  %ny = tile.num_programs 1
  %nz = tile.num_programs 2
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %vals = arith.index_cast %x : index to i32
  memref.store %vals, %O[%z, %y, %x, %c0] : memref<?x?x?x?xi32>
  %vy = arith.index_cast %y : index to i32
  memref.store %vy, %O[%z, %y, %x, %c1] : memref<?x?x?x?xi32>
  %vz = arith.index_cast %z : index to i32
  memref.store %vz, %O[%z, %y, %x, %c2] : memref<?x?x?x?xi32>
  %wx = arith.index_cast %nx : index to i32
  memref.store %wx, %O[%z, %y, %x, %c3] : memref<?x?x?x?xi32>
  %wy = arith.index_cast %ny : index to i32
  memref.store %wy, %O[%z, %y, %x, %c4] : memref<?x?x?x?xi32>
  %wz = arith.index_cast %nz : index to i32
  memref.store %wz, %O[%z, %y, %x, %c5] : memref<?x?x?x?xi32>
  func.return
}"""
    run(parse_module(text), grid, [out])
    z, y, x = np.meshgrid(range(full[2]), range(full[1]), range(full[0]), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], x)
    np.testing.assert_array_equal(out[..., 1], y)
    np.testing.assert_array_equal(out[..., 2], z)
    assert (out[..., 3] == full[0]).all() and (out[..., 4] == full[1]).all() and (out[..., 5] == full[2]).all()


def test_scalar_arith_rounds_f32_and_wraps_i32():
    text = """func.func @s(%a: f32, %b: f32, %n: i32, %O: memref<4xf32>, %I: memref<3xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %s = arith.addf %a, %b : f32
  memref.store %s, %O[%c0] : memref<4xf32>
  %q = arith.divf %a, %b : f32
  memref.store %q, %O[%c1] : memref<4xf32>
  %zero = arith.constant 0.0 : f32
  %inf = arith.divf %a, %zero : f32
  memref.store %inf, %O[%c2] : memref<4xf32>
  %third = arith.constant 0.333333333333 : f32
  memref.store %third, %O[%c3] : memref<4xf32>
  %big = arith.constant 2147483647 : i32
  %w = arith.addi %big, %n : i32
  memref.store %w, %I[%c0] : memref<3xi32>
  %m7 = arith.constant -7 : i32
  %two = arith.constant 2 : i32
  %d = arith.divsi %m7, %two : i32
  memref.store %d, %I[%c1] : memref<3xi32>
  %cd = arith.ceildivsi %m7, %two : i32
  memref.store %cd, %I[%c2] : memref<3xi32>
  func.return
}"""
    rng = np.random.default_rng()
    a, b = float(rng.uniform(1, 2)), float(rng.uniform(1e-4, 1e-3))
    out, ints = np.zeros(4, np.float32), np.zeros(3, np.int32)
    run(parse_module(text), 1, [a, b, 5, out, ints])
    fa, fb = np.float32(a), np.float32(b)
    assert out[0] == fa + fb and out[1] == fa / fb and out[2] == np.inf
    assert out[3] == np.float32(0.333333333333)
    np.testing.assert_array_equal(ints, [-2**31 + 4, -3, -3])


def test_scalar_i1_logic_casts_and_math():
    text = """func.func @s(%n: index, %x: f32, %I: memref<3xi32>, %F: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %lt = arith.cmpi slt, %n, %c5 : index
  %t = arith.constant true
  %both = arith.andi %lt, %t : i1
  %u = arith.extui %both : i1 to i32
  memref.store %u, %I[%c0] : memref<3xi32>
  %s = arith.extsi %both : i1 to i32
  memref.store %s, %I[%c1] : memref<3xi32>
  %neg = arith.negf %x : f32
  %q = arith.fptosi %neg : f32 to i32
  memref.store %q, %I[%c2] : memref<3xi32>
  %e = math.exp %x : f32
  memref.store %e, %F[%c0] : memref<2xf32>
  %r = math.rsqrt %x : f32
  memref.store %r, %F[%c1] : memref<2xf32>
  func.return
}"""
    rng = np.random.default_rng()
    x = float(rng.uniform(1.5, 4.0))
    ints, floats = np.zeros(3, np.int32), np.zeros(2, np.float32)
    run(parse_module(text), 1, [3, x, ints, floats])
    x32 = np.float32(x)
    np.testing.assert_array_equal(ints, [1, -1, int(-x32)])
    x64 = np.float64(x32)
    np.testing.assert_array_equal(floats, [np.float32(np.exp(x64)), np.float32(1 / np.sqrt(x64))])
    run(parse_module(text), 1, [7, x, ints, floats])
    assert ints[0] == 0 and ints[1] == 0


def test_scf_for_carries_scalar_iter_args_and_reads_memref_dim():
    text = """func.func @tri(%X: memref<?xf32>, %O: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %X, %c0 : memref<?xf32>
  %z = arith.constant 0 : i32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (i32) {
    %v = arith.index_cast %i : index to i32
    %t = arith.addi %acc, %v : i32
    scf.yield %t : i32
  }
  memref.store %s, %O[%c0] : memref<1xi32>
  func.return
}"""
    out = np.zeros(1, np.int32)
    run(parse_module(text), 1, [np.zeros(23, np.float32), out])
    assert out[0] == 23 * 22 // 2


FACC8_BF16 = '!tile.fragment<m=8, n=8, k=8, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">'
FACC8_F32 = '!tile.fragment<m=8, n=8, k=8, elem=f32, acc=f32, role="acc", layout="row", family="mma_sync">'


def test_async_copy_pads_into_a_fresh_shared_buffer():
    rng = np.random.default_rng()
    x = rng.uniform(1, 2, size=(20, 10)).astype(BF16)
    y = np.zeros((16, 16), np.float32)
    text = f"""func.func @stage(%X: memref<?x?xbf16>, %Y: memref<?x?xf32>, %i: index, %j: index) {{
  %c0 = arith.constant 0 : index
  %s = tile.alloc : !tile.tile<16x16xbf16, smem>
  %v = tile.view %X[%i, %j] : memref<?x?xbf16> -> !tile.tile<16x16xbf16, global>
  %t = tile.async_copy %v, %s pad -2.0 : !tile.tile<16x16xbf16, global>, !tile.tile<16x16xbf16, smem>
  tile.wait %t
  %f = tile.fragment_pack %s[%c0, %c0] warps [2, 2] : !tile.tile<16x16xbf16, smem> -> {FACC8_BF16}
  tile.fragment_store %f, %Y[%c0, %c0] warps [2, 2] : {FACC8_BF16} -> memref<?x?xf32>
  func.return
}}"""
    run(parse_module(text), 1, [x, y, 12, -3])
    np.testing.assert_array_equal(y, padded_window(x, 12, -3, 16, 16, -2.0).astype(np.float32))


def test_pack_before_any_copy_reads_poison_not_zeros():
    y = np.zeros((8, 8), np.float32)
    text = f"""func.func @early(%Y: memref<?x?xf32>) {{
  %c0 = arith.constant 0 : index
  %s = tile.alloc : !tile.tile<8x8xf32, smem>
  %f = tile.fragment_pack %s[%c0, %c0] warps [1, 1] : !tile.tile<8x8xf32, smem> -> {FACC8_F32}
  tile.fragment_store %f, %Y[%c0, %c0] warps [1, 1] : {FACC8_F32} -> memref<?x?xf32>
  func.return
}}"""
    run(parse_module(text), 1, [y])
    assert np.isnan(y).all()


ROLE_TYPES = {  # role -> (fragment type, tile footprint for warps [2, 3])
    "a": ('!tile.fragment<m=4, n=5, k=6, elem=f32, acc=f32, role="a", layout="row", family="mma_sync">', (8, 6)),
    "b": ('!tile.fragment<m=4, n=5, k=6, elem=f32, acc=f32, role="b", layout="row", family="mma_sync">', (6, 15)),
    "b-col": ('!tile.fragment<m=4, n=5, k=6, elem=f32, acc=f32, role="b", layout="col", family="mma_sync">', (6, 15)),
    "acc": ('!tile.fragment<m=4, n=5, k=6, elem=f32, acc=f32, role="acc", layout="row", family="mma_sync">', (8, 15)),
}


@pytest.mark.parametrize("role", sorted(ROLE_TYPES))
def test_pack_then_unpack_is_identity_at_an_offset(role):
    """layout "col" packs from a source holding the transpose: the logical operand is the region's transpose."""
    frag, (h, w) = ROLE_TYPES[role]
    col = role.endswith("-col")
    rng = np.random.default_rng()
    shape = (w + 3, h + 2) if col else (h + 3, w + 2)
    x = rng.uniform(1, 2, size=shape).astype(np.float32)
    y = np.zeros((h, w), np.float32)
    src, out = f"!tile.tile<{shape[0]}x{shape[1]}xf32>", f"!tile.tile<{h}x{w}xf32>"
    text = f"""func.func @rt(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %t = tile.load %X[%c0, %c0] pad 0.0 : memref<?x?xf32> -> {src}
  %f = tile.fragment_pack %t[%c2, %c1] warps [2, 3] : {src} -> {frag}
  %u = tile.fragment_unpack %f warps [2, 3] : {frag} -> {out}
  tile.store %u, %Y[%c0, %c0] : {out} -> memref<?x?xf32>
  func.return
}}"""
    run(parse_module(text), 1, [x, y])
    np.testing.assert_array_equal(y, x[2:2 + w, 1:1 + h].T if col else x[2:2 + h, 1:1 + w])


def test_fragment_pack_outside_the_tile_is_a_coded_error():
    frag = ROLE_TYPES["acc"][0]
    text = f"""func.func @oob(%X: memref<?x?xf32>, %r: index) {{
  %c0 = arith.constant 0 : index
  %t = tile.load %X[%c0, %c0] pad 0.0 : memref<?x?xf32> -> !tile.tile<8x15xf32>
  %f = tile.fragment_pack %t[%r, %c0] warps [2, 3] : !tile.tile<8x15xf32> -> {frag}
  func.return
}}"""
    with pytest.raises(D.TesseraError) as err:
        run(parse_module(text, "oob.mlir"), 1, [np.ones((8, 15), np.float32), 1])
    assert err.value.code is D.REF_FRAGMENT_BOUNDS
    assert str(err.value).startswith("oob.mlir:4:")


def test_fragment_warp_grid_mismatch_is_a_coded_error():
    a = '!tile.fragment<m=4, n=4, k=4, elem=f32, acc=f32, role="a", layout="row", family="mma_sync">'
    b = '!tile.fragment<m=4, n=4, k=4, elem=f32, acc=f32, role="b", layout="col", family="mma_sync">'
    c = '!tile.fragment<m=4, n=4, k=4, elem=f32, acc=f32, role="acc", layout="row", family="mma_sync">'
    text = f"""func.func @mix(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {{
  %c0 = arith.constant 0 : index
  %t = tile.load %X[%c0, %c0] pad 0.0 : memref<?x?xf32> -> !tile.tile<12x12xf32>
  %fa = tile.fragment_pack %t[%c0, %c0] warps [2, 2] : !tile.tile<12x12xf32> -> {a}
  %fb = tile.fragment_pack %t[%c0, %c0] warps [3, 3] : !tile.tile<12x12xf32> -> {b}
  %z = tile.fragment_zero : {c}
  %d = tile.fragment_mma %fa, %fb, %z : {a}, {b}, {c}
  tile.fragment_store %d, %Y[%c0, %c0] warps [2, 2] : {c} -> memref<?x?xf32>
  func.return
}}"""
    y = np.zeros((8, 8), np.float32)
    with pytest.raises(D.TesseraError) as err:
        run(parse_module(text), 1, [np.ones((12, 12), np.float32), y])
    assert err.value.code is D.REF_WARP_GRID_MISMATCH
    assert "tile.fragment_mma" in err.value.message and "[2, 2]" in err.value.message
    assert not y.any(), "nothing may be stored after the failure"
