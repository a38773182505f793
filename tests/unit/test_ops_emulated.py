"""tessera.ops' cuda lane end to end on the CPU: NVRTC compiles, the g++ host emulator runs the emitted text.

Inside `testing.emulate_on_host()` the ops take the cuda lane exactly as on a
GPU -- plan, compile_cached, the derived signature, the parameter values --
and only the final launch runs on the CPU. Results are checked against the
float64 oracles with the per-dtype bounds the GPU tests use, and the records
must say 'host-emulator' with the compiled cubin's hash. Fault injection at
the ops level (a compile error, a corrupted cubin, a foreign arch) must end
in a coded error with the output untouched and no record.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

import tessera.ops as ops
from tessera.compiler import testing
from tessera.ir.diagnostics import TesseraError
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.kernels import linear_attention as LA
from tessera.ops import _hopper_attention as HA
from tessera.ops import autotune
from tessera.ops.configs import gemm_config
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime import CompileCache
from _device_arrays import FakeDeviceArray, randn as _randn

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the host emulator needs g++ (C++20)")
BF16 = ml_dtypes.bfloat16


def randn(shape, dtype=BF16, seed=0, scale=1.0):
    return _randn(shape, dtype, seed, scale)


class TorchLikeDtype:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class TorchLikeCudaTensor:
    """The torch.Tensor accessors tessera reads (data_ptr, stride, ...), over host memory: bf16 zero copy,
    which __cuda_array_interface__ cannot express."""

    is_cuda = True
    DTYPES = {np.dtype(BF16): TorchLikeDtype("bfloat16"), np.dtype(np.float32): TorchLikeDtype("float32")}

    def __init__(self, array: np.ndarray):
        self.array, self.shape, self.dtype = array, array.shape, self.DTYPES[array.dtype]

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def get_device(self) -> int:
        return 0

    def stride(self) -> tuple:
        return tuple(s // self.array.itemsize for s in self.array.strides)

    def is_contiguous(self) -> bool:
        return self.array.flags.c_contiguous

    def copy_(self, other: "TorchLikeCudaTensor") -> None:
        np.copyto(self.array, other.array)


@pytest.fixture(scope="module", autouse=True)
def private_default_cache(tmp_path_factory):
    import tessera.runtime.cache as cache_module
    saved = cache_module._default
    cache_module._default = CompileCache(tmp_path_factory.getbasetemp() / "tessera-compile-cache")
    yield
    cache_module._default = saved


@pytest.fixture()
def host():
    with testing.emulate_on_host() as backend:
        yield backend


def check_record(op, kernel, grid):
    rec = ops.last_run()
    assert (rec.op, rec.lane, rec.kernel, rec.arch, rec.synchronized) == (op, "host-emulator", kernel, "sm_90", True)
    assert rec.grid == tuple(grid) + (1,) * (3 - len(grid)) and rec.block == (128, 1, 1) and rec.smem_bytes > 0
    return rec


def test_gemm_accumulates_into_a_nonzero_c_in_place(host):
    """C += A @ B (beta = 1) with K = 64: two BK steps and a live C, both must reach the result."""
    M, N, K = 128, 96, 64
    a, b = randn((M, K), seed=1), randn((N, K), seed=2)
    c0 = randn((M, N), seed=3)
    c = c0.copy()
    assert ops.gemm(a, b, c, beta=1.0, out=c, trans_b=True) is c
    assert rel_error(c, G.reference_gemm(a, b, c0, beta=1.0, trans_b=True)) <= error_bound("bf16")
    cfg = gemm_config(M, N, K)
    rec = check_record("gemm", "gemm", G.grid(M, N, cfg.BM, cfg.BN))
    assert rec.config["BM"] == 128 and rec.config["TRANS_B"] is True and host.launches == 1


def test_gemm_zero_copy_device_arrays_full_epilogue(host):
    M, N, K = 100, 37, 53
    a, b = randn((K, M), np.float16, 1), randn((K, N), np.float16, 2)
    bias, res = randn(N, np.float32, 3), randn((M, N), np.float16, 4)
    out = np.full((M, N), np.nan, np.float16)
    dev = [FakeDeviceArray(x) for x in (a, b, bias, res, out)]
    got = ops.gemm(dev[0], dev[1], bias=dev[2], residual=dev[3], activation="gelu", alpha=0.75, trans_a=True,
                   out=dev[4])
    assert got is dev[4]  # written in place through the pointer: no copy back exists on this path
    want = G.reference_gemm(a, b, None, bias, res, 0.75, trans_a=True, activation="gelu")
    assert rel_error(out, want) <= error_bound("f16")
    cfg = gemm_config(M, N, K)  # 100 x 37: BN = 64, so BM = 64 (128 x 64 with an epilogue spills)
    check_record("gemm", "gemm", G.grid(M, N, cfg.BM, cfg.BN))


def test_gemm_torch_like_bf16_tensors_and_the_copy_of_c(host):
    """c is copied into a separate out with the framework's copy_, then read with beta; c stays as it was."""
    M, N, K = 70, 90, 40
    a, b, c = randn((M, K), seed=1), randn((K, N), seed=2), randn((M, N), np.float32, 3)
    bias = randn((1, N), BF16, 4)
    out = np.full((M, N), np.nan, np.float32)
    t = [TorchLikeCudaTensor(x) for x in (a, b, c, bias, out)]
    c_before = c.copy()
    assert ops.gemm(t[0], t[1], t[2], beta=0.5, bias=t[3], activation="relu", out=t[4]) is t[4]
    assert (c == c_before).all()
    want = G.reference_gemm(a, b, c, bias, None, 1.0, 0.5, activation="relu")
    assert rel_error(out, want) <= error_bound("bf16")
    check_record("gemm", "gemm", G.grid(M, N, 128, 128))


