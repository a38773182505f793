"""Loading and device queries through the driver API (no cuda.core on the launch path: its import cost a warm
process 60-140 ms of a first call), checked against a fake driver: the calls made, the values read, and a
coded error naming the failing call."""

from __future__ import annotations

import hashlib

import pytest
from cuda.bindings import driver

from tessera.ir.diagnostics import TesseraError
from tessera.runtime import device as device_module
from tessera.runtime import launch as launch_module
from tessera.runtime.args import ptr, scalar
from tessera.target.nvidia.toolchain.nvrtc import CompiledArtifact, compile_cuda

OK = driver.CUresult.CUDA_SUCCESS
SIG = (ptr("x", "f32"), scalar("n", "i32"))
SOURCE = 'extern "C" __global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 1.0f; }\n'


class FakeDriver:
    """Records the driver calls; `fail` names one call that returns CUDA_ERROR_INVALID_IMAGE."""

    def __init__(self, monkeypatch, param_sizes=(8, 4), fail=None, current=0x77):
        self.calls, self.fail, self.current = [], fail, current
        attr = driver.CUfunction_attribute
        values = {attr.CU_FUNC_ATTRIBUTE_NUM_REGS: 40, attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: 0,
                  attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: 16, attr.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024}
        dattr = driver.CUdevice_attribute
        device_values = {dattr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
                         dattr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
                         dattr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132}

        def call(name, *result):
            def fn(*args):
                self.calls.append((name, args))
                if name == self.fail:
                    return (driver.CUresult.CUDA_ERROR_INVALID_IMAGE,) + (None,) * (len(result) - 1)
                return result(*args) if callable(result) else result
            return fn

        def param_info(kernel, i):
            self.calls.append(("cuKernelGetParamInfo", (kernel, i)))
            if i >= len(param_sizes):
                return driver.CUresult.CUDA_ERROR_INVALID_VALUE, 0, 0
            return OK, 8 * i, param_sizes[i]

        fakes = {
            "cuLibraryLoadData": call("cuLibraryLoadData", OK, "LIB"),
            "cuLibraryGetKernel": call("cuLibraryGetKernel", OK, 0xBEEF),
            "cuKernelGetAttribute": lambda a, k, d: (self.calls.append(("cuKernelGetAttribute", (a, k, d))) or
                                                     (OK, values[a])),
            "cuKernelGetParamInfo": param_info,
            "cuDeviceGet": call("cuDeviceGet", OK, 5),
            "cuDevicePrimaryCtxRetain": call("cuDevicePrimaryCtxRetain", OK, 0x99),
            "cuCtxGetCurrent": lambda: (self.calls.append(("cuCtxGetCurrent", ())) or (OK, self.current)),
            "cuCtxSetCurrent": call("cuCtxSetCurrent", OK),
            "cuDeviceGetAttribute": lambda a, d: (OK, device_values[a]),
            "cuDeviceGetName": call("cuDeviceGetName", OK, b"NVIDIA H200\0\0\0"),
            "cuDeviceTotalMem": call("cuDeviceTotalMem", OK, 141 << 30),
        }
        for name, fn in fakes.items():
            monkeypatch.setattr(driver, name, fn)
        monkeypatch.setattr(device_module, "_probe", lambda: (1, ""))
        monkeypatch.setattr(launch_module, "_loaded", {})
        for cached in (device_module.primary_context, device_module.device_info):
            cached.cache_clear()

    def names(self):
        return [name for name, _ in self.calls]


@pytest.fixture
def art():
    return compile_cuda(SOURCE, "sm_90")  # a real cubin: load checks its ELF header first


@pytest.fixture(autouse=True)
def _fresh_device_caches():
    yield
    for cached in (device_module.primary_context, device_module.device_info):
        cached.cache_clear()


def test_device_info_and_the_primary_context_come_from_the_driver(monkeypatch):
    fake = FakeDriver(monkeypatch)
    info = device_module.device_info(0)
    assert (info.name, info.compute_capability, info.arch, info.arch_specific, info.sm_count, info.total_memory) == \
        ("NVIDIA H200", (9, 0), "sm_90", "sm_90a", 132, 141 << 30)
    assert fake.names().count("cuDevicePrimaryCtxRetain") == 1 and ("cuCtxSetCurrent", (0x99,)) in fake.calls
    fake.current = 0x99  # already current: no second set
    before = fake.names().count("cuCtxSetCurrent")
    device_module.ensure_current(0)
    assert fake.names().count("cuCtxSetCurrent") == before


def test_load_reads_the_kernel_and_its_attributes_through_the_library_api(monkeypatch, art):
    fake = FakeDriver(monkeypatch)
    k = launch_module.load(art, "k", SIG, device=0)
    assert ("cuLibraryLoadData", (art.cubin, None, None, 0, None, None, 0)) in fake.calls
    assert ("cuLibraryGetKernel", ("LIB", b"k")) in fake.calls
    assert (k.num_regs, k.shared_size_bytes, k.max_threads_per_block) == (40, 16, 1024)
    assert k._kernel.library == "LIB" and int(k._func) == 0xBEEF
    assert launch_module.load(art, "k", SIG, device=0) is k  # memoised: loaded once


def test_a_name_expression_is_looked_up_by_its_mangled_name(monkeypatch, art):
    fake = FakeDriver(monkeypatch)
    mapped = CompiledArtifact(**{**art.__dict__, "symbol_mapping": (("k", "_Z1kPfi"),)})
    launch_module.load(mapped, "k", SIG, device=0)
    assert ("cuLibraryGetKernel", ("LIB", b"_Z1kPfi")) in fake.calls


@pytest.mark.parametrize("call", ["cuLibraryLoadData", "cuLibraryGetKernel", "cuDeviceGet"])
def test_a_failing_driver_call_is_a_coded_load_error_naming_it(monkeypatch, art, call):
    FakeDriver(monkeypatch, fail=call)
    with pytest.raises(TesseraError, match=f"RUNTIME_(LOAD_FAILED|NO_DEVICE).*{call}"):
        launch_module.load(art, "k", SIG, device=0)


def test_parameter_sizes_that_disagree_with_the_signature_refuse_the_load(monkeypatch, art):
    FakeDriver(monkeypatch, param_sizes=(8, 8, 4))
    with pytest.raises(TesseraError, match="RUNTIME_LOAD_FAILED.*3 parameters of sizes \\[8, 8, 4\\]"):
        launch_module.load(art, "k", SIG, device=0)


def test_a_corrupt_cubin_is_refused_before_the_driver_sees_it(monkeypatch, art):
    fake = FakeDriver(monkeypatch)
    bad = b"\x7fELF" + art.cubin[4:40]
    broken = CompiledArtifact(cubin=bad, arch=art.arch, sha256=hashlib.sha256(bad).hexdigest())
    with pytest.raises(TesseraError, match="RUNTIME_LOAD_FAILED"):
        launch_module.load(broken, "k", SIG, device=0)
    assert "cuLibraryLoadData" not in fake.names()
