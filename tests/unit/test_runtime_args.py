"""Launch-argument checks and device rules that need no GPU: bad input is refused before anything runs."""

import functools

import ml_dtypes
import numpy as np
import pytest

from tessera.target.nvidia.toolchain import compile_cuda
from tessera.runtime import RuntimeLaunchError, can_run, has_gpu, load, ptr, scalar, why_no_gpu
from tessera.runtime.args import ArgBinder, Param

VADD_SIG = (ptr("a", "f32", "n", "in"), ptr("b", "f32", "n", "in"), ptr("c", "f32", "n", "out"), scalar("n", "i32"))


class FakeDeviceArray:
    """Stands for a torch/cupy array: only the CUDA Array Interface, no memory behind it."""

    def __init__(self, shape, typestr="<f4", ptr=0x7F0000000000, strides=None, readonly=False):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, readonly),
                                         "strides": strides, "version": 3}


def binder():
    return ArgBinder(VADD_SIG, "vadd")


def code_and_message(args):
    with pytest.raises(RuntimeLaunchError) as err:
        binder().bind(args)
    return err.value.code.name, err.value.message


def test_device_arrays_bind_to_their_pointers_without_copies():
    a, b, c = FakeDeviceArray((8,), ptr=0x1000), FakeDeviceArray((8,), ptr=0x2000), FakeDeviceArray((2, 4), ptr=0x3000)
    bound = binder().bind((a, b, c, 8))
    assert bound.values == [0x1000, 0x2000, 0x3000, 8] and bound.host == []


def test_numpy_arrays_are_staged_and_only_outputs_copied_back():
    a = np.ones(8, np.float32)
    c = np.zeros(8, np.float32)
    bound = binder().bind((a, a[::-1], c, 8))  # a non-contiguous input is fine: it is copied anyway
    assert [(i, back) for i, _, back in bound.host] == [(0, False), (1, False), (2, True)]
    assert bound.host[2][1] is c  # the output is written back into the caller's array itself


def test_raw_pointers_are_trusted():
    assert binder().bind((1 << 40, 2 << 40, 3 << 40, 1000)).values == [1 << 40, 2 << 40, 3 << 40, 1000]


@pytest.mark.parametrize("args, needle", [
    ((FakeDeviceArray((8,)), FakeDeviceArray((8,)), FakeDeviceArray((7,)), 8), "'c' (f32* out) holds 7 elements"),
    ((np.ones(8, np.float32), np.ones(8, np.float32), np.zeros(4, np.float32), 8), "'c' (f32* out) holds 4"),
    ((FakeDeviceArray((8,), "<f8"), FakeDeviceArray((8,)), FakeDeviceArray((8,)), 8),
     "'a' (f32* in) has element type f64"),
    ((np.ones(8, np.float16), np.ones(8, np.float32), np.zeros(8, np.float32), 8), "'a' (f32* in) has element type f16"),
    ((FakeDeviceArray((8,)), FakeDeviceArray((4, 2), strides=(4, 16)), FakeDeviceArray((8,)), 8), "not C-contiguous"),
    ((FakeDeviceArray((8,)), FakeDeviceArray((8,)), FakeDeviceArray((8,), readonly=True), 8), "read-only"),
    ((FakeDeviceArray((8,), ptr=0x1002), FakeDeviceArray((8,)), FakeDeviceArray((8,)), 8), "not aligned"),
    ((1, 2, np.zeros(16, np.float32)[::2], 8), "'c' (f32* out) is not C-contiguous"),
    ((1, 2, 3, 2**31), "out of range"),
    ((1, 2, 3, 8.0), "must be an int"),
    ((1, 2, 3, True), "must be an int"),
    ((1, 2, -3, 8), "not a 64-bit address"),
    ((1, 2, "c", 8), "str is not a device array"),
    ((1, 2, 3), "takes 4 arguments (a, b, c, n), got 3"),
])
def test_bad_arguments_are_refused_naming_the_argument(args, needle):
    code, message = code_and_message(args)
    assert code == "RUNTIME_ARG_INVALID" and needle in message


def test_read_only_numpy_output_is_refused_and_untouched():
    c = np.zeros(8, np.float32)
    c.flags.writeable = False
    code, message = code_and_message((np.ones(8, np.float32), np.ones(8, np.float32), c, 8))
    assert "is read-only" in message and not c.any()


def test_extents_multiply_constants_and_scalars():
    sig = (ptr("a", "bf16", (16, "k")), scalar("k", "i32"), scalar("alpha", "f32"))
    b = ArgBinder(sig, "k")
    assert b.bind((np.zeros(64, ml_dtypes.bfloat16), 4, 1.5)).values[1:] == [4, 1.5]
    with pytest.raises(RuntimeLaunchError, match=r"needs at least 80 \(16 \* k\)"):
        b.bind((np.zeros(64, ml_dtypes.bfloat16), 5, 1.5))


