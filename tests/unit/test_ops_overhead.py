"""The warm path's Python overhead, with only the driver call stubbed, and its checks after warm calls.

A repeated `tessera.ops.gemm` or `CompiledKernel.launch` with arrays of equal
keys (dtype, shape, strides, device) re-checks only their addresses; the
issue's aim is a warm op call within a few microseconds of the bare launch.
Here the kernel is really compiled (NVRTC) and loaded into a real
`LoadedKernel` whose `cuLaunchKernel` is a recorder, so everything but the
driver runs: argument probing, the warm lookup, parameter packing, provenance.
The bounds are generous (a loaded 2-core CI box); the figures are printed.
The warm path must still reject what the full path rejects, with the same
codes, before anything is written: a bad argument after good warm calls is
the case a signature cache could wrongly wave through.
"""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest

import tessera.ops as ops
from tessera.compiler import driver as compile_driver
from tessera.compiler import records
from tessera.ir.diagnostics import TesseraError
from tessera.ops import _common, _gemm, _warm
from tessera.ops.configs import gemm_config
from tessera.runtime import CompileCache
from _device_arrays import FakeDeviceArray

pytest.importorskip("cuda.bindings.driver")
M = N = K = 64
BOUND_US = 30.0


@pytest.fixture()
def stubbed(monkeypatch, tmp_path):
    """A GPU as far as tessera can tell, with private caches; yields the list of launches' parameter blocks."""
    import tessera.runtime.cache as cache_module
    import tessera.runtime.device as device_module
    import tessera.runtime.launch as launch_module
    from tessera.runtime.args import ArgBinder

    launches = []

    def load(artifact, kernel, signature, *, device=0):
        loaded = launch_module.LoadedKernel(artifact, kernel, ArgBinder(signature, kernel, device), device, None,
                                            type("Handle", (), {"handle": 0})(),
                                            {"num_regs": 64, "local_size_bytes": 0, "shared_size_bytes": 0,
                                             "max_threads_per_block": 1024})
        ok = loaded._ok_code

        def cu_launch_kernel(func, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            launches.append(((gx, gy, gz), bytes(loaded._slots)))
            return (ok,)
        loaded._launch_kernel = cu_launch_kernel
        return loaded

    monkeypatch.setattr(cache_module, "_default", CompileCache(tmp_path / "cache"))
    monkeypatch.setattr(device_module, "has_gpu", lambda: True)
    # sm_89: the mma.sync kernel (on sm_90 a bf16/f16 product takes the sm_90a kernel, whose TMA maps need a driver)
    monkeypatch.setattr(_gemm, "device_arch", lambda device=0: "sm_89")
    monkeypatch.setattr(launch_module, "load", load)
    # private plan, warm and compile memos: no stubbed kernel may leak into another test
    monkeypatch.setattr(_common, "_plans", {})
    monkeypatch.setattr(_warm, "_warm", {})
    monkeypatch.setattr(compile_driver, "_memo", {})
    monkeypatch.setattr(records, "_memo", {})
    return launches


def f16(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float16)


def per_call_us(fn, calls=2000, repeats=5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def expect(code: str, fn, *args, **kwargs) -> TesseraError:
    with pytest.raises(TesseraError) as err:
        fn(*args, **kwargs)
    assert err.value.code.name == code, str(err.value)
    return err.value


def plan_of(dtype="f32", reads_c=True):
    key = ("gemm", "cuda", 0, "f16", dtype, reads_c, None, None, False, False, "none", gemm_config(M, N, K), False)
    return _common._plans[key]


def test_warm_gemm_and_launch_cost_few_microseconds_and_take_the_warm_path(stubbed, monkeypatch):
    a, b = FakeDeviceArray(f16((M, K), 1)), FakeDeviceArray(f16((K, N), 2))
    c = FakeDeviceArray(np.zeros((M, N), np.float32))
    ops.gemm(a, b, c, beta=1.0, out=c)  # compile, load, remember
    ck = plan_of().compiled
    full = []
    monkeypatch.setattr(_gemm, "start", lambda *args: full.append(args) or _common.start(*args))
    ops.gemm(a, b, c, beta=1.0, out=c)
    assert full == [] and len(stubbed) == 2 and stubbed[0] == stubbed[1]
    rec = ops.last_run()
    assert (rec.lane, rec.kernel, rec.artifact_hash, rec.grid, rec.block) == ("cuda", "gemm", ck.artifact_hash,
                                                                                (1, 1, 1), ck.block)

    gemm_us = per_call_us(lambda: ops.gemm(a, b, c, beta=1.0, out=c))
    args = [a, b, c, 1.0, 1.0]
    launch_us = per_call_us(lambda: ck.launch((1, 1), args))
    raw, _ = ck.values(args)
    values_us = per_call_us(lambda: ck.launch_values((1, 1), raw))
    print(f"\nper call, driver stubbed: launch_values {values_us:.2f} us, CompiledKernel.launch {launch_us:.2f} us, "
          f"ops.gemm {gemm_us:.2f} us")
    assert full == []  # every timed op call took the warm path
    assert gemm_us < BOUND_US and launch_us < BOUND_US
    assert len({block for _, block in stubbed}) == 1  # every launch packed the same parameters


def test_warm_calls_write_each_calls_own_addresses_and_scalars(stubbed):
    a, b = f16((M, K), 1), f16((K, N), 2)
    outs = [np.zeros((M, N), np.float16) for _ in range(2)]
    ops.gemm(FakeDeviceArray(a), FakeDeviceArray(b), out=FakeDeviceArray(outs[0]), alpha=2.0)
    ops.gemm(FakeDeviceArray(a), FakeDeviceArray(b), out=FakeDeviceArray(outs[1]), alpha=0.5)  # warm
    ck = plan_of("f16", False).compiled
    for (grid, block), out, alpha in zip(stubbed, outs, (2.0, 0.5)):
        want, _ = ck.values([FakeDeviceArray(a), FakeDeviceArray(b), FakeDeviceArray(out), alpha])
        fmt = "<" + "".join({"ptr": "Q", "i64": "q", "f32": "f4x"}[p.kind] for p in ck.signature)
        assert list(struct.unpack_from(fmt, block)) == want and grid == (1, 1, 1)


@pytest.mark.parametrize("bad, code", [
    ("dtype", "OPS_ARG_DTYPE"),        # another key: the full path names it
    ("strides", "OPS_ARG_LAYOUT"),     # a transposed view: another key
    ("misaligned", "OPS_ARG_ALIGNMENT"),  # the same key, an odd address: the warm path's own check
    ("overlap", "OPS_ARG_ALIAS"),      # the same keys, out over a: the warm path's own check
    ("bool_flag", "OPS_ARG_VALUE"),    # trans_a=1 hashes like True: never taken for it
])
def test_the_warm_path_rejects_a_bad_argument_after_good_calls(stubbed, bad, code):
    a_host, b_host = f16((M, K), 1), f16((K, N), 2)
    out_host = np.full((M, N), 7, np.float16)
    a, b, out = FakeDeviceArray(a_host), FakeDeviceArray(b_host), FakeDeviceArray(out_host)
    for _ in range(3):
        ops.gemm(a, b, out=out)
    assert ops.last_run().lane == "cuda" and len(stubbed) == 3
    kwargs = {"out": out}
    if bad == "dtype":
        a = FakeDeviceArray(a_host.astype(np.float32))
    elif bad == "strides":
        a = FakeDeviceArray(a_host, strides=(2, 2 * M))
    elif bad == "misaligned":
        a = FakeDeviceArray(np.zeros(M * K + 1, np.float16)[1:].reshape(M, K), offset_bytes=1)
    elif bad == "overlap":
        kwargs["out"] = FakeDeviceArray(a_host)  # f16 [64, 64]: the key of a good out, a's bytes
    else:
        kwargs["trans_a"] = 1
    out_host[:] = 7
    before = a_host.tobytes()
    expect(code, ops.gemm, a, b, **kwargs)
    assert ops.last_run() is None and len(stubbed) == 3
    assert (out_host == 7).all() and a_host.tobytes() == before
    ops.gemm(FakeDeviceArray(a_host), b, out=out)  # and the good call is warm again
    assert len(stubbed) == 4 and ops.last_run().lane == "cuda"


def test_in_place_by_address_is_re_decided_per_call(stubbed):
    """out and c as two wrappers of one buffer is in place (no copy); the same keys with two buffers copy c."""
    a, b = FakeDeviceArray(f16((M, K), 1)), FakeDeviceArray(f16((K, N), 2))
    c_host = np.ones((M, N), np.float32)
    ops.gemm(a, b, FakeDeviceArray(c_host), beta=1.0, out=FakeDeviceArray(c_host))
    other = np.full((M, N), 5, np.float32)
    ops.gemm(a, b, FakeDeviceArray(c_host), beta=1.0, out=FakeDeviceArray(other))  # not in place: c copied in
    assert (other == 1).all() and len(stubbed) == 2


def test_compiled_kernel_launch_rejects_a_bad_argument_after_warm_calls(stubbed):
    a, b = FakeDeviceArray(f16((M, K), 1)), FakeDeviceArray(f16((K, N), 2))
    c = FakeDeviceArray(np.zeros((M, N), np.float32))
    ops.gemm(a, b, c, beta=1.0, out=c)
    ck = plan_of().compiled
    for _ in range(3):
        ck.launch((1, 1), [a, b, c, 1.0, 1.0])
    odd = FakeDeviceArray(np.zeros(M * K + 1, np.float16)[1:].reshape(M, K), offset_bytes=1)
    for args, words in (([odd, b, c, 1.0, 1.0], "not aligned"),
                        ([FakeDeviceArray(f16((M, K)).astype(np.float32)), b, c, 1.0, 1.0], "element type f32"),
                        ([a, b, c, 1.0, True], "must be a number"),
                        ([a, b, c, 1.0, "1"], "must be a number")):
        err = expect("RUNTIME_ARG_INVALID", ck.launch, (1, 1), args)
        assert words in err.message, err.message
    assert len(stubbed) == 4


# --- attention and linear attention: the same warm path ----------------------------------------------

B, H, S, DH = 1, 2, 64, 64


@pytest.fixture()
def attn(stubbed, monkeypatch):
    """`stubbed`, with the attention ops' arch stubbed too; yields (launches, calls of the full path)."""
    from tessera.ops import _attention
    # sm_89: the mma.sync kernel (on sm_90 the sm_90a kernel's TMA maps need a driver; tests/gpu times that one)
    monkeypatch.setattr(_attention, "device_arch", lambda device=0: "sm_89")
    full = []
    monkeypatch.setattr(_attention, "start", lambda *args: full.append(args[0]) or _common.start(*args))
    return stubbed, full


def attn_args(op: str, seed=0):
    """(host arrays by name, the call's positional names, output names) of one good call."""
    h = {"q": f16((B, H, S, DH), seed + 1), "out": np.full((B, H, S, DH), 7, np.float16)}
    if op == "attention":
        h.update(k=f16((B, 1, S, DH), seed + 2), v=f16((B, 1, S, DH), seed + 3), lse=np.full((B, H, S), 7, np.float32))
        return h, ("q", "k", "v"), ("out", "lse")
    h.update(k=f16((B, H, S, DH), seed + 2), v=f16((B, H, S, DH), seed + 3), g=np.array([-0.1, -0.2], np.float32))
    return h, ("q", "k", "v", "g"), ("out",)


def call(op: str, h: dict, names, outs, **kwargs):
    dev = {n: FakeDeviceArray(x) for n, x in h.items()}
    fn = getattr(ops, op)
    return fn(*(dev[n] for n in names), **{n: dev[n] for n in outs}, **kwargs)


@pytest.mark.parametrize("op", ["attention", "linear_attention"])
def test_warm_attention_ops_take_the_warm_path_and_pack_the_full_paths_parameters(attn, op):
    launches, full = attn
    extra = {"causal": True, "scale": 0.25} if op == "attention" else {}
    h, names, outs = attn_args(op)
    call(op, h, names, outs, **extra)
    rec = ops.last_run()
    assert full == [op] and len(launches) == 1
    h2 = {**h, **{n: h[n].copy() for n in outs}}  # new outputs: other addresses
    if op == "attention":
        extra["scale"] = 0.5  # another scalar, the same key
    call(op, h2, names, outs, **extra)
    assert full == [op] and len(launches) == 2 and launches[1] != launches[0]  # warm, with its own addresses
    assert ops.last_run() == rec
    _warm._warm.clear()
    call(op, h2, names, outs, **extra)  # the same call down the full path
    assert full == [op, op] and launches[2] == launches[1] and ops.last_run() == rec

    dev = {n: FakeDeviceArray(x) for n, x in h2.items()}
    fn = getattr(ops, op)
    us = per_call_us(lambda: fn(*(dev[n] for n in names), **{n: dev[n] for n in outs}, **extra), calls=1000)
    print(f"\nper call, driver stubbed: ops.{op} {us:.2f} us (warm)")
    assert full == [op, op] and us < BOUND_US and len({block for _, block in launches[1:]}) == 1


def test_warm_attention_allocates_its_outputs_per_call(attn, monkeypatch):
    """out and lse not given: each warm call gets new arrays, packed as the full path packs given ones."""
    launches, full = attn
    monkeypatch.setattr(_common.arrays, "empty_like", lambda t, v, shape, dtype: FakeDeviceArray(
        np.full(shape, 7, {"f16": np.float16, "f32": np.float32}[dtype])))
    h, names, _ = attn_args("attention")
    q, k, v = (FakeDeviceArray(h[n]) for n in names)
    ops.attention(q, k, v)
    o1, lse1 = ops.attention(q, k, v)
    o2, lse2 = ops.attention(q, k, v)
    assert full == ["attention"] and len(launches) == 3 and launches[1] != launches[2]
    assert o1.array.shape == (B, H, S, DH) and lse1.array.dtype == np.float32 and o1 is not o2
    _warm._warm.clear()
    ops.attention(q, k, v, out=o2, lse=lse2)
    assert full == ["attention"] * 2 and launches[3] == launches[2]


def _bad(op, bad, h, kwargs):
    """Make call `kwargs` bad in one way; returns the device arrays to pass by name."""
    dev = {n: FakeDeviceArray(x) for n, x in h.items()}
    if bad == "dtype":
        dev["q"] = FakeDeviceArray(h["q"].astype(np.float32))
    elif bad == "strides":
        dev["q"] = FakeDeviceArray(h["q"], strides=(2 * H * S * DH, 2 * S * DH, 2, 2 * S))
    elif bad == "misaligned":
        name = "g" if op == "linear_attention" else "q"
        x = h[name]
        dev[name] = FakeDeviceArray(np.zeros(x.size + 1, x.dtype)[1:].reshape(x.shape), offset_bytes=1)
    elif bad == "out_over_input":
        dev["out"] = FakeDeviceArray(h["v"] if op == "linear_attention" else h["q"])
    elif bad == "lse_over_out":  # f32 [B, H, S]: a good lse's key, out's first bytes
        dev["lse"] = FakeDeviceArray(h["out"].view(np.float32).reshape(-1)[:B * H * S].reshape(B, H, S))
    elif bad == "gqa":  # q's 2 heads over 3 kv heads
        dev["k"], dev["v"] = FakeDeviceArray(f16((B, 3, S, DH), 4)), FakeDeviceArray(f16((B, 3, S, DH), 5))
    elif bad == "head_dim":
        for n in ("q", "k", "v", "out"):
            dev[n] = FakeDeviceArray(np.full(h[n].shape[:3] + (32,), 7, np.float16))
    elif bad == "g_shape":
        dev["g"] = FakeDeviceArray(np.zeros(3, np.float32))
    elif bad == "bool_flag":
        kwargs["causal"] = 1
    elif bad == "scale":
        kwargs["scale"] = True
    return dev


@pytest.mark.parametrize("op, bad, code", [
    ("attention", "dtype", "OPS_ARG_DTYPE"),
    ("attention", "strides", "OPS_ARG_LAYOUT"),
    ("attention", "misaligned", "OPS_ARG_ALIGNMENT"),
    ("attention", "out_over_input", "OPS_ARG_ALIAS"),
    ("attention", "lse_over_out", "OPS_ARG_ALIAS"),
    ("attention", "gqa", "OPS_GQA_HEADS"),
    ("attention", "head_dim", "OPS_ARG_SHAPE"),
    ("attention", "bool_flag", "OPS_ARG_VALUE"),
    ("attention", "scale", "OPS_ARG_VALUE"),
    ("linear_attention", "dtype", "OPS_ARG_DTYPE"),
    ("linear_attention", "strides", "OPS_ARG_LAYOUT"),
    ("linear_attention", "misaligned", "OPS_ARG_ALIGNMENT"),
    ("linear_attention", "out_over_input", "OPS_ARG_ALIAS"),
    ("linear_attention", "head_dim", "OPS_ARG_SHAPE"),
    ("linear_attention", "g_shape", "OPS_ARG_SHAPE"),
])
def test_the_attention_warm_paths_reject_a_bad_argument_after_good_calls(attn, op, bad, code):
    launches, full = attn
    h, names, outs = attn_args(op)
    for _ in range(3):
        call(op, h, names, outs)
    assert full == [op] and len(launches) == 3 and ops.last_run().lane == "cuda"
    for n in outs:
        h[n][...] = 7
    before = {n: h[n].tobytes() for n in names}
    kwargs = {}
    dev = _bad(op, bad, h, kwargs)
    expect(code, getattr(ops, op), *(dev[n] for n in names), **{n: dev[n] for n in outs}, **kwargs)
    assert ops.last_run() is None and len(launches) == 3
    assert all((h[n] == 7).all() for n in outs) and all(h[n].tobytes() == before[n] for n in names)
    call(op, h, names, outs)  # and the good call is warm again
    assert len(launches) == 4 and len(full) == 2 and ops.last_run().lane == "cuda"


def test_a_tune_or_pin_after_warm_calls_makes_the_next_call_choose_again(stubbed):
    """The warm path replays a remembered config; once autotune's choice may have changed (a measurement, a pin,
    an unpin) it forgets, so the next call takes the full path and the new choice (the H200 caught ops.gemm
    keeping its default config after tune_gemm, on tensors at recycled addresses)."""
    from tessera.ops import autotune

    a, b = FakeDeviceArray(f16((M, K), 1)), FakeDeviceArray(f16((K, N), 2))
    out = FakeDeviceArray(np.zeros((M, N), np.float16))
    ops.gemm(a, b, out=out)
    assert _warm.warm_get(next(iter(_warm._warm))) is not None  # remembered
    for change in (lambda: autotune.pin("gemm_sm90a", {"BM": 128}), lambda: autotune.unpin("gemm_sm90a")):
        ops.gemm(a, b, out=out)
        assert len(_warm._warm) == 1
        change()
        assert _warm.warm_get(next(iter(_warm._warm), None)) is None and not _warm._warm


# --- replays: a warm call repeating an earlier call's addresses, scalars and stream ----------------------------


def test_replayed_attention_calls_pack_what_the_full_path_packs_for_each_call(attn):
    """Two sets of arrays and two scales, interleaved: each call whose (addresses, scale) came before replays its
    prepared launch, and every launch's parameter block is the one the full path packs for that call (a stale
    block from the other set would be the bug)."""
    launches, full = attn
    h0, names, outs = attn_args("attention", 0)
    sets = [{n: FakeDeviceArray(x) for n, x in h.items()} for h in (h0, attn_args("attention", 10)[0])]

    def go(i, scale):
        dev = sets[i]
        ops.attention(*(dev[n] for n in names), **{n: dev[n] for n in outs}, scale=scale)

    order = [(0, 0.25), (1, 0.25), (0, 0.5), (0, 0.25), (1, 0.25), (1, 0.5), (0, 0.25), (0, 0.25)]
    for i, s in order:
        go(i, s)
    assert full == ["attention"] and len(launches) == len(order)
    (call,) = _warm._warm.values()
    assert len(call.replays) == 4  # one per distinct (set, scale)
    replayed = ops.last_run()
    got = launches[:]
    for i, s in order:  # the same calls, each down the full path
        _warm._warm.clear()
        go(i, s)
    assert launches[len(order):] == got and ops.last_run() == replayed
    assert len({block for _, block in got}) == 4


def test_a_replayed_gemm_still_copies_c_into_out_first(stubbed):
    """c given and out another buffer: every call, replayed or not, copies c into out before the launch."""
    a, b = FakeDeviceArray(f16((M, K), 1)), FakeDeviceArray(f16((K, N), 2))
    c_host, out_host = np.ones((M, N), np.float32), np.zeros((M, N), np.float32)
    c, out = FakeDeviceArray(c_host), FakeDeviceArray(out_host)
    for n in range(4):
        out_host[...] = 5
        c_host[...] = n
        ops.gemm(a, b, c, beta=1.0, out=out)
        assert (out_host == n).all()
    (call,) = _warm._warm.values()
    assert call.copy_c and len(call.replays) == 1 and len({block for _, block in stubbed}) == 1


def test_replays_are_per_stream(attn):
    """The stream is part of a replay's key: each call launches on its own stream, replayed or not."""
    h, names, outs = attn_args("attention")
    dev = {n: FakeDeviceArray(x) for n, x in h.items()}

    def go(stream):
        ops.attention(*(dev[n] for n in names), **{n: dev[n] for n in outs}, stream=stream)

    go(None)
    (plan,) = [p for p in _common._plans.values() if p.op == "attention"]
    loaded = plan.compiled._loaded[(0, None)]
    seen, stub = [], loaded._launch_kernel
    loaded._launch_kernel = lambda func, *rest: seen.append(int(rest[7])) or stub(func, *rest)
    order = (7, 7, None, 9, 7, 9, None)
    for stream in order:
        go(stream)
    assert seen == [s or 0 for s in order]
    (call,) = _warm._warm.values()
    assert len(call.replays) == 3


def test_more_address_sets_than_replays_kept_still_launch_each_calls_own(attn, monkeypatch):
    """Three sets of arrays in turn with room for two replays: every call misses, prepares and launches its
    own parameters (the store forgets and refills), as the full path would."""
    launches, full = attn
    monkeypatch.setattr(_warm, "REPLAYS", 2)
    names, outs = ("q", "k", "v"), ("out", "lse")
    sets = [{n: FakeDeviceArray(x) for n, x in attn_args("attention", 10 * i)[0].items()} for i in range(3)]
    order = [0, 1, 2, 0, 1, 2, 2]
    for i in order:
        ops.attention(*(sets[i][n] for n in names), **{n: sets[i][n] for n in outs})
    got = launches[:]
    for i in order:
        _warm._warm.clear()
        ops.attention(*(sets[i][n] for n in names), **{n: sets[i][n] for n in outs})
    assert full == ["attention"] * (1 + len(order)) and launches[len(order):] == got
    assert len({block for _, block in got}) == 3


def test_a_signature_that_mostly_misses_stops_preparing_replays(attn, monkeypatch):
    """Every call with new addresses (outputs never reused): after REPLAY_TRIAL prepared misses and no hit the
    signature goes back to the plain warm path (bind, launch), and each launch stays the call's own."""
    launches, full = attn
    monkeypatch.setattr(_warm, "REPLAY_TRIAL", 6)
    names, outs = ("q", "k", "v"), ("out", "lse")
    sets = [{n: FakeDeviceArray(x) for n, x in attn_args("attention", 10 * i)[0].items()} for i in range(9)]
    for dev in sets:
        ops.attention(*(dev[x] for x in names), **{x: dev[x] for x in outs})
    (call,) = _warm._warm.values()
    assert call.replays is None and call.misses == 6 and call.hits == 0 and full == ["attention"]
    got = launches[:]
    for dev in sets:
        _warm._warm.clear()
        ops.attention(*(dev[x] for x in names), **{x: dev[x] for x in outs})
    assert launches[len(got):] == got and len({block for _, block in got}) == 9


def test_a_full_replay_store_keeps_its_hot_sets_and_launches_others_plainly(attn, monkeypatch):
    """Room for two replays, two hot sets and a third now and then: the hot sets keep replaying (a full store
    is not cleared by hits), the third launches without a replay until REPLAYS such misses clear the store."""
    launches, full = attn
    monkeypatch.setattr(_warm, "REPLAYS", 2)
    monkeypatch.setattr(_warm, "REPLAY_TRIAL", 1000)
    names, outs = ("q", "k", "v"), ("out", "lse")
    sets = [{n: FakeDeviceArray(x) for n, x in attn_args("attention", 10 * i)[0].items()} for i in range(3)]

    def go(i):
        ops.attention(*(sets[i][n] for n in names), **{n: sets[i][n] for n in outs})

    for i in (0, 1, 0, 1):  # the full path, a prepared miss, a prepared miss (0's first warm call), a hit
        go(i)
    (call,) = _warm._warm.values()
    assert len(call.replays) == 2 and (call.hits, call.misses) == (1, 2)
    for _ in range(5):
        go(0)
        go(1)
    assert call.hits == 11 and call.overflow == 0
    go(2)  # a miss on a full store: plain launch, nothing prepared
    assert call.overflow == 1 and len(call.replays) == 2 and call.misses == 2
    go(2)  # the second such miss clears the store and prepares this one
    assert call.overflow == 0 and len(call.replays) == 1 and call.misses == 3
    got = launches[:]
    for i in (0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 2):
        _warm._warm.clear()
        go(i)
    assert launches[len(got):] == got