def test_gemm_unaligned_rows_take_the_elementwise_path(host):
    """An f16 array one element past a 16-byte boundary (and K = 53, 106-byte rows): correct, just slower."""
    M, N, K = 40, 24, 53
    base = randn(M * K + 1, np.float16, 5)
    a = base[1:].reshape(M, K)
    b = randn((K, N), np.float16, 6)
    out = np.zeros((M, N), np.float32)
    ops.gemm(FakeDeviceArray(a), FakeDeviceArray(b), out=FakeDeviceArray(out))
    assert a.ctypes.data % 16 and rel_error(out, G.reference_gemm(a, b)) <= error_bound("f16")


def test_attention_gqa_causal(host):
    B, H, H_kv, S, D = 1, 8, 2, 63, 64
    q, k, v = randn((B, H, S, D), seed=1), randn((B, H_kv, S, D), seed=2), randn((B, H_kv, S, D), seed=3)
    o, lse = ops.attention(q, k, v, causal=True)
    want_o, want_lse = FA.reference_attention(q, k, v, causal=True)
    assert rel_error(o, want_o) <= error_bound("bf16") and rel_error(lse, want_lse) <= error_bound("f32")
    rec = check_record("attention", "flash_attention", FA.grid(B, H, S, 128))
    assert rec.config["CAUSAL"] is True


def _device_attention(B, H, H_kv, S, S_k, D, seed, causal=False):
    """ops.attention on FakeDeviceArrays (the sm_90a route on the emulated sm_90), checked against float64:
    returns the run's record."""
    q, k = randn((B, H, S, D), seed=seed), randn((B, H_kv, S_k, D), seed=seed + 1)
    v = randn((B, H_kv, S_k, D), seed=seed + 2)
    o, lse = np.full((B, H, S, D), np.nan, BF16), np.full((B, H, S), np.nan, np.float32)
    dev = [FakeDeviceArray(x) for x in (q, k, v, o, lse)]
    ops.attention(*dev[:3], causal=causal, out=dev[3], lse=dev[4])
    want_o, want_lse = FA.reference_attention(q, k, v, causal=causal)
    assert rel_error(o, want_o) <= error_bound("bf16") and np.abs(lse - want_lse).max() <= 1e-4
    return ops.last_run()


