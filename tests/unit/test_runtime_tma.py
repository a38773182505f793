"""TMA tensor maps and persistent launches on the CPU: rules, the driver call, the cache, packing, the grid.

There is no driver here: `cuTensorMapEncodeTiled` is replaced by a fake that
records its arguments and returns a map whose bytes say which call made it,
and cuLaunchKernel by one that reads the parameter block the way the driver
does. tests/gpu/test_tma_gpu.py runs the real thing on an sm_90a device.
"""

from __future__ import annotations

import ctypes
import hashlib
import struct

import ml_dtypes
import numpy as np
import pytest

import tessera
from tessera import tl
from tessera.target.nvidia.emit.cuda import EmittedKernel, KernelParam
from tessera.target.nvidia.toolchain.nvrtc import CompiledArtifact
from tessera.compiler import kernel as kernel_module
from tessera.compiler import testing
from tessera.compiler.kernel import CompiledKernel, launch_signature
from tessera.ir.diagnostics import TesseraError
from tessera.runtime import tma
from tessera.runtime.args import ArgBinder, ptr, scalar, tmap
from tessera.runtime.launch import LoadedKernel, slot_layout
from tessera.runtime.persistent import physical_grid

BF16 = ml_dtypes.bfloat16
ADDRESS = 0x7F00_0000_0000
TENSOR = ("a", "a_size0", "a_size1", "a_stride0", "a_stride1")


class FakeEncoder:
    """Stands in for cuTensorMapEncodeTiled: records each call; the map's words are (call number, address, ...)."""

    def __init__(self, result=None):
        from cuda.bindings import driver
        self.driver = driver
        self.result = result if result is not None else driver.CUresult.CUDA_SUCCESS
        self.calls = []

    def __call__(self, *args):
        d = self.driver
        for arg, kind in zip(args[3:7], (d.cuuint64_t, d.cuuint64_t, d.cuuint32_t, d.cuuint32_t)):
            if not (isinstance(arg, (list, tuple)) and all(isinstance(x, kind) for x in arg)):
                raise TypeError(f"the bindings take lists of {kind.__name__}, got {arg!r}")  # as the real one does
        args = (*args[:3], *([int(x) for x in arg] for arg in args[3:7]), *args[7:])
        self.calls.append(args)
        tmap_ = self.driver.CUtensorMap()
        tmap_.opaque = [len(self.calls), int(args[2])] + [0xA5A5 + i for i in range(14)]
        return self.result, tmap_


@pytest.fixture()
def encoder(monkeypatch):
    from cuda.bindings import driver
    fake = FakeEncoder()
    monkeypatch.setattr(driver, "cuTensorMapEncodeTiled", fake)
    monkeypatch.setattr(tma, "_cache", tma._Cache(tma.CACHE_ENTRIES))  # a private, empty cache
    return fake


def expect(code: str, fn, *args, **kwargs) -> TesseraError:
    with pytest.raises(TesseraError) as err:
        fn(*args, **kwargs)
    assert err.value.code.name == code, str(err.value)
    return err.value


# --- the rules, checked before the driver is called --------------------------------------------

GOOD = dict(address=ADDRESS, elem="bf16", sizes=(200, 104), strides=(104, 1), box=(64, 64), swizzle=128)


@pytest.mark.parametrize("change, needle", [
    (dict(address=ADDRESS + 8), "not 16-byte aligned"),
    (dict(strides=(104, 2)), "rows are not contiguous"),
    (dict(sizes=(200, 100), strides=(100, 1)), "row pitch is 200 bytes"),
    (dict(strides=(2**39, 1)), "below 2**40"),
    (dict(sizes=(2**32, 104)), "outside [1, 2**32)"),
    (dict(sizes=(0, 104)), "empty"),
    (dict(box=(64, 0)), "not two dims in [1, 256]"),
    (dict(box=(257, 64)), "not two dims in [1, 256]"),
    (dict(box=(64, 128)), "wider than the 128-byte swizzle"),
    (dict(box=(64, 64), swizzle=64), "wider than the 64-byte swizzle"),
    (dict(box=(64, 4), swizzle=0), "8 bytes, not a multiple of 16"),
    (dict(swizzle=16), "swizzle 16 is not one of"),
    (dict(elem="i32"), "no TMA data type"),
])
def test_each_rule_is_refused_with_a_coded_error_naming_the_argument(encoder, change, needle):
    args = {**GOOD, **change}
    err = expect("RUNTIME_TMA_INVALID", tma.encode, args.pop("address"), *args.values(), name="q", kernel="k")
    assert needle in err.message and "'q'" in err.message and err.hint
    assert encoder.calls == []  # refused before the driver