@pytest.mark.parametrize("sig", [
    (Param("a", "ptr", "f33"),),
    (Param("a", "ptr", "f32", intent="sideways"),),
    (Param("n", "int"),),
    (scalar("n", "i32"), scalar("n", "i32")),
    (ptr("a", "f32", "m"), scalar("n", "i32")),
    (ptr("a", "f32", "x"), scalar("x", "f32")),
    ("not a param",),
])
def test_malformed_signatures_are_refused(sig):
    with pytest.raises(RuntimeLaunchError) as err:
        ArgBinder(sig, "k")
    assert err.value.code.name == "RUNTIME_ARG_INVALID"


@pytest.mark.parametrize("arch, cc, ok", [
    ("sm_90", (9, 0), True), ("sm_90a", (9, 0), True), ("sm_80", (8, 6), True), ("sm_86", (8, 0), False),
    ("sm_80", (9, 0), False), ("sm_90a", (10, 0), False), ("sm_100", (9, 0), False), ("sm_90", (10, 0), False),
])
def test_which_cubins_a_device_can_run(arch, cc, ok):
    assert can_run(arch, cc) is ok


@pytest.mark.skipif(has_gpu(), reason="checks the behaviour without a device")
def test_without_a_device_load_says_so():
    assert why_no_gpu()
    art = compile_cuda('extern "C" __global__ void k(float* x) {}', "sm_90")
    with pytest.raises(RuntimeLaunchError) as err:
        load(art, "k", (ptr("x", "f32"),))
    assert err.value.code.name == "RUNTIME_NO_DEVICE"


class FakeTorchTensor:
    """Stands for a torch CUDA tensor: the accessors the binder reads, nothing else."""

    def __init__(self, n, dtype="torch.bfloat16", itemsize=2, contiguous=True, cuda=True, device=0):
        self.n, self.dtype, self.itemsize, self.contiguous, self.is_cuda = n, dtype, itemsize, contiguous, cuda
        self.device = type("Device", (), {"index": device})()

    def data_ptr(self):
        return 0x5000

    def numel(self):
        return self.n

    def element_size(self):
        return self.itemsize

    def is_contiguous(self):
        return self.contiguous


class Buffer:
    """Named like cuda.core's Buffer: a handle and a byte size."""

    def __init__(self, handle, size):
        self.handle, self.size = handle, size


def test_torch_like_tensors_and_buffers():
    b = ArgBinder((ptr("a", "bf16", "n"), ptr("o", "f32", "n", "out"), scalar("n", "i32")), "k")
    assert b.bind((FakeTorchTensor(8), Buffer(0x9000, 32), 8)).values == [0x5000, 0x9000, 8]
    for args, needle in [((FakeTorchTensor(8, "torch.float16"), Buffer(0x9000, 32), 8), "has element type f16"),
                         ((FakeTorchTensor(8, contiguous=False), Buffer(0x9000, 32), 8), "not C-contiguous"),
                         ((FakeTorchTensor(8, device=1), Buffer(0x9000, 32), 8), "lives on device 1"),
                         ((FakeTorchTensor(8, cuda=False), Buffer(0x9000, 32), 8), "is not a device array"),
                         ((FakeTorchTensor(8), Buffer(0x9000, 28), 8), "'o' (f32* out) holds 7 elements")]:
        with pytest.raises(RuntimeLaunchError, match="RUNTIME_ARG_INVALID") as err:
            b.bind(args)
        assert needle in err.value.message