@pytest.mark.parametrize("causal,S", [(False, 3), (True, 130), (False, 70)],
                         ids=["decode-heads-packed", "causal-128-rows", "long-rows-packed"])
def test_attention_on_sm90_takes_the_sm90a_kernel(host, causal, S):
    """Device arrays: the warp-specialised wgmma kernel, on the emulator. Non-causal GQA packs the 4 query heads
    of a kv head into one head of 4 * S rows (decode: 12 rows, the one-warpgroup 64-row config; 280 rows at d = 64:
    the 192-row config)."""
    B, H, H_kv, D = 1, 8, 2, 64
    rec = _device_attention(B, H, H_kv, S, 90, D, seed=1, causal=causal)
    rows, heads = (S * H // H_kv, H_kv) if not causal else (S, H)
    bm = 64 if rows <= 64 else 128 if causal else 192  # d = 64 non-causal: three consumer warpgroups
    assert (rec.lane, rec.arch, rec.config["BLOCK_M"], rec.block) == ("host-emulator", "sm_90a", bm,
                                                                       (128 * (1 + bm // 64), 1, 1))
    assert rec.grid == (-(-rows // bm), B * heads, 1)


@pytest.mark.parametrize("causal,S", [(False, 130), (True, 150), (False, 5)], ids=["gqa", "causal", "decode"])
def test_head_dim_256_runs_the_sm90a_kernel(host, causal, S):
    """d = 256 on sm_90 device arrays: 64-key steps in a ring of 2 (128 rows; 64 for a decode's packed rows and for
    causal, whose two 128-row consumers would spill)."""
    B, H, H_kv, D = 1, 4, 2, 256
    rec = _device_attention(B, H, H_kv, S, 77, D, seed=7, causal=causal)
    rows = S * H // H_kv if not causal else S
    assert (rec.arch, rec.config["BLOCK_N"], rec.config["stages"]) == ("sm_90a", 64, 2)
    assert rec.config["BLOCK_M"] == (64 if rows <= 64 or causal else 128)


@pytest.mark.parametrize("cand", [c for c in HA.candidates(128) if c.get("kv_splits", 1) > 1],
                         ids=lambda c: f"kv_splits={c['kv_splits']}")
def test_key_slices_run_and_merge_through_ops(host, cand):
    """A split-KV candidate, pinned: the slices' partials in the runtime's buffer, the merge into out and lse, one
    record naming both artifacts. A decode with packed GQA heads, keys ragged, and a second call that reuses the
    buffer."""
    B, H, H_kv, S, S_k, D = 2, 8, 2, 1, 333, 128
    autotune.pin(HA.OP, cand)
    try:
        for seed in (10, 13):
            rec = _device_attention(B, H, H_kv, S, S_k, D, seed=seed)
            assert (rec.arch, rec.kernel, rec.config["KV_SPLITS"]) == ("sm_90a", "flash_attention", cand["kv_splits"])
            assert rec.config["combine_kernel"] == "attention_combine" and len(rec.config["combine_artifact"]) == 64
            assert rec.grid == (cand["kv_splits"], B * H_kv, 1)  # 4 packed rows: one 64-row block per kv head
    finally:
        autotune.unpin(HA.OP)


def test_a_key_slice_pin_is_refused_on_a_causal_call(host):
    """Key slices are for non-causal rows (a causal row's keys end at its diagonal): no causal candidate has
    kv_splits, so a pin that sets it is a coded error on a causal call, with nothing written."""
    cand = next(c for c in HA.candidates(128) if c.get("kv_splits", 1) > 1)
    B, H, S, D = 1, 2, 70, 128
    q = randn((B, H, S, D), seed=20)
    o, lse = np.zeros((B, H, S, D), BF16), np.zeros((B, H, S), np.float32)
    dev = [FakeDeviceArray(x) for x in (q, q, q, o, lse)]
    autotune.pin(HA.OP, cand)
    try:
        with pytest.raises(TesseraError) as err:
            ops.attention(*dev[:3], causal=True, out=dev[3], lse=dev[4])
    finally:
        autotune.unpin(HA.OP)
    assert err.value.code.name == "OPS_AUTOTUNE_PIN_INVALID" and "kv_splits" in err.value.message
    assert not o.astype(np.float32).any()


def test_head_dim_256_off_the_sm90a_kernel_is_a_coded_error(host):
    """Host arrays are copied in, so TMA cannot read them: the sm_90 kernel would take the call, and it spills at
    d = 256. A coded error that says where d = 256 runs, nothing written, no run recorded."""
    q = randn((1, 2, 8, 256), seed=1)
    out = np.zeros((1, 2, 8, 256), BF16)
    with pytest.raises(TesseraError) as err:
        ops.attention(q, q, q, out=out)
    assert err.value.code.name == "OPS_ARG_SHAPE" and "sm_90a kernel" in err.value.message
    assert "lane='reference'" in (err.value.hint or "")
    assert not out.any() and ops.last_run() is None  # a failed call clears it


@pytest.mark.parametrize("scale", [0.3, -0.2, 0.0], ids=["positive", "negative", "zero"])
def test_attention_scale_of_any_sign(host, scale):
    """A positive scale folds into each exp2's FFMA (FOLD_SCALE); zero and negative ones take the plain form.
    S_k = 128 also takes EVEN_N (no key-bound mask). The sm_90a kernel on the emulator."""
    B, H, S, D = 1, 2, 130, 64
    q, k, v = randn((B, H, S, D), seed=4), randn((B, H, 128, D), seed=5), randn((B, H, 128, D), seed=6)
    o, lse = np.full((B, H, S, D), np.nan, BF16), np.full((B, H, S), np.nan, np.float32)
    dev = [FakeDeviceArray(x) for x in (q, k, v, o, lse)]
    ops.attention(*dev[:3], scale=scale, out=dev[3], lse=dev[4])
    want_o, want_lse = FA.reference_attention(q, k, v, scale)
    assert rel_error(o, want_o) <= error_bound("bf16") and np.abs(lse - want_lse).max() <= 1e-4
    rec = ops.last_run()
    assert rec.arch == "sm_90a" and rec.config["EVEN_N"] is True and rec.config["FOLD_SCALE"] is (scale > 0)


def test_linear_attention_with_decay(host):
    B, H, T, D = 1, 2, 100, 64
    q, k, v = (randn((B, H, T, D), seed=s, scale=0.3) for s in (1, 2, 3))
    g = np.array([-0.02, -0.1], np.float32)
    o = ops.linear_attention(q, k, v, g)
    assert rel_error(o, LA.reference_linear_attention(q, k, v, g)) <= error_bound("bf16")
    check_record("linear_attention", "linear_attention", LA.grid(B, H, D, None))


# --- fault injection through tessera.ops: each ends in a coded error, never a record ---------------

def _flip(art):
    cubin = bytearray(art.cubin)
    cubin[len(cubin) // 2] ^= 0xFF
    return replace(art, cubin=bytes(cubin))


@pytest.mark.parametrize("fault, code", [
    ({"source": lambda s: s + "\nthis is not C++;\n"}, "CODEGEN_COMPILE_FAILED"),
    ({"artifact": _flip}, "RUNTIME_LOAD_FAILED"),
    ({"arch": "sm_80"}, "RUNTIME_LOAD_FAILED"),
])
def test_faults_end_in_coded_errors(host, fault, code):
    a, b = randn((48, 32), seed=1), randn((32, 40), seed=2)
    out = np.full((48, 40), 3.0, np.float32)
    ops.gemm(a, b, out=out)  # a good call first: its cached plan must not hide the fault
    assert ops.last_run() is not None
    out[:] = 3.0
    with testing.inject_faults(**fault), pytest.raises(TesseraError) as err:
        ops.gemm(a, b, out=out)
    assert err.value.code.name == code, str(err.value)
    assert (out == 3.0).all() and ops.last_run() is None
    ops.gemm(a, b, out=out)  # and after the block the good kernel is back
    assert rel_error(out, G.reference_gemm(a, b)) <= error_bound("bf16")
