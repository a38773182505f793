"""tessera.ops on the CPU: strict lanes, the reference lane against float64 oracles, and coded argument errors.

Every bad call must raise its OPS_* code naming the argument, located at the
caller's line, leave the output untouched and leave no run record. The
reference lane's results say lane='reference' and carry the IR's hash.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tessera.ops as ops
from tessera.compiler import testing
from tessera.ir.diagnostics import TesseraError
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.kernels import linear_attention as LA
from tessera.ops.configs import gemm_config
from tessera.reference import ir_hash
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime import has_gpu
from _device_arrays import FakeDeviceArray, randn as _randn

BF16 = ml_dtypes.bfloat16
REF = {"lane": "reference"}


def randn(shape, dtype=BF16, seed=0, scale=1.0):
    return _randn(shape, dtype, seed, scale)


def expect(code: str, fn, *args, **kwargs) -> TesseraError:
    with pytest.raises(TesseraError) as err:
        fn(*args, **kwargs)
    assert err.value.code.name == code, str(err.value)
    assert err.value.location.startswith(__file__), err.value.location  # located at the caller's line
    assert ops.last_run() is None
    return err.value


# --- lanes -----------------------------------------------------------------------------------------

@pytest.mark.skipif(has_gpu(), reason="checks the no-GPU behaviour")
@pytest.mark.parametrize("lane", ["auto", "cuda"])
def test_gpu_lanes_without_a_gpu_fail_instead_of_falling_back(lane):
    a = randn((8, 8))
    out = np.full((8, 8), 7, BF16)
    err = expect("OPS_NO_GPU", ops.gemm, a, a, out=out, lane=lane)
    assert "lane='reference'" in err.hint and (out == 7).all()
    expect("OPS_NO_GPU", ops.attention, *[randn((1, 1, 4, 64))] * 3, lane=lane)
    expect("OPS_NO_GPU", ops.linear_attention, *[randn((1, 1, 4, 64))] * 3, lane=lane)


def test_unknown_lane_is_coded():
    expect("OPS_LANE_INVALID", ops.gemm, randn((4, 4)), randn((4, 4)), lane="cpu")


# --- the reference lane against the float64 oracles ---------------------------------------------------

@pytest.mark.parametrize("trans", [(False, False), (True, True)])
def test_reference_gemm_full_epilogue(trans):
    ta, tb = trans
    M, N, K = 70, 37, 53
    a = randn((K, M) if ta else (M, K), seed=1)
    b = randn((N, K) if tb else (K, N), seed=2)
    c, bias, res = randn((M, N), np.float32, 3), randn(N, np.float32, 4), randn((M, N), BF16, 5)
    d = ops.gemm(a, b, c, alpha=0.5, beta=0.25, bias=bias, activation="silu", residual=res, trans_a=ta,
                 trans_b=tb, out_dtype="float32", **REF)
    want = G.reference_gemm(a, b, c, bias, res, 0.5, 0.25, trans_a=ta, trans_b=tb, activation="silu")
    assert d.dtype == np.float32 and rel_error(d, want) <= error_bound("f32")
    rec = ops.last_run()
    cfg = gemm_config(M, N, K)
    assert (rec.op, rec.lane, rec.kernel, rec.arch, rec.synchronized) == ("gemm", "reference", "gemm", None, True)
    assert rec.grid == G.grid(M, N, cfg.BM, cfg.BN) + (1,)
    assert rec.config == {"BM": cfg.BM, "BN": cfg.BN, "BK": cfg.BK, "stages": cfg.stages, "TRANS_A": ta,
                          "TRANS_B": tb, "ACTIVATION": "silu"}
    assert len(rec.artifact_hash) == 64


def test_reference_gemm_beta_zero_never_reads_c_and_in_place_accumulates():
    a, b = randn((33, 20), seed=1), randn((20, 17), seed=2)
    nan_c = np.full((33, 17), np.nan, BF16)
    d = ops.gemm(a, b, nan_c, beta=0.0, **REF)
    assert np.isfinite(d.astype(np.float32)).all() and d is not nan_c
    c0 = randn((33, 17), seed=3)
    c = c0.copy()
    same = ops.gemm(a, b, c, beta=1.0, out=c, **REF)  # C += A @ B, in place
    assert same is c and rel_error(c, G.reference_gemm(a, b, c0, beta=1.0)) <= error_bound("bf16")
    c = c0.copy()
    fresh = ops.gemm(a, b, c, beta=1.0, **REF)  # out of place: c is read, not written
    assert (c.view(np.uint16) == c0.view(np.uint16)).all()
    assert rel_error(fresh, G.reference_gemm(a, b, c0, beta=1.0)) <= error_bound("bf16")


def test_reference_attention_gqa_causal():
    q, k, v = randn((1, 4, 40, 64), seed=1), randn((1, 2, 40, 64), seed=2), randn((1, 2, 40, 64), seed=3)
    o, lse = ops.attention(q, k, v, causal=True, scale=0.1, **REF)
    want_o, want_lse = FA.reference_attention(q, k, v, 0.1, True)
    assert o.dtype == BF16 and lse.dtype == np.float32
    assert rel_error(o, want_o) <= error_bound("bf16") and rel_error(lse, want_lse) <= error_bound("f32")
    rec = ops.last_run()
    assert rec.lane == "reference" and rec.kernel == "flash_attention" and rec.config["CAUSAL"] is True
    assert rec.grid == FA.grid(1, 4, 40, rec.config["BLOCK_M"]) + (1,)


def test_reference_attention_head_dim_256():
    """Head dim 256 (the sm_90a kernel's third head dim) on the reference lane: the numerics a user checks on a
    laptop before the GPU runs the wgmma kernel."""
    q, k, v = randn((1, 2, 20, 256), seed=4), randn((1, 1, 33, 256), seed=5), randn((1, 1, 33, 256), seed=6)
    o, lse = ops.attention(q, k, v, causal=True, **REF)
    want_o, want_lse = FA.reference_attention(q, k, v, None, True)
    assert rel_error(o, want_o) <= error_bound("bf16") and rel_error(lse, want_lse) <= error_bound("f32")


def test_reference_linear_attention_with_decay():
    q, k, v = (randn((1, 2, 70, 64), seed=s, scale=0.3) for s in (1, 2, 3))
    g = np.array([-0.05, -0.2], np.float32)
    o = ops.linear_attention(q, k, v, g, **REF)
    assert rel_error(o, LA.reference_linear_attention(q, k, v, g)) <= error_bound("bf16")
    rec = ops.last_run()
    assert rec.kernel == "linear_attention" and rec.config["decay"] is True
    assert rec.grid == LA.grid(1, 2, 64, rec.config["BLOCK_V"]) + (1,)


def test_reference_record_hash_is_the_traced_ir():
    a = randn((16, 16))
    ops.gemm(a, a, **REF)
    from tessera.ops._common import _plans
    key = ("gemm", "reference", 0, "bf16", "bf16", False, None, None, False, False, "none", gemm_config(16, 16, 16),
           False)  # the last: not a swapped decode GEMM
    assert ops.last_run().artifact_hash == ir_hash(_plans[key].traced.module)


# --- coded argument errors -------------------------------------------------------------------------

A, B = randn((8, 16)), randn((16, 4))


@pytest.mark.parametrize("code, kwargs, names", [
    ("OPS_ARG_TYPE", {"a": [[1.0]]}, "a is a list"),
    ("OPS_ARG_DTYPE", {"b": B.astype(np.float16)}, "a is bf16 and b is f16"),
    ("OPS_ARG_DTYPE", {"a": A.astype(np.float64), "b": B.astype(np.float64)}, "a has dtype f64"),
    ("OPS_ARG_DTYPE", {"out_dtype": "int32"}, "out_dtype"),
    ("OPS_ARG_DTYPE", {"c": np.zeros((8, 4), np.float32), "beta": 1.0, "out_dtype": "bf16"},
     "c is f32 but the output is bf16"),
    ("OPS_ARG_SHAPE", {"b": randn((15, 4))}, "inner dims differ"),
    ("OPS_ARG_SHAPE", {"out": np.zeros((7, 4), BF16)}, "out has shape [7, 4]"),
    ("OPS_ARG_SHAPE", {"bias": np.zeros(5, np.float32)}, "bias has shape [5]"),
    ("OPS_ARG_SHAPE", {"a": randn((8, 16, 1))}, "a has shape [8, 16, 1]"),
    ("OPS_ARG_LAYOUT", {"a": randn((16, 8)).T}, "a (shape [8, 16]"),
    ("OPS_ARG_DEVICE", {"b": FakeDeviceArray(B.astype(np.float16))}, "b is a cai device array"),
    ("OPS_ARG_ALIAS", {"out": "a"}, "out overlaps input a"),
    ("OPS_ARG_READONLY", {"out": "readonly"}, "out is read-only"),
    ("OPS_ARG_VALUE", {"activation": "tanh"}, "activation='tanh'"),
    ("OPS_ARG_VALUE", {"alpha": "2"}, "alpha must be a real number"),
    ("OPS_ARG_VALUE", {"beta": 1.0}, "no c was given"),
    ("OPS_ARG_VALUE", {"trans_a": 1}, "trans_a must be True or False"),
    ("OPS_ARG_VALUE", {"stream": 1}, "stream= applies to the cuda lane"),
])
def test_gemm_argument_errors(code, kwargs, names):
    args = {"a": A, "b": B, **kwargs}
    if isinstance(args.get("out"), str) and args["out"] == "a":
        args["out"] = args["a"] = randn((4, 4))
        args["b"] = randn((4, 4))
    if isinstance(args.get("out"), str):
        args["out"] = np.zeros((8, 4), BF16)
        args["out"].flags.writeable = False
    sentinel = args.get("out")
    before = None if sentinel is None else sentinel.copy()
    err = expect(code, ops.gemm, args.pop("a"), args.pop("b"), lane="reference", **args)
    assert names in err.message, err.message
    assert err.message.startswith("tessera.ops.gemm: ")
    if sentinel is not None:
        assert sentinel.tobytes() == before.tobytes()


Q, KV = randn((1, 4, 8, 64)), randn((1, 2, 8, 64))


@pytest.mark.parametrize("code, args, kwargs, names", [
    ("OPS_ARG_DTYPE", (Q, KV, KV.astype(np.float16)), {}, "v is f16"),
    ("OPS_ARG_SHAPE", (randn((1, 4, 8, 96)),) * 3, {}, "head dim 96"),
    ("OPS_ARG_SHAPE", (randn((1, 4, 8, 512)),) * 3, {}, "take 64, 128, 256"),
    ("OPS_ARG_SHAPE", (Q, randn((2, 2, 8, 64)), randn((2, 2, 8, 64))), {}, "k has shape [2, 2, 8, 64]"),
    ("OPS_ARG_SHAPE", (Q, KV, randn((1, 2, 9, 64))), {}, "v has shape"),
    ("OPS_ARG_SHAPE", (Q, KV, KV), {"lse": np.zeros((1, 4, 7), np.float32)}, "lse has shape [1, 4, 7]"),
    ("OPS_GQA_HEADS", (randn((1, 6, 8, 64)), randn((1, 4, 8, 64)), randn((1, 4, 8, 64))), {}, "6 heads"),
    ("OPS_ARG_ALIAS", (Q, KV, KV), {"out": Q}, "out overlaps input q"),
    ("OPS_ARG_VALUE", (Q, KV, KV), {"causal": "yes"}, "causal must be True or False"),
    ("OPS_ARG_VALUE", (Q, KV, KV), {"scale": None, "causal": None}, "causal"),
])
def test_attention_argument_errors(code, args, kwargs, names):
    err = expect(code, ops.attention, *args, lane="reference", **kwargs)
    assert names in err.message, err.message


@pytest.mark.parametrize("code, args, names", [
    ("OPS_ARG_DTYPE", (Q, Q, Q, np.zeros(4, np.float16)), "g has dtype f16"),
    ("OPS_ARG_SHAPE", (Q, Q, Q, np.zeros(3, np.float32)), "g has shape [3]"),
    ("OPS_ARG_SHAPE", (Q, KV, Q), "k has shape"),
    ("OPS_ARG_SHAPE", (randn((1, 4, 8, 32)),) * 3, "D_k (q's last dim) is 32"),
    ("OPS_ARG_TYPE", (Q, Q, Q, [0.1] * 4), "g is a list"),
])
def test_linear_attention_argument_errors(code, args, names):
    err = expect(code, ops.linear_attention, *args, lane="reference")
    assert names in err.message, err.message


def test_a_failed_call_clears_the_previous_record():
    ops.gemm(A, B, **REF)
    assert ops.last_run() is not None
    expect("OPS_ARG_VALUE", ops.gemm, A, B, activation="nope", lane="reference")


def test_cuda_lane_argument_checks_run_before_any_compile():
    """Inside the emulation hook the cuda lane is taken; these fail before tracing, so no g++ or NVRTC runs."""
    with testing.emulate_on_host() as host:
        a16, b16 = A.astype(np.float16), B.astype(np.float16)
        err = expect("OPS_ARG_DEVICE", ops.gemm, a16, FakeDeviceArray(b16))  # numpy and device arrays mixed
        assert "a is a numpy array and b a device array" in err.message
        odd = FakeDeviceArray(np.zeros(8 * 16 + 1, np.float16)[1:].reshape(8, 16), offset_bytes=1)
        err = expect("OPS_ARG_ALIGNMENT", ops.gemm, odd, FakeDeviceArray(b16))
        assert "element size 2" in err.message
        err = expect("OPS_ARG_TYPE", ops.gemm, FakeDeviceArray(a16), FakeDeviceArray(b16))
        assert "pass out=" in err.message
        err = expect("OPS_ARG_TYPE", ops.gemm, FakeDeviceArray(A), FakeDeviceArray(B))  # '<V2' is bf16 (issue 13)
        assert "pass out=" in err.message and "bf16" in err.message
        other = FakeDeviceArray(A)
        other.__cuda_array_interface__ = {**other.__cuda_array_interface__, "descr": [("myhalf", "<V2")]}
        err = expect("OPS_ARG_DTYPE", ops.gemm, other, FakeDeviceArray(B))
        assert "a has dtype unsupported" in err.message  # a 2-byte void that names another type: never guessed
    assert host.launches == 0


def test_empty_results_launch_nothing_and_empty_k_is_the_epilogue_alone():
    d = ops.gemm(randn((0, 8)), randn((8, 5)), **REF)
    assert d.shape == (0, 5) and ops.last_run().launched is False and ops.last_run().grid[0] == 0
    c = randn((4, 5), np.float32, 1)
    bias = randn(5, np.float32, 2)
    d = ops.gemm(randn((4, 0)), randn((0, 5)), c, beta=2.0, bias=bias, **REF)  # K = 0: no products at all
    np.testing.assert_allclose(d, 2.0 * c + bias, rtol=1e-6)
    assert ops.last_run().launched is True