class RecordingLaunch:
    """Stands in for cuLaunchKernel: reads the parameter block the way the driver does (pointer array
    -> one value per parameter, of the parameter's size) and records what it saw."""

    def __init__(self, sizes_formats, result=None):
        from cuda.bindings import driver
        self.sizes_formats = sizes_formats
        self.result = result if result is not None else driver.CUresult.CUDA_SUCCESS
        self.calls = []

    def __call__(self, func, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        import ctypes
        import struct
        ptrs = (ctypes.c_void_p * len(self.sizes_formats)).from_address(params)
        values = tuple(struct.unpack(fmt, ctypes.string_at(ptrs[i], size))[0]
                       for i, (size, fmt) in enumerate(self.sizes_formats))
        self.calls.append(((gx, gy, gz), (bx, by, bz), smem, int(stream), values))
        return (self.result,)


@functools.lru_cache(maxsize=1)
def empty_artifact():
    return compile_cuda('extern "C" __global__ void k() {}', "sm_90")


def fake_loaded_kernel(sig, name="k"):
    from tessera.runtime.launch import LoadedKernel
    art = empty_artifact()
    kernel = type("FakeKernel", (), {"handle": 0x1234})()
    attrs = dict(num_regs=8, local_size_bytes=0, shared_size_bytes=0, max_threads_per_block=1024)
    return art, LoadedKernel(art, name, ArgBinder(sig, name), 0, None, kernel, attrs)


SIG5 = (ptr("x", "f32", "n"), scalar("n", "i32"), scalar("alpha", "f32"), scalar("m", "u64"), scalar("d", "f64"))
LAYOUT5 = [(8, "<Q"), (4, "<i"), (4, "<f"), (8, "<Q"), (8, "<d")]


def test_parameter_block_holds_each_value_where_the_driver_reads_it():
    art, k = fake_loaded_kernel(SIG5)
    k._launch_kernel = rec = RecordingLaunch(LAYOUT5)
    res = k.launch((3, 2), (32, 4), 1024, (0xDEADBEEF000, -5, 1.5, 2**63 + 7, 2.25))
    assert rec.calls == [((3, 2, 1), (32, 4, 1), 1024, 0, (0xDEADBEEF000, -5, 1.5, 2**63 + 7, 2.25))]
    assert (res.lane, res.artifact_hash, res.kernel, res.synchronized) == ("cuda", art.sha256, "k", False)
    # converted arguments (numpy scalars, an int for a float, a device array) land the same way
    k.launch(1, 32, 0, (FakeDeviceArray((4,), ptr=0x4000), np.int32(4), 3, np.uint64(9), np.float32(0.5)),
             stream=type("TorchLikeStream", (), {"cuda_stream": 77})())
    assert rec.calls[-1] == ((1, 1, 1), (32, 1, 1), 0, 77, (0x4000, 4, 3.0, 9, 0.5))


@pytest.mark.parametrize("args, needle", [
    ((1, 2**31, 1.0, 1, 1.0), "'n' (i32) value 2147483648 is out of range"),
    ((-1, 4, 1.0, 1, 1.0), "not a 64-bit address"),
    ((1, 4, 1.0, -1, 1.0), "'m' (u64) value -1 is out of range"),
    ((1, 4, "1.0", 1, 1.0), "'alpha' (f32) must be a number (f32), got str"),
    ((FakeDeviceArray((3,)), 4, 1.0, 1, 1.0), "'x' (f32* inout) holds 3 elements"),
    ((1, 4, 1e39, 1, 1.0), "'alpha' (f32) value 1e+39 overflows f32"),  # plain floats skip binding: was OverflowError
])
def test_bad_warm_arguments_launch_nothing(args, needle):
    _, k = fake_loaded_kernel(SIG5)
    k._launch_kernel = rec = RecordingLaunch(LAYOUT5)
    with pytest.raises(RuntimeLaunchError) as err:
        k.launch(1, 32, 0, args)
    assert err.value.code.name == "RUNTIME_ARG_INVALID" and needle in err.value.message
    assert rec.calls == []


def test_binder_applies_the_shared_scalar_rules():
    """`tessera.ir.argcheck.scalar_value`, as on the compiled and reference lanes: a finite float that rounds
    to inf in f32 is refused (C's float would hold inf); numpy scalars convert; inf itself passes."""
    binder = ArgBinder(SIG5, "k")
    with pytest.raises(RuntimeLaunchError) as err:
        binder.bind((1, 4, np.float64(1e39), 1, 1.0))
    assert "'alpha' (f32) value 1e+39 overflows f32" in err.value.message
    assert binder.bind((1, np.int64(4), np.float64(np.inf), 1, np.float32(2.0))).values == [1, 4, np.inf, 1, 2.0]


def test_launch_configuration_and_driver_refusals_are_coded():
    from cuda.bindings import driver
    _, k = fake_loaded_kernel(SIG5)
    k._launch_kernel = rec = RecordingLaunch(LAYOUT5)
    good = (1, 4, 1.0, 1, 1.0)
    for grid, block, smem in [(0, 32, 0), (1, 2048, 0), ((1, 70000), 32, 0), ("1", 32, 0), (1, 32, -1),
                              (1, (8, 8, 65), 0)]:
        with pytest.raises(RuntimeLaunchError) as err:
            k.launch(grid, block, smem, good)
        assert err.value.code.name == "RUNTIME_LAUNCH_FAILED"
    assert rec.calls == []
    k._launch_kernel = RecordingLaunch(LAYOUT5, driver.CUresult.CUDA_ERROR_INVALID_VALUE)
    with pytest.raises(RuntimeLaunchError, match="cuLaunchKernel failed with CUDA_ERROR_INVALID_VALUE"):
        k.launch(1, 32, 0, good)
    with pytest.raises(RuntimeLaunchError, match="is not a CUDA stream"):
        k.launch(1, 32, 0, good, stream="default")
