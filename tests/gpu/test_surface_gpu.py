"""The surface ops of issue 17 item 3 on the GPU, launched the Triton way on torch CUDA tensors: a rank-1 weight
as a row (tile.reshape), a masked store and a masked load, atomic adds from every program into one row and
running sums (tl.cumsum);
each against float64, with sentinels where a mask keeps memory. The same kernels are checked on the reference
interpreter and the host emulator in tests/unit (test_reshape, test_masks, test_atomics, test_cumsum)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tessera

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from test_atomics import column_sums  # noqa: E402
from test_masks import SENTINEL, keep_positive  # noqa: E402
from test_reshape import scale_shift  # noqa: E402


def _np(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


def test_a_rank_one_weight_as_a_row():
    M = 1000
    x = torch.randn(M, 64, device="cuda").half()
    w, b = (torch.randn(64, device="cuda").half() for _ in range(2))
    c = torch.randn(M, device="cuda")
    y = torch.empty_like(x)
    scale_shift[(tessera.cdiv(M, 4),)](x, w, b, c, y)
    want = _np(x) * _np(w)[None, :] + _np(b)[None, :] + _np(c)[:, None]
    assert np.abs(_np(y) - want).max() <= 2e-2 * np.abs(want).max()


def test_masked_store_and_load():
    M = 999
    x = torch.randn(M, 64, device="cuda")
    y = torch.full((M, 64), SENTINEL, device="cuda")
    z = torch.full((M, 64), float("nan"), device="cuda")
    keep_positive[(tessera.cdiv(M, 4),)](x, y, z)
    xs = _np(x)
    np.testing.assert_array_equal(_np(y), np.where(xs > 0, 2 * xs, SENTINEL))
    np.testing.assert_array_equal(_np(z), np.where(np.arange(64)[None, :] % 2 == 0, xs, -1.0))


def test_atomic_adds_from_every_program():
    M = 4097
    x = torch.randn(M, 64, device="cuda")
    s = torch.full((1, 64), 0.5, device="cuda")
    p = torch.full((1, 64), 3, device="cuda", dtype=torch.int32)
    column_sums[(tessera.cdiv(M, 4),)](x, s, p)
    np.testing.assert_allclose(_np(s)[0], 0.5 + _np(x).sum(0), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(p.cpu().numpy()[0], 3 + (x > 0).sum(0).cpu().numpy())


def test_running_sums():
    from test_cumsum import prefix

    M = 1001
    x = torch.randn(M, 256, device="cuda").bfloat16()
    y = torch.empty(M, 256, device="cuda")
    c = torch.empty(M, 256, device="cuda", dtype=torch.int32)
    prefix[(tessera.cdiv(M, 4),)](x, y, c)
    xf = _np(x)
    bound = 4 * np.finfo(np.float32).eps * np.cumsum(np.abs(xf), axis=1).max()
    assert np.abs(_np(y) - np.cumsum(xf, axis=1)).max() <= bound
    pos = (xf > 0).astype(np.int32)
    want = np.concatenate([np.cumsum(pos[b:b + 4], axis=0) for b in range(0, M, 4)])
    np.testing.assert_array_equal(c.cpu().numpy(), want)


def test_a_rank_one_bias_in_the_sm90a_wgmma_epilogue():
    from tessera.compiler.driver import device_arch

    if device_arch(0) != "sm_90":
        pytest.skip("the sm_90a kernel needs an sm_90 device")
    from test_reshape import mm_bias

    T = tessera.tensor
    M, N, K = 1000, 712, 256  # ragged against the 128 x 128 tiles; rows of 1424 bytes, as TMA stores need (16 | pitch)
    a, w = torch.randn(M, K, device="cuda").half(), torch.randn(N, K, device="cuda").half()
    bias = torch.randn(N, device="cuda").half()
    c = torch.empty(M, N, device="cuda").half()
    ck = tessera.compile(mm_bias.trace(T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("N",), "f16"),
                                       T(("M", "N"), "f16")), "sm_90a")
    ck.launch((tessera.cdiv(M, 128), tessera.cdiv(N, 128)), [a, w, bias, c], sync=True)
    want = _np(a) @ _np(w).T + _np(bias)[None, :]
    assert np.abs(_np(c) - want).max() <= 2e-2 * np.abs(want).max()


def _sm90a(kernel, specs, grid, args):
    from tessera.compiler.driver import device_arch

    if device_arch(0) != "sm_90":
        pytest.skip("the sm_90a kernel needs an sm_90 device")
    tessera.compile(kernel.trace(*specs), "sm_90a", stages=2).launch(grid, args, sync=True)


def test_a_triton_style_masked_epilogue_on_sm90a():
    from test_masks import SENTINEL as S, triton_style_epilogue

    T = tessera.tensor
    M, N, K = 1000, 712, 256
    a, w = torch.randn(M, K, device="cuda").half(), torch.randn(N, K, device="cuda").half()
    c = torch.full((M, N), S, device="cuda")
    _sm90a(triton_style_epilogue, (T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("M", "N"), "f32")),
           (tessera.cdiv(M, 128), tessera.cdiv(N, 128)), [a, w, c])
    z = _np(a) @ _np(w).T
    assert np.abs(_np(c) - np.where(z > 0, z, S)).max() <= 2e-2 * np.abs(z).max()


def test_split_k_by_atomic_adds_on_sm90a():
    from test_atomics import split_k_gemm

    T = tessera.tensor
    M, N, K = 1000, 712, 1024
    a, w = torch.randn(M, K, device="cuda").half(), torch.randn(N, K, device="cuda").half()
    c = torch.full((M, N), 0.25, device="cuda")
    _sm90a(split_k_gemm, (T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("M", "N"), "f32")),
           (tessera.cdiv(M, 128), tessera.cdiv(N, 128), 2), [a, w, c])
    want = 0.25 + _np(a) @ _np(w).T
    assert np.abs(_np(c) - want).max() <= 1e-2 * np.abs(want).max()
