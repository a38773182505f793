"""CPU checks of the fragment lane maps (DESIGN.md section 2).

Every map is a bijection and pack/unpack are inverses; an emulated MMA that
moves data only through the maps (and, for wgmma, through swizzled shared
memory addressed by descriptors) equals numpy matmul in float64; row
reductions built from in-lane combines and xor-shuffles equal numpy; and a
deliberately wrong map makes the MMA check fail.
"""

from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

from tessera.layouts import (LaneMap, from_b32, lane_map, smem_layout, to_b32,
                             warp_tile_map)
from tessera.layouts import emulate
from tessera.layouts.lane_map import NP_DTYPES

DTYPES = ("bf16", "f16")
MODES = ("none", "32B", "64B", "128B")

ALL_MAPS = [
    *[("mma_sync", role, 16, 8, 16, dt) for role in ("a", "b", "acc") for dt in DTYPES],
    *[("wgmma", "acc", 64, n, 16, dt) for n in (8, 64, 136, 256) for dt in DTYPES],
    ("wgmma", "a", 64, 64, 16, "bf16"),
]
TILE_MAPS = [("mma_sync", role, 64, 32, 32, "bf16") for role in ("a", "b", "acc")] + [
    ("mma_sync", "acc", 16, 8, 32, "f16"),
    ("wgmma", "acc", 128, 64, 32, "bf16"),
    ("wgmma", "a", 128, 64, 32, "bf16"),
]


def rand(rng, shape, dtype):
    """Random values exactly representable in ``dtype``, as that dtype."""
    return rng.standard_normal(shape).astype(NP_DTYPES[dtype])


def f64(x):
    return np.asarray(x).astype(np.float64)


# -- the tables themselves ----------------------------------------------------

def test_mma_sync_tables_match_ptx_isa_examples():
    # Lane 5: groupID 1, threadID_in_group 1 (PTX ISA figures for m16n8k16).
    a = lane_map("mma_sync", "a", 16, 8, 16, "bf16")
    assert [(a.rows[5, i], a.cols[5, i]) for i in (0, 1, 2, 4, 7)] == [
        (1, 2), (1, 3), (9, 2), (1, 10), (9, 11)]
    b = lane_map("mma_sync", "b", 16, 8, 16, "bf16")
    assert [(b.rows[5, i], b.cols[5, i]) for i in range(4)] == [(2, 1), (3, 1), (10, 1), (11, 1)]
    acc = lane_map("mma_sync", "acc", 16, 8, 16, "bf16")
    assert [(acc.rows[31, i], acc.cols[31, i]) for i in range(4)] == [
        (7, 6), (7, 7), (15, 6), (15, 7)]
    assert (a.regs, b.regs, acc.regs) == (8, 4, 4)
    assert (a.elem, acc.elem, a.pack_width, acc.pack_width) == ("bf16", "f32", 2, 1)


def ptx_mma_m16n8k16(role, lane, i):
    """PTX ISA 9.7.14.5.8, transcribed per element as scalar code: (row, col) of slot i."""
    group, tig = lane >> 2, lane % 4
    if role == "a":
        row = group if i < 2 or 4 <= i < 6 else group + 8
        col = tig * 2 + (i & 1) + (8 if i >= 4 else 0)
    elif role == "b":
        row = tig * 2 + (i & 1) + (8 if i >= 2 else 0)
        col = group
    else:
        row = group if i < 2 else group + 8
        col = tig * 2 + (i & 1)
    return row, col


