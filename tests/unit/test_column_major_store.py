"""A wgmma accumulator stored to a column-major view (stride 1 down a column: a swapped decode GEMM writes C^T
so) takes an unchecked interior path: lanes 4 apart trade one element with an xor shuffle and each stores two
rows of one column as one word (emit/wgacc.py `_column_pair_store`). Edge tiles, odd strides and row-major views
keep their paths. On the host emulator, against float64, f16 and f32 C, C full of NaN beforehand."""

from __future__ import annotations

import numpy as np
import pytest

from tessera.compiler import records, testing
from tessera.kernels import gemm as G
from tessera.ops._hopper import swap_config
from tessera.reference.oracles import error_bound, rel_error


def _compile(c_dtype: str):
    T = records.tensor
    cfg = swap_config(16)  # BM 64, BN 16, register stores
    specs = (T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("M", "N"), c_dtype), None, None,
             records.scalar("f32"), None)
    meta = {**cfg.meta(), "TRANS_A": False, "TRANS_B": True, "ACTIVATION": "none"}
    return records.compiled("tessera.kernels.gemm:gemm", specs, meta, arch="sm_90a", shape=cfg.shape), cfg


@pytest.mark.parametrize("c_dtype, np_c", [("f16", np.float16), ("f32", np.float32), ("i32", np.int32)])
@pytest.mark.parametrize("M, N, ld", [(136, 40, 136), (128, 48, 130), (128, 48, 129)],
                         ids=["ragged", "padded-column-stride", "odd-column-stride"])
def test_a_column_major_c_is_written_whole_and_right(tmp_path, monkeypatch, c_dtype, np_c, M, N, ld):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    with testing.emulate_on_host("sm_90"):
        check_column_major_c(c_dtype, np_c, M, N, ld)


def check_column_major_c(c_dtype, np_c, M, N, ld):
    """On the host emulator or (tests/gpu) an sm_90 device: the swapped kernel's C^T written column-major."""
    rng = np.random.default_rng(M + N + ld)
    a = (rng.standard_normal((M, 96)) / np.sqrt(96)).astype(np.float16)
    w = rng.standard_normal((N, 96)).astype(np.float16)
    fill = np.iinfo(np_c).min if c_dtype == "i32" else np.nan  # never a result
    store = np.full((N, ld), fill, np_c)  # C[m, n] at store[n, m]: a column-major M x N view, column stride ld
    ck, cfg = _compile(c_dtype)
    assert "(odd_ ? " in ck.source  # the column-major pair exchange
    # as ops passes a swapped call's C^T: pointer, sizes, strides in elements (the binder takes contiguous
    # arrays only)
    ck.launch_values(G.grid(M, N, BM=cfg.BM, BN=cfg.BN), [a, M, 96, 96, 1, w, N, 96, 96, 1, store, M, N, 1, ld, 1.0],
                     sync=True)
    unwritten = (lambda x: x == fill) if c_dtype == "i32" else np.isnan
    got = store[:, :M].T.astype(np.float64)
    assert not unwritten(store[:, :M]).any()
    assert unwritten(store[:, M:]).all()  # the padding between columns is not written
    want = a.astype(np.float64) @ w.astype(np.float64).T
    if c_dtype == "i32":  # the f32 sum converted toward zero: exact but for sums that sit within rounding of an int
        assert (np.abs(got - np.trunc(want)) <= 1).all() and (got == np.trunc(want)).mean() > 0.99
    else:
        assert rel_error(got, want) <= error_bound("f16")


@pytest.mark.parametrize("M, N", [(128, 64), (136, 40)], ids=["interior", "ragged"])
def test_an_i32_c_keeps_its_values_on_the_row_major_paths(tmp_path, monkeypatch, M, N):
    """Before: the interior pair store of a 4-byte element was make_float2(lo, hi), which converted an i32's value
    to float and wrote the float's bits (19 came out as 1100480512): now 4-byte pairs move by their bits."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    with testing.emulate_on_host("sm_90"):
        check_i32_row_major_c(M, N)


def check_i32_row_major_c(M, N):
    rng = np.random.default_rng(M + N)
    a = (rng.standard_normal((M, 96)) * 4).astype(np.float16)
    w = (rng.standard_normal((N, 96)) * 4).astype(np.float16)
    c = np.full((M, N), -7, np.int32)
    ck, cfg = _compile("i32")
    ck.launch(G.grid(M, N, BM=cfg.BM, BN=cfg.BN), [a, w, c, 1.0], sync=True)
    want = np.trunc(a.astype(np.float64) @ w.astype(np.float64).T)
    assert (np.abs(c - want) <= 1).all() and (c == want).mean() > 0.99


def test_the_column_path_is_the_interior_one_only():
    """The emitted condition: the column-major words need a column-major view with an even row origin and column
    stride; it is tested inside the interior branch, and a window that crosses an edge stays on the checked path."""
    with testing.emulate_on_host("sm_90"):
        ck, _ = _compile("f16")
    src = ck.source
    cond = "(C_stride1 != 1 && C_stride0 == 1 && (C_stride1 & 1) == 0 && "
    interior = src.index("every window inside its memref")
    assert src.index(cond) < interior < src.index(cond, interior)  # in the interior test, then as the branch
    assert src.index("tsr_shfl_xor_u32(odd_ ?") > interior
    assert src.index("every access checked") > src.index("tsr_shfl_xor_u32(odd_ ?")