def test_legal_corners_pass(encoder):
    tma.encode(ADDRESS, "f32", (1, 4), (4, 1), (1, 4), 0)  # one row of 16 bytes, no swizzle
    tma.encode(ADDRESS, "f16", (2**32 - 1, 8), (8, 1), (256, 8), 32)  # a 16-byte row box in a 32B swizzle
    tma.encode(ADDRESS, "bf16", (300, 300), (304, 1), (256, 64), 128)  # padded pitch wider than the row
    assert len(encoder.calls) == 3


# --- the driver call ---------------------------------------------------------------------------------

@pytest.mark.parametrize("elem, dtype, swizzle, swz", [
    ("bf16", "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 128, "CU_TENSOR_MAP_SWIZZLE_128B"),
    ("f16", "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 64, "CU_TENSOR_MAP_SWIZZLE_64B"),
    ("f32", "CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 32, "CU_TENSOR_MAP_SWIZZLE_32B"),
    ("f32", "CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 0, "CU_TENSOR_MAP_SWIZZLE_NONE"),
])
def test_encode_passes_the_driver_innermost_first_dims_and_byte_strides(encoder, elem, dtype, swizzle, swz):
    item = tma.ITEMSIZE[elem]
    cols = min(swizzle or 64, 64) // item
    got = tma.encode(ADDRESS, elem, (300, 72), (80, 1), (32, cols), swizzle)
    (args,) = encoder.calls
    d = encoder.driver
    assert args == (getattr(d.CUtensorMapDataType, dtype), 2, ADDRESS, [72, 300], [80 * item], [cols, 32], [1, 1],
                    d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, getattr(d.CUtensorMapSwizzle, swz),
                    d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    assert isinstance(got, tma.TensorMap) and len(got) == 128
    assert struct.unpack("<16Q", got)[:3] == (1, ADDRESS, 0xA5A5)  # the driver's map, byte for byte


def test_a_driver_refusal_is_coded(monkeypatch):
    from cuda.bindings import driver
    monkeypatch.setattr(driver, "cuTensorMapEncodeTiled", FakeEncoder(driver.CUresult.CUDA_ERROR_INVALID_VALUE))
    monkeypatch.setattr(tma, "_cache", tma._Cache(4))
    err = expect("RUNTIME_TMA_INVALID", tma.encode, ADDRESS, "bf16", (64, 64), (64, 1), (64, 64), 128, name="a")
    assert "CUDA_ERROR_INVALID_VALUE" in err.message and tma.cache_info()["entries"] == 0  # a failure is not kept


def test_without_a_driver_library_the_error_is_coded(monkeypatch):
    from cuda.bindings import driver

    def missing(*args):
        raise RuntimeError("Failed to dlopen libcuda.so.1")
    monkeypatch.setattr(driver, "cuTensorMapEncodeTiled", missing)
    monkeypatch.setattr(tma, "_cache", tma._Cache(4))
    err = expect("RUNTIME_TMA_INVALID", tma.encode, ADDRESS, "bf16", (64, 64), (64, 1), (64, 64), 128)
    assert "libcuda" in err.message


# --- maps of rank 3 to 5 (attention's [B, H, S, D]) -------------------------------------------------------

GOOD4 = dict(address=ADDRESS, elem="bf16", sizes=(2, 3, 200, 104), strides=(3 * 200 * 112, 200 * 112, 112, 1),
             box=(64, 64), swizzle=128)


@pytest.mark.parametrize("change, needle", [
    (dict(strides=(3 * 200 * 112, 200 * 112, 112, 2)), "rows are not contiguous"),
    (dict(strides=(3 * 200 * 112, 200 * 112 + 4, 112, 1)), "dim-1 stride is 44808 bytes"),
    (dict(strides=(2**39, 200 * 112, 112, 1)), "dim-0 stride is 2**40 bytes"),
    (dict(strides=(0, 200 * 112, 112, 1)), "dim-0 stride is 0 bytes"),
    (dict(strides=(3 * 200 * 112, 200 * 112, 100, 1)), "row pitch is 200 bytes"),
    (dict(sizes=(2, 2**32, 200, 104)), "outside [1, 2**32)"),
    (dict(sizes=(2, 0, 200, 104)), "empty"),
    (dict(sizes=(2, 3, 200, 104), strides=(200 * 112, 112, 1)), "3 strides"),
    (dict(sizes=(1, 1, 2, 3, 200, 104), strides=(1, 1, 1, 1, 112, 1)), "rank 6"),
    (dict(sizes=(104,), strides=(1,)), "rank 1"),
])
def test_each_rank_n_rule_is_refused_with_a_coded_error_naming_the_argument(encoder, change, needle):
    args = {**GOOD4, **change}
    err = expect("RUNTIME_TMA_INVALID", tma.encode, args.pop("address"), *args.values(), name="k_cache", kernel="k")
    assert needle.replace("2**40 bytes", f"{2**40} bytes") in err.message and "'k_cache'" in err.message and err.hint
    assert encoder.calls == []


def test_rank_3_to_5_maps_pass_the_driver_every_dim_innermost_first(encoder):
    d = encoder.driver
    tma.encode(ADDRESS, "bf16", (7, 200, 104), (200 * 112, 112, 1), (64, 64), 128)
    tma.encode(**GOOD4)
    tma.encode(ADDRESS, "f32", (2, 2, 3, 50, 8), (2400, 1200, 400, 8, 1), (16, 8), 32)
    assert [c[1] for c in encoder.calls] == [3, 4, 5]
    assert encoder.calls[0][3:7] == ([104, 200, 7], [224, 200 * 112 * 2], [64, 64, 1], [1, 1, 1])
    assert encoder.calls[1][3:7] == ([104, 200, 3, 2], [224, 200 * 112 * 2, 3 * 200 * 112 * 2], [64, 64, 1, 1],
                                     [1, 1, 1, 1])
    assert encoder.calls[2][3:7] == ([8, 50, 3, 2, 2], [32, 1600, 4800, 9600], [8, 16, 1, 1, 1], [1] * 5)
    assert encoder.calls[1][7:] == (d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
                                    d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)


def test_the_cache_key_holds_every_outer_size_and_stride(encoder):
    first = tma.encode(**GOOD4)
    assert tma.encode(**GOOD4) is first and len(encoder.calls) == 1
    for change in (dict(strides=(3 * 200 * 112 + 8, 200 * 112, 112, 1)),
                   dict(strides=(3 * 200 * 112, 200 * 120, 112, 1)),
                   dict(sizes=(3, 3, 200, 104)), dict(sizes=(2, 2, 200, 104)),
                   dict(sizes=(6, 200, 104), strides=(200 * 112, 112, 1))):
        assert tma.encode(**{**GOOD4, **change}) != first
    assert len(encoder.calls) == 6


TENSOR4 = ("x", *(f"x_size{d}" for d in range(4)), *(f"x_stride{d}" for d in range(4)))
SIG4 = (ptr("x", "bf16", (), "in"), *(scalar(n, "i64") for n in TENSOR4[1:]), tmap("x_tmap", "bf16", TENSOR4, (64, 64),
                                                                                   128))


def test_a_rank_4_slot_reads_every_size_and_stride_and_warm_fills_hit_the_cache(encoder):
    (slot,) = tma.slots_of(SIG4)
    assert (slot.ptr, slot.sizes, slot.strides, slot.index) == (0, (1, 2, 3, 4), (5, 6, 7, 8), 9)
    values = [ADDRESS, *GOOD4["sizes"], *GOOD4["strides"], None]
    assert slot.fill_if_plain(values) and values[9] == tma.encode(**GOOD4) and len(encoder.calls) == 1
    values[9] = None
    assert slot.fill_if_plain(values) and values[9] is not None and len(encoder.calls) == 1  # the warm lookup
    values[5] += 8  # another batch stride: another map
    assert slot.fill_if_plain(values) and len(encoder.calls) == 2
    bound = ArgBinder(SIG4, "k").bind((ADDRESS, *GOOD4["sizes"], *GOOD4["strides"], None))
    assert bound.values[9] == tma.encode(**GOOD4)


@pytest.mark.parametrize("tensor", [TENSOR4[:-1], (*TENSOR4, "x_stride3"), ("x", "x_size0", "x_stride0")],
                         ids=["odd-count", "unpaired", "rank-1"])
def test_a_map_must_name_a_size_and_a_stride_per_dim(tensor):
    expect("RUNTIME_ARG_INVALID", ArgBinder, (*SIG4[:9], tmap("x_tmap", "bf16", tensor, (64, 64), 128)), "k")


# --- the cache ------------------------------------------------------------------------------------------

def test_cache_hits_skip_the_driver_and_every_input_is_in_the_key(encoder):
    first = tma.encode(ADDRESS, "bf16", (128, 64), (64, 1), (64, 64), 128)
    assert tma.encode(ADDRESS, "bf16", (128, 64), (64, 1), (64, 64), 128) is first
    assert len(encoder.calls) == 1 and tma.cache_info()["hits"] == 1
    others = [(ADDRESS + 16, "bf16", (128, 64), (64, 1), (64, 64), 128), (ADDRESS, "f16", (128, 64), (64, 1), (64, 64),
              128), (ADDRESS, "bf16", (127, 64), (64, 1), (64, 64), 128), (ADDRESS, "bf16", (128, 64), (72, 1),
              (64, 64), 128), (ADDRESS, "bf16", (128, 64), (64, 1), (32, 64), 128),
              (ADDRESS, "bf16", (128, 64), (64, 1), (64, 32), 64)]
    maps = {tma.encode(*o) for o in others}
    assert len(encoder.calls) == 1 + len(others) and len(maps | {first}) == 1 + len(others)


def test_cache_is_a_bounded_lru(encoder, monkeypatch):
    monkeypatch.setattr(tma, "_cache", tma._Cache(3))
    enc = lambda i: tma.encode(ADDRESS + 16 * i, "bf16", (64, 64), (64, 1), (64, 64), 128)  # noqa: E731
    for i in range(3):
        enc(i)
    enc(0)  # 0 becomes the most recent: 1 is now the oldest
    enc(3)  # evicts 1
    assert tma.cache_info()["entries"] == 3 and len(encoder.calls) == 4
    enc(0), enc(2), enc(3)
    assert len(encoder.calls) == 4  # all still cached
    enc(1)
    assert len(encoder.calls) == 5  # 1 was evicted: encoded again
    tma.clear_cache()
    assert tma.cache_info() == {"hits": 0, "misses": 0, "entries": 0, "limit": 3}


# --- signatures and the binder ------------------------------------------------------------------------------

SIG = (ptr("a", "bf16", ("a_size0", "a_size1"), "in"), *(scalar(n, "i64") for n in TENSOR[1:]),
       tmap("a_tmap", "bf16", TENSOR, (64, 64), 128), scalar("n", "i32"))


def test_binder_encodes_the_map_of_a_device_array(encoder):
    bound = ArgBinder(SIG, "k").bind((ADDRESS, 200, 104, 104, 1, None, 7))
    assert bound.host == [] and bound.tmaps == ()
    assert bound.values[:5] == [ADDRESS, 200, 104, 104, 1] and bound.values[6] == 7
    assert isinstance(bound.values[5], tma.TensorMap) and encoder.calls[0][3:6] == ([104, 200], [208], [64, 64])


def test_binder_defers_the_map_of_a_numpy_array_until_it_has_a_device_address(encoder):
    a = np.zeros((200, 104), BF16)
    bound = ArgBinder(SIG, "k").bind((a, 200, 104, 104, 1, None, 7))
    assert bound.values[0] is None and bound.values[5] is None and len(bound.tmaps) == 1 and encoder.calls == []
    # but the layout rules are checked now, before anything is copied
    odd = np.zeros((200, 100), BF16)
    err = expect("RUNTIME_TMA_INVALID", ArgBinder(SIG, "k").bind, (odd, 200, 100, 100, 1, None, 7))
    assert "'a'" in err.message and "pad each row to a multiple of 8 bf16" in err.hint


def test_binder_takes_an_encoded_map_and_refuses_other_values(encoder):
    given = tma.TensorMap(bytes(range(128)))
    assert ArgBinder(SIG, "k").bind((ADDRESS, 200, 104, 104, 1, bytes(range(128)), 7)).values[5] == given
    assert encoder.calls == []
    for bad in (b"short", 3, "map"):
        err = expect("RUNTIME_ARG_INVALID", ArgBinder(SIG, "k").bind, (ADDRESS, 200, 104, 104, 1, bad, 7))
        assert "'a_tmap' (tensor map of a)" in err.message
    with pytest.raises(ValueError):
        tma.TensorMap(b"x" * 127)


@pytest.mark.parametrize("param, code", [
    (tmap("t", "bf16", ("a", "a_size0"), (64, 64), 128), "RUNTIME_ARG_INVALID"),
    (tmap("t", "f16", TENSOR, (64, 64), 128), "RUNTIME_ARG_INVALID"),  # the pointer is bf16
    (tmap("t", "bf16", ("n", *TENSOR[1:]), (64, 64), 128), "RUNTIME_ARG_INVALID"),
    (tmap("t", "bf16", TENSOR, (64, 128), 128), "RUNTIME_TMA_INVALID"),
    (tmap("t", "bf16", TENSOR, (64, 64), 48), "RUNTIME_TMA_INVALID"),
])
def test_malformed_tmap_signatures_are_refused(param, code):
    expect(code, ArgBinder, (*SIG[:5], param, SIG[6]), "k")


class RecordingLaunch:
    """cuLaunchKernel as the driver reads it: each parameter from its pointer, of its size."""

    def __init__(self, sizes):
        from cuda.bindings import driver
        self.sizes, self.ok, self.calls = sizes, driver.CUresult.CUDA_SUCCESS, []

    def __call__(self, func, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        ptrs = (ctypes.c_void_p * len(self.sizes)).from_address(params)
        self.calls.append(((gx, gy, gz), [ptrs[i] for i in range(len(self.sizes))],
                           [ctypes.string_at(ptrs[i], n) for i, n in enumerate(self.sizes)]))
        return (self.ok,)


def artifact() -> CompiledArtifact:
    cubin = b"\x7fELF fake cubin"
    return CompiledArtifact(cubin=cubin, arch="sm_90a", sha256=hashlib.sha256(cubin).hexdigest())


def loaded_kernel(sig, name="k") -> LoadedKernel:
    attrs = dict(num_regs=8, local_size_bytes=0, shared_size_bytes=0, max_threads_per_block=1024)
    k = LoadedKernel(artifact(), name, ArgBinder(sig, name), 0, None, type("K", (), {"handle": 0x1234})(), attrs)
    k._launch_kernel = RecordingLaunch([ctypes.sizeof(p.ctype) for p in sig])
    return k


def test_slot_layout_gives_maps_128_bytes_at_64_byte_alignment():
    fmt, offsets, size = slot_layout(["ptr", "i64", "i32", "tmap", "f32", "tmap", "i32"])
    assert offsets == (0, 8, 16, 64, 192, 256, 384) and size == 392 and struct.calcsize(fmt) == size


def test_parameter_block_holds_the_map_where_the_driver_reads_it(encoder):
    k = loaded_kernel(SIG)
    k.launch(2, 128, 0, (ADDRESS, 200, 104, 104, 1, None, 7))
    (grid, addresses, raw), = k._launch_kernel.calls
    want = tma.encode(ADDRESS, "bf16", (200, 104), (104, 1), (64, 64), 128)
    assert raw[5] == want and addresses[5] % 64 == 0 and ctypes.addressof(k._slots) == addresses[0]
    assert [struct.unpack("<q", r)[0] for r in raw[:5]] == [ADDRESS, 200, 104, 104, 1]
    assert struct.unpack("<i", raw[6][:4])[0] == 7
    # a warm call passes the encoded map itself: packed without binding, same block
    k.launch(2, 128, 0, (ADDRESS, 200, 104, 104, 1, want, 7))
    assert k._launch_kernel.calls[1][2] == raw and len(encoder.calls) == 1


def test_staged_numpy_arrays_get_their_map_after_the_copy_in(encoder, monkeypatch):
    from cuda.bindings import driver
    ok = driver.CUresult.CUDA_SUCCESS
    device_address = 0x5000_0000
    monkeypatch.setattr(driver, "cuMemAlloc", lambda n: (ok, driver.CUdeviceptr(device_address)))
    for name in ("cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync"):
        monkeypatch.setattr(driver, name, lambda *a: (ok,))
    monkeypatch.setattr(driver, "cuStreamSynchronize", lambda *a: (ok,))
    monkeypatch.setattr(driver, "cuStreamQuery", lambda *a: (ok,))  # the bounded wait polls (runtime.wait)
    monkeypatch.setattr(driver, "cuMemFree", lambda *a: (ok,))
    k = loaded_kernel(SIG)
    res = k.launch(1, 128, 0, (np.zeros((200, 104), BF16), 200, 104, 104, 1, None, 7))
    (_, _, raw), = k._launch_kernel.calls
    assert res.synchronized and struct.unpack("<Q", raw[0])[0] == device_address
    assert encoder.calls[0][2] == device_address and raw[5][8:16] == struct.pack("<Q", device_address)


# --- persistent grids ------------------------------------------------------------------------------------

@pytest.mark.parametrize("grid, sms, physical, logical", [
    ((4, 3, 2), 132, (24, 1, 1), (4, 3, 2)),
    ((64, 64), 132, (132, 1, 1), (64, 64, 1)),
    (1, 132, (1, 1, 1), (1, 1, 1)),
    ([132, 1, 1], 132, (132, 1, 1), (132, 1, 1)),
    ((133,), 132, (132, 1, 1), (133, 1, 1)),
])
def test_physical_grid_is_one_wave_at_most(grid, sms, physical, logical):
    assert physical_grid(grid, sms) == (physical, logical)


def test_split_k_scratch_is_kept_zeroed_grown_and_dropped_after_a_failure():
    """One buffer per (device, host?) serves every launch (the kernel leaves its counters at zero); a larger grid
    gets a new zeroed one at least twice the size; `drop` (after a failed launch) forgets it."""
    import ctypes

    from tessera.runtime.scratch import Scratch
    s = Scratch("k")
    a = s.address(0, 100, host=True)
    assert s.address(0, 64, host=True) == a
    ctypes.memset(a, 7, 100)  # a launch that died with raised counters
    b = s.address(0, 150, host=True)
    assert b != a and bytes((ctypes.c_ubyte * 200).from_address(b)) == bytes(200)
    ctypes.memset(b, 7, 10)
    s.drop()
    c = s.address(0, 150, host=True)
    assert bytes((ctypes.c_ubyte * 150).from_address(c)) == bytes(150)


def test_each_stream_has_its_own_split_k_scratch():
    """Launches on different streams may overlap: sharing counters would mix their splits. One stream's
    launches are ordered and share a buffer."""
    from types import SimpleNamespace

    from tessera.runtime.scratch import Scratch, stream_key
    s = Scratch("k")
    torch_like, cupy_like = SimpleNamespace(cuda_stream=0x1234), SimpleNamespace(ptr=0x5678)
    core_like = SimpleNamespace(__cuda_stream__=lambda: (0, 0x9abc))
    assert [stream_key(x) for x in (None, 7, torch_like, cupy_like, core_like)] == [0, 7, 0x1234, 0x5678, 0x9abc]
    a, b = (s.address(0, 64, host=True, stream=k) for k in (stream_key(torch_like), stream_key(cupy_like)))
    assert a != b and s.address(0, 64, host=True, stream=0x1234) == a


def test_a_stream_capturing_a_graph_takes_its_scratch_from_torch_or_a_coded_error(monkeypatch):
    """The driver cannot allocate while a stream captures a CUDA graph (ops.attention's tile counter met
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED under torch.cuda.graph): the buffer then comes from torch's allocator on
    that stream, zeroed there, and is kept; without torch the error is coded and says what to do."""
    import sys
    from types import SimpleNamespace

    from tessera.runtime import scratch as S

    made = []

    class FakeTensor:
        def __init__(self, n):
            self.n, self.ptr = n, 0x7000 + len(made) * 0x1000
            made.append(self)

        def data_ptr(self):
            return self.ptr

    class StreamCtx:
        def __init__(self, s):
            made.append(("on stream", s.handle))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    fake_torch = SimpleNamespace(uint8="u8", cuda=SimpleNamespace(
        stream=StreamCtx, ExternalStream=lambda h, device=0: SimpleNamespace(handle=h)),
        zeros=lambda n, dtype, device: FakeTensor(n))
    monkeypatch.setattr(S, "_capturing", lambda stream: stream == 0x42)
    monkeypatch.setattr(S.Scratch, "_device_zeros", lambda self, device, n: pytest.fail("driver allocation"))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    s = S.Scratch("flash_attention")
    a = s.address(0, 16, host=False, stream=0x42)
    assert made[0] == ("on stream", 0x42) and made[1].n == 16 and a == made[1].ptr
    assert s.address(0, 16, host=False, stream=0x42) == a and len(made) == 2  # kept: every replay names it
    monkeypatch.delitem(sys.modules, "torch")
    with pytest.raises(TesseraError, match="RUNTIME_LAUNCH_FAILED.*capturing a CUDA graph") as err:
        S.Scratch("k").address(0, 16, host=False, stream=0x42)
    assert "before the capture" in err.value.hint


def test_a_split_k_kernel_gets_a_cta_per_unit_of_work_up_to_one_wave():
    """8 x 8 tiles split in 2 are 128 units: 128 CTAs, not 64 (each would run both splits of its tile in turn)."""
    assert physical_grid((8, 8), 132, splitk=2) == ((128, 1, 1), (8, 8, 1))
    assert physical_grid((8, 8), 132, splitk=3) == ((132, 1, 1), (8, 8, 1))
    assert physical_grid((3, 8), 132, cluster=2, splitk=2) == ((64, 1, 1), (3, 8, 1))  # 2 pair rows x 8 x 2 units
    # a cluster that pairs columns (multicast=a): 1 row x ceil(63 / 2) = 32 pairs -> 64 CTAs
    assert physical_grid((1, 63), 132, cluster=2, cluster_axis=1) == ((64, 1, 1), (1, 63, 1))
    assert physical_grid((1, 63), 132, cluster=2) == ((126, 1, 1), (1, 63, 1))  # pairing rows: 63 pairs, one spare each


def test_a_stream_k_kernel_gets_a_cta_per_sm_and_scratch_per_tile_and_per_cta():
    """Stream-K shares the streamed tiles' K steps among all CTAs, so even 8 tiles get one CTA per SM (whole
    clusters); its scratch is a counter record per logical tile plus two slots per launched CTA."""
    from tessera.runtime.scratch import scratch_bytes
    assert physical_grid((2, 4), 132, streamk=True) == ((132, 1, 1), (2, 4, 1))
    assert physical_grid((64, 64), 132, streamk=True) == ((132, 1, 1), (64, 64, 1))
    assert physical_grid((3, 8), 131, cluster=2, streamk=True) == ((130, 1, 1), (3, 8, 1))
    assert scratch_bytes(16, (2, 4, 1)) == 128
    assert scratch_bytes(16, (2, 4, 1), 2 * 131072, (132, 1, 1)) == 128 + 132 * 262144


@pytest.mark.parametrize("grid, sms", [(0, 132), ((2, 0), 132), ("4", 132), ((1, 2, 3, 4), 132), (2.0, 132),
                                       ((2**16, 2**16), 132), ((4, 4), 0)])
def test_bad_persistent_grids_are_coded(grid, sms):
    expect("RUNTIME_LAUNCH_FAILED", physical_grid, grid, sms)


# --- CompiledKernel: signature, values, launch ------------------------------------------------------------

@tessera.kernel
def scale_rows(A, O, alpha, *, BM=64, BN=64):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    tl.store(O, [m0, n0], (tl.load(A, [m0, n0], (BM, BN)).to(tl.f32) * alpha).to(tl.bf16))


def hopper_kernel(persistent=True) -> CompiledKernel:
    """scale_rows with a hand-written sm_90a parameter list in emit_cuda's ABI: a map of A, the grid at the end."""
    T = tessera.tensor
    traced = scale_rows.trace(T(("M", "N"), "bf16"), T(("M", "N"), "bf16"), tessera.scalar("f32"))
    params = []
    for i, name in enumerate(("A", "O")):
        params.append(KernelParam(name, "const tsr_u16* __restrict__" if i == 0 else "tsr_u16* __restrict__", i,
                                  "ptr"))
        params += [KernelParam(f"{name}_{r}{d}", "long long", i, r, d) for r in ("size", "stride") for d in (0, 1)]
        if i == 0:
            params.append(KernelParam("A_tmap", "const __grid_constant__ tsr_tensormap", 0, "tmap", box=(64, 64),
                                      swizzle=128))
    params.append(KernelParam("alpha", "float", 2, "value"))
    params += [KernelParam(f"tsr_grid{d}", "int", -1, "grid", d) for d in range(3)]
    emitted = EmittedKernel("scale_rows", "// not compiled here", "sm_90a", 128, 0, tuple(params), persistent)
    return CompiledKernel(traced, emitted, artifact(), "test", "key", tuple(traced.func.function_type.inputs))


class DeviceArray:
    """A C-contiguous bf16 CUDA tensor as far as the launcher can tell (torch's accessors, no memory behind it)."""

    dtype, is_cuda = "torch.bfloat16", True

    def __init__(self, shape, address):
        self.shape, self.address = tuple(shape), address

    def data_ptr(self):
        return self.address

    def stride(self):
        return (self.shape[1], 1)

    def get_device(self):
        return 0

    def is_contiguous(self):
        return True


def test_launch_signature_links_the_map_to_its_array():
    sig = hopper_kernel().signature
    by_name = {p.name: p for p in sig}
    assert by_name["A_tmap"] == tmap("A_tmap", "bf16", ("A", "A_size0", "A_size1", "A_stride0", "A_stride1"),
                                     (64, 64), 128)
    assert [by_name[f"tsr_grid{d}"].kind for d in range(3)] == ["i32"] * 3
    assert ctypes.sizeof(by_name["A_tmap"].ctype) == 128


def test_launch_signature_refuses_a_map_of_a_non_2d_argument():
    ck = hopper_kernel()
    bad = (*ck.emitted.params, KernelParam("x_tmap", "const __grid_constant__ tsr_tensormap", 2, "tmap",
                                           box=(64, 64), swizzle=128))
    arg_types = tuple(next(f for f in ck.traced.module.walk() if f.name == "func.func").function_type.inputs)
    expect("EMIT_UNSUPPORTED", launch_signature, EmittedKernel("k", "", "sm_90a", 128, 0, bad), arg_types)


@pytest.fixture()
def launched(encoder, monkeypatch):
    """A persistent sm_90a CompiledKernel on a recording LoadedKernel, on a 132-SM device."""
    ck = hopper_kernel()
    monkeypatch.setattr(kernel_module, "_sm_count", lambda device: 132)
    k = loaded_kernel(ck.signature, ck.name)
    ck._loaded[(0, None)] = k
    return ck, k._launch_kernel


def _a_bf16(address):
    return DeviceArray((300, 200), address)


def test_launch_fills_the_map_and_the_logical_grid_and_runs_one_wave(launched, encoder):
    ck, rec = launched
    values, device = ck.values([_a_bf16(ADDRESS), _a_bf16(ADDRESS + 2**20), 0.5])
    assert values[5] is None and values[-3:] == [None] * 3  # the runtime's slots, filled at launch
    ck.launch((5, 4), [_a_bf16(ADDRESS), _a_bf16(ADDRESS + 2**20), 0.5])
    grid, addresses, raw = rec.calls[-1]
    assert grid == (20, 1, 1)  # 5 x 4 logical CTAs < 132 SMs
    assert [struct.unpack("<i", r[:4])[0] for r in raw[-3:]] == [5, 4, 1]
    assert raw[5] == tma.encode(ADDRESS, "bf16", (300, 200), (200, 1), (64, 64), 128) and addresses[5] % 64 == 0
    assert encoder.calls[0][3:6] == ([200, 300], [400], [64, 64])
    ck.launch((40, 30, 2), [_a_bf16(ADDRESS), _a_bf16(ADDRESS + 2**20), 0.5])
    grid, _, raw = rec.calls[-1]
    assert grid == (132, 1, 1) and [struct.unpack("<i", r[:4])[0] for r in raw[-3:]] == [40, 30, 2]


def test_warm_launches_do_not_encode_again(launched, encoder):
    ck, rec = launched
    args = [_a_bf16(ADDRESS), _a_bf16(ADDRESS + 2**20), 0.5]
    ck.launch((2, 2), args)
    assert len(encoder.calls) == 1
    for _ in range(3):
        assert ck._warm_values(args) is not None  # the warm path is the one taken
        ck.launch((2, 2), args)
    assert len(encoder.calls) == 1 and len({bytes(b"".join(c[2])) for c in rec.calls}) == 1
    ck.launch((2, 2), [_a_bf16(ADDRESS + 4096), args[1], 0.5])  # another array of the same layout: its own map
    assert len(encoder.calls) == 2 and rec.calls[-1][2][5] != rec.calls[0][2][5]
    err = expect("RUNTIME_TMA_INVALID", ck.launch, (2, 2), [_a_bf16(ADDRESS + 2), args[1], 0.5])
    assert "'A'" in err.message and len(rec.calls) == 5  # misaligned for TMA: refused, nothing launched


def test_launch_values_accepts_the_list_without_the_runtimes_slots(launched):
    ck, rec = launched
    short = [ADDRESS, 300, 200, 200, 1, ADDRESS + 2**20, 300, 200, 200, 1, 0.5]
    ck.launch_values((3, 1), short)
    full = ck.values([_a_bf16(ADDRESS), _a_bf16(ADDRESS + 2**20), 0.5])[0]
    ck.launch_values((3, 1), full)
    assert rec.calls[0][0] == rec.calls[1][0] == (3, 1, 1) and rec.calls[0][2] == rec.calls[1][2]
    assert ck.launch_grid((3, 1)) == ((3, 1, 1), (3, 1, 1))


def test_a_layout_tma_cannot_read_is_refused_before_launching(launched):
    ck, rec = launched
    odd = [DeviceArray((300, 100), ADDRESS), DeviceArray((300, 100), ADDRESS + 2**20), 0.5]
    err = expect("RUNTIME_TMA_INVALID", ck.launch, (2, 2), odd)
    assert "row pitch is 200 bytes" in err.message and rec.calls == []


def test_non_persistent_kernels_launch_the_grid_as_given(encoder, monkeypatch):
    ck = hopper_kernel(persistent=False)
    ck._loaded[(0, None)] = k = loaded_kernel(ck.signature, ck.name)
    ck.launch((300, 2), [_a_bf16(ADDRESS), _a_bf16(ADDRESS + 2**20), 0.5])
    assert k._launch_kernel.calls[0][0] == (300, 2, 1)


def test_the_host_emulator_encodes_maps_in_its_own_format_and_only_inside_emulation():
    """emulate_on_host swaps the driver encoder for the g++ emulator's 128-byte map, and back (cache emptied)."""
    import struct as _struct

    from tessera.runtime import tma as _tma

    with testing.emulate_on_host("sm_90"):
        m = _tma.encode(1 << 20, "bf16", (300, 200), (208, 1), (128, 64), 128, name="a")
        assert len(m) == 128 and _struct.unpack_from("<Qqqqiiii", m) == (1 << 20, 300, 200, 416, 128, 64, 128, 2)
    assert _tma._host_encoder is None and _tma.cache_info()["entries"] == 0