@pytest.mark.parametrize("role", ["a", "b", "acc"])
def test_mma_sync_tables_equal_ptx_formulas_everywhere(role):
    lm = lane_map("mma_sync", role, 16, 8, 16, "f16")
    for lane in range(32):
        for i in range(lm.regs):
            assert (lm.rows[lane, i], lm.cols[lane, i]) == ptx_mma_m16n8k16(role, lane, i)
    wa = lane_map("wgmma", "a", 64, 8, 16, "f16")
    if role == "a":  # wgmma A from registers: the same pattern, warp w on rows 16w..
        for lane in range(128):
            for i in range(8):
                r, c = ptx_mma_m16n8k16("a", lane % 32, i)
                assert (wa.rows[lane, i], wa.cols[lane, i]) == (16 * (lane // 32) + r, c)


def test_wgmma_acc_matches_ptx_formula():
    n = 64
    d = lane_map("wgmma", "acc", 64, n, 16, "f16")
    lane, reg = np.meshgrid(np.arange(128), np.arange(n // 2), indexing="ij")
    w, g, t, j, i = lane // 32, (lane % 32) // 4, lane % 4, reg // 4, reg % 4
    np.testing.assert_array_equal(d.rows, 16 * w + g + 8 * (i // 2))
    np.testing.assert_array_equal(d.cols, 8 * j + 2 * t + i % 2)
    # each warp's 16x8 blocks repeat the mma.sync accumulator
    m = lane_map("mma_sync", "acc", 16, 8, 16, "f16")
    np.testing.assert_array_equal(d.rows[32:64, 4:8] - 16, m.rows)
    np.testing.assert_array_equal(d.cols[32:64, 4:8] - 8, m.cols)


def test_variants_share_layout_and_record_dtype():
    bf, fp = (lane_map("mma_sync", "a", 16, 8, 16, dt) for dt in DTYPES)
    np.testing.assert_array_equal(bf.rows, fp.rows)
    assert (bf.key.dtype, fp.key.dtype) == ("bf16", "f16")
    assert lane_map("mma_sync", "a", 16, 8, 16, "bf16") is bf  # cached, immutable
    assert not bf.rows.flags.writeable


@pytest.mark.parametrize("combo", [
    ("mma_sync", "acc", 16, 16, 16, "bf16"),  # not the atom shape
    ("mma_sync", "a", 16, 8, 16, "f32"),
    ("mma_sync", "c", 16, 8, 16, "bf16"),
    ("auto", "acc", 16, 8, 16, "bf16"),
    ("tcgen05", "acc", 16, 8, 16, "bf16"),
    ("wgmma", "acc", 64, 12, 16, "bf16"),
    ("wgmma", "acc", 64, 264, 16, "bf16"),
    ("wgmma", "b", 64, 64, 16, "bf16"),
])
def test_unsupported_combination_names_itself(combo):
    family, role, m, n, k, dtype = combo
    with pytest.raises(ValueError, match=f"family='{family}', role='{role}', m={m}, n={n}"):
        lane_map(*combo)


def test_warp_tile_must_be_multiple_of_atom():
    with pytest.raises(ValueError, match="m=24, n=32, k=32.*multiple of its atom"):
        warp_tile_map("mma_sync", "acc", 24, 32, 32, "bf16")


# -- bijection, pack / unpack ------------------------------------------------

@pytest.mark.parametrize("combo", ALL_MAPS + TILE_MAPS, ids=str)
def test_map_is_bijection_and_pack_unpack_roundtrip(combo):
    fn = lane_map if combo in ALL_MAPS else warp_tile_map
    lm = fn(*combo)
    R, C = lm.shape
    assert lm.lanes in (32, 128) and lm.lanes * lm.regs == R * C
    hits = np.bincount((lm.rows * C + lm.cols).ravel(), minlength=R * C)
    assert (hits == 1).all()
    rng = np.random.default_rng(hash(combo) % 2**32)
    x = rand(rng, (R, C), lm.elem)
    assert (lm.unpack(lm.pack(x)) == x).all()
    frag = rand(rng, (lm.lanes, lm.regs), lm.elem)
    assert (lm.pack(lm.unpack(frag)) == frag).all()
    lane, reg = lm.owners
    assert (lane[lm.rows, lm.cols] == np.arange(lm.lanes)[:, None]).all()
    assert (reg[lm.rows, lm.cols] == np.arange(lm.regs)).all()


def test_non_bijective_map_is_rejected():
    acc = lane_map("mma_sync", "acc", 16, 8, 16, "bf16")
    rows = acc.rows.copy()
    rows[0, 0] = rows[0, 2]  # (8, 0) twice, (0, 0) never
    with pytest.raises(ValueError, match="exactly once"):
        LaneMap(acc.key, rows, acc.cols.copy(), acc.elem)


def test_b32_registers_hold_even_slot_in_low_half():
    a = lane_map("mma_sync", "a", 16, 8, 16, "f16")
    frag = a.pack(rand(np.random.default_rng(1), a.shape, "f16"))
    regs = to_b32(frag)  # [32, 4] .f16x2 registers
    assert regs.shape == (32, 4) and regs.dtype == np.uint32
    assert (regs[:, 1] & 0xFFFF == frag[:, 2].view(np.uint16)).all()
    assert (from_b32(regs, frag.dtype) == frag).all()


# -- emulated MMAs -------------------------------------------------------------

def run_warp_mma(family, m, n, k, dtype, seed, a=None):
    """Pack A, B, C; emulate through the maps; unpack D; return (D, numpy reference)."""
    rng = np.random.default_rng(seed)
    a = a or warp_tile_map(family, "a", m, n, k, dtype)
    b = warp_tile_map(family, "b", m, n, k, dtype)
    acc = warp_tile_map(family, "acc", m, n, k, dtype)
    A, B = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype)
    C = rng.standard_normal((m, n)).astype(np.float32)
    d = emulate.warp_tile_mma(a, b, acc, a.pack(A), b.pack(B), acc.pack(C))
    return acc.unpack(d), f64(A) @ f64(B) + f64(C)


@pytest.mark.parametrize("dtype", DTYPES)
def test_emulated_mma_sync_atom_equals_matmul(dtype):
    got, want = run_warp_mma("mma_sync", 16, 8, 16, dtype, seed=2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_emulated_warp_tile_64x32x32_equals_matmul():
    got, want = run_warp_mma("mma_sync", 64, 32, 32, "bf16", seed=3)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_composed_registers_are_atoms_in_stated_order():
    acc = warp_tile_map("mma_sync", "acc", 64, 32, 32, "bf16")
    atom = lane_map("mma_sync", "acc", 16, 8, 16, "bf16")
    assert acc.atom_grid == (4, 4) and acc.atom_slice(2, 3) == slice(44, 48)  # (mi, ni)
    np.testing.assert_array_equal(acc.rows[:, 44:48], atom.rows + 32)
    np.testing.assert_array_equal(acc.cols[:, 44:48], atom.cols + 24)
    b = warp_tile_map("mma_sync", "b", 64, 32, 32, "bf16")
    assert b.atom_grid == (2, 4) and b.atom_slice(1, 0) == slice(16, 20)  # (ki, ni)


def test_wrong_map_fails_emulated_mma():
    a = lane_map("mma_sync", "a", 16, 8, 16, "bf16")
    swapped = a.rows.copy()
    swapped[[0, 5]] = swapped[[5, 0]]  # lanes 0 and 5 trade A rows/cols
    cols = a.cols.copy()
    cols[[0, 5]] = cols[[5, 0]]
    wrong = replace(a, rows=swapped, cols=cols)  # still a bijection: pack/unpack pass
    x = rand(np.random.default_rng(4), a.shape, "bf16")
    assert (wrong.unpack(wrong.pack(x)) == x).all()
    # The "hardware" reads lane 0's registers as the true layout says; a compiler
    # that packed with the wrong map hands it the wrong elements.
    rng = np.random.default_rng(5)
    b = lane_map("mma_sync", "b", 16, 8, 16, "bf16")
    acc = lane_map("mma_sync", "acc", 16, 8, 16, "bf16")
    A, B = rand(rng, (16, 16), "bf16"), rand(rng, (16, 8), "bf16")
    C = np.zeros((16, 8), np.float32)
    d = emulate.mma(a, b, acc, wrong.pack(A), b.pack(B), acc.pack(C))
    assert not np.allclose(acc.unpack(d), f64(A) @ f64(B))
    got, want = run_warp_mma("mma_sync", 16, 8, 16, "bf16", seed=6)
    assert np.allclose(got, want)  # the same check passes with the right map


def smem_tile(layout, tile, size):
    smem = np.zeros(size, np.uint8)
    emulate.store_tile(smem, layout, tile)
    return smem


@pytest.mark.parametrize("mode", MODES)
def test_emulated_wgmma_m64n64k16_from_swizzled_smem_equals_matmul(mode):
    M = N = K = 64  # four k16 instructions over a 64-wide K tile
    rng = np.random.default_rng(7)
    acc = lane_map("wgmma", "acc", 64, N, 16, "bf16")
    A, Bt = rand(rng, (M, K), "bf16"), rand(rng, (N, K), "bf16")  # Bt: B stored K-major
    C = rng.standard_normal((M, N)).astype(np.float32)
    sA, sB = smem_layout(M, K, "bf16", mode), smem_layout(N, K, "bf16", mode)
    base_b = sA.size_bytes  # B right after A; both 1024-byte aligned
    smem = np.zeros(sA.size_bytes + sB.size_bytes, np.uint8)
    emulate.store_tile(smem, sA, A)
    emulate.store_tile(smem, sB, Bt, base=base_b)
    d = acc.pack(C)
    for k0 in range(0, K, 16):
        d = emulate.wgmma_ss(acc, smem, sA.descriptor(k0), sB.descriptor(k0, base=base_b), d)
    np.testing.assert_allclose(acc.unpack(d), f64(A) @ f64(Bt).T + f64(C), rtol=1e-12, atol=1e-12)


def test_emulated_wgmma_with_a_from_registers_equals_matmul():
    rng = np.random.default_rng(8)
    a = lane_map("wgmma", "a", 64, 32, 16, "f16")
    acc = lane_map("wgmma", "acc", 64, 32, 16, "f16")
    A, Bt = rand(rng, (64, 16), "f16"), rand(rng, (32, 16), "f16")
    sB = smem_layout(32, 16, "f16", "32B")
    smem = smem_tile(sB, Bt, sB.size_bytes)
    d = emulate.wgmma_rs(acc, a, a.pack(A), smem, sB.descriptor(0), np.zeros((128, 16)))
    np.testing.assert_allclose(acc.unpack(d), f64(A) @ f64(Bt).T, rtol=1e-12, atol=1e-12)


# -- row reductions, masks, stores ----------------------------------------------

@pytest.mark.parametrize("family,m,n,k", [
    ("mma_sync", 16, 8, 16), ("mma_sync", 64, 32, 32), ("wgmma", 64, 64, 16)])
@pytest.mark.parametrize("op,ref", [(np.maximum, np.max), (np.add, np.sum)])
def test_row_reduction_through_xor_shuffles(family, m, n, k, op, ref):
    acc = warp_tile_map(family, "acc", m, n, k, "bf16")
    assert acc.row_shuffle_masks() == (1, 2)  # a row lives in a quad of lanes
    x = np.random.default_rng(9).standard_normal((m, n))
    got = emulate.row_reduce(acc, acc.pack(x), op)  # [lanes, rows held]
    np.testing.assert_allclose(got, ref(x, axis=1)[acc.lane_rows], rtol=1e-12)


def test_row_groups_and_b_operand_shuffles():
    acc = lane_map("mma_sync", "acc", 16, 8, 16, "bf16")
    np.testing.assert_array_equal(acc.row_groups()[9], [4, 5, 6, 7])
    b = lane_map("mma_sync", "b", 16, 8, 16, "bf16")  # a k-row spans lanes t, t+4, ...
    assert b.row_shuffle_masks() == (4, 8, 16)


def test_masks_and_epilogue_stores_derive_from_the_map():
    acc = warp_tile_map("mma_sync", "acc", 32, 32, 16, "bf16")
    causal = acc.mask(lambda r, c: c <= r)
    np.testing.assert_array_equal(acc.unpack(causal), np.tri(32, dtype=bool))
    bounds = acc.mask(lambda r, c: (r < 40) & (c < 50), row0=16, col0=32)
    assert bounds.sum() == 24 * 18
    x = np.random.default_rng(10).standard_normal((32, 32))
    out = np.zeros((64, 100))
    out.ravel()[acc.store_offsets(100, row0=32, col0=8)] = acc.pack(x)
    np.testing.assert_array_equal(out[32:, 8:40], x)
    assert acc.vector_width() == 2  # st.global.v2.f32
    assert lane_map("mma_sync", "a", 16, 8, 16, "bf16").vector_width() == 2


# -- shared-memory swizzles -------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows,cols", [(64, 64), (128, 128), (8, 64)])
def test_swizzle_is_byte_bijection_with_whole_16b_chunks(mode, rows, cols):
    sl = smem_layout(rows, cols, "bf16", mode)
    offs = sl.table()  # [rows, cols] byte offsets
    bytes_hit = np.concatenate([offs.ravel(), offs.ravel() + 1])
    assert (np.bincount(bytes_hit, minlength=sl.size_bytes) == 1).all()
    chunks = offs.reshape(rows, cols // 8, 8)  # 8 bf16 = one 16-byte chunk
    assert (chunks[..., 0] % 16 == 0).all()
    assert (chunks == chunks[..., :1] + 2 * np.arange(8)).all()


def test_128b_swizzle_spreads_core_matrix_rows_over_bank_groups():
    sl = smem_layout(64, 64, "bf16", "128B")
    group = (sl.table()[:, ::8] >> 4) & 7  # [row, chunk] -> 16-byte bank group
    per_core = group.reshape(8, 8, 8)  # [row group, row in group, chunk]
    assert all(len(set(per_core[g, :, j])) == 8 for g in range(8) for j in range(8))
    linear = (sl.linear_offset(np.arange(8), 0) >> 4) & 7  # unswizzled: all conflict
    assert len(set(linear.tolist())) == 1


@pytest.mark.parametrize("mode,code,lbo,sbo", [
    ("none", 0, 64 * 16, 128), ("128B", 1, 16, 1024), ("64B", 2, 16, 512), ("32B", 3, 16, 256)])
def test_descriptor_fields_and_hardware_addressing(mode, code, lbo, sbo):
    sl = smem_layout(64, 64, "bf16", mode)
    desc = sl.descriptor()
    assert (desc.mode.desc_code, desc.lbo, desc.sbo) == (code, lbo, sbo)
    word = desc.encode()
    assert (word >> 62, (word >> 16) & 0x3FFF, (word >> 32) & 0x3FFF) == (code, lbo >> 4, sbo >> 4)
    r, kk = np.meshgrid(np.arange(64), np.arange(16), indexing="ij")
    for k0 in range(0, 64, 16):  # the descriptor reaches exactly the layout's bytes
        np.testing.assert_array_equal(sl.descriptor(k0).address(r, kk), sl.offset(r, k0 + kk))


MN_MODES = ("32B", "64B", "128B")


@pytest.mark.parametrize("mode", MN_MODES)
@pytest.mark.parametrize("rows,cols", [(64, 64), (256, 64), (128, 32)])
def test_mn_major_descriptor_reaches_the_layout_bytes(mode, rows, cols):
    """MN-major (imm-trans 1): the descriptor's LBO steps W-byte blocks of MN, SBO groups of 8 K rows; for every
    k16 step it addresses exactly the bytes the layout (the TMA's boxes of cols x W/2) put each element at."""
    sl = smem_layout(rows, cols, "bf16", mode, major="mn")
    W = sl.mode.row_bytes
    offs = sl.table()
    assert (np.bincount(np.concatenate([offs.ravel(), offs.ravel() + 1]), minlength=sl.size_bytes) == 1).all()
    # The TMA view: element (mn, k) of box mn // (W/2) is row k, byte 2 * (mn % (W/2)) of it, swizzled.
    mn, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    box = (mn * 2) // W
    np.testing.assert_array_equal(offs, sl.mode.apply(box * cols * W + k * W + (mn * 2) % W))
    desc = sl.descriptor()
    assert (desc.lbo, desc.sbo, desc.trans) == (cols * W, 8 * W, 1)
    r, kk = np.meshgrid(np.arange(rows), np.arange(16), indexing="ij")
    for k0 in range(0, cols, 16):
        d = sl.descriptor(k0)
        assert d.start % (8 * W) == 0  # each k16 step starts on a swizzle-pattern boundary: base offset 0
        np.testing.assert_array_equal(d.address(r, kk), sl.offset(r, k0 + kk))


@pytest.mark.parametrize("a_major,b_major", [("k", "mn"), ("mn", "k"), ("mn", "mn")])
def test_emulated_wgmma_from_mn_major_smem_equals_matmul(a_major, b_major):
    """a@b with B stored [K, N] (MN-major) and A stored [K, M]: the same wgmma emulation, other descriptors."""
    M, N, K = 64, 128, 64
    rng = np.random.default_rng(11)
    acc = lane_map("wgmma", "acc", 64, N, 16, "bf16")
    A, B = rand(rng, (M, K), "bf16"), rand(rng, (K, N), "bf16")
    sA, sB = smem_layout(M, K, "bf16", "128B", a_major), smem_layout(N, K, "bf16", "128B", b_major)
    smem = np.zeros(sA.size_bytes + sB.size_bytes, np.uint8)
    emulate.store_tile(smem, sA, A)
    emulate.store_tile(smem, sB, B.T, base=sA.size_bytes)
    d = np.zeros((128, N // 2))
    for k0 in range(0, K, 16):
        d = emulate.wgmma_ss(acc, smem, sA.descriptor(k0), sB.descriptor(k0, base=sA.size_bytes), d)
    np.testing.assert_allclose(acc.unpack(d), f64(A) @ f64(B), rtol=1e-12, atol=1e-12)


def test_mn_major_layout_rejects_what_it_cannot_describe():
    with pytest.raises(ValueError, match="MN a multiple of 128 bytes"):
        smem_layout(32, 64, "bf16", "128B", major="mn")
    with pytest.raises(ValueError, match="interleaved"):
        smem_layout(64, 64, "bf16", "none", major="mn")
    with pytest.raises(ValueError, match="majors are"):
        smem_layout(64, 64, "bf16", "128B", major="row")


def test_smem_layout_rejects_bad_shapes():
    with pytest.raises(ValueError, match="multiple of 128 bytes"):
        smem_layout(64, 32, "bf16", "128B")
    with pytest.raises(ValueError, match="modes are"):
        smem_layout(64, 64, "bf16", "256B")
    assert ml_dtypes.bfloat16 == NP_DTYPES["bf16"]
