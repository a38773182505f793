"""Issue 13 on the CPU: a deadlock on the host emulator is a coded error wherever the launch comes from, and an
sm_90a CompiledKernel runs there with numpy arrays and with bf16 behind `__cuda_array_interface__`.

Before: `CompiledKernel.launch` inside `emulate_on_host` dropped the
emulator's deadlock verdict and returned garbage with no error; a hung
launch left the library's flag raised so every later launch of it skipped its
waits; a thread that missed a `__syncthreads` hung the process (std::barrier
never gives up); numpy operands of an sm_90a kernel failed with an uncoded
TypeError; and a bf16 array behind `__cuda_array_interface__` (typestr `<V2`)
was "element type unknown".
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import tessera
import tessera.runtime.host_emulator as EH
from _device_arrays import FakeDeviceArray
from _hopper_sweep import operands, specs
from tessera.compiler import testing
from tessera.ir import diagnostics as D
from tessera.kernels import gemm as G
from tessera.reference.oracles import error_bound, rel_error

BF16 = ml_dtypes.bfloat16


@pytest.fixture(autouse=True)
def _short_deadlock_limit(monkeypatch):
    monkeypatch.setattr(EH, "WAIT_LIMIT_S", 3)


def _gemm(stages: int = 2, dtype: str = "bf16"):
    return G.gemm.trace(*specs(dtype), BM=128, BN=128, BK=64, TRANS_B=True), dict(stages=stages)


_RELEASE = re.compile(r"if \(\(tid & 127\) == 0\) tsr_mbar_arrive\(")


def _drop_first_release(source: str) -> str:
    """The consumers' in-loop release of the previous step's slot, gone: the producer of a tile's later laps
    waits for an `empty` phase that never completes (one tile with a single K step still finishes)."""
    match = _RELEASE.search(source)
    assert match is not None
    return source[:match.start()] + "if (false) tsr_mbar_arrive(" + source[match.end():]


def _launch(ck, M, N, K, seed=0, wrap=lambda x: x):
    a, w, c, want = operands(M, N, K, BF16, seed)
    ck.launch(G.grid(M, N, BM=128, BN=128), [wrap(a), wrap(w), wrap(c), 1.0])
    return rel_error(c, want)


def test_a_deadlock_of_a_compiled_kernel_on_the_emulator_is_a_coded_error_and_the_next_launch_is_clean():
    traced, opts = _gemm()
    with testing.emulate_on_host("sm_90"), testing.inject_faults(source=_drop_first_release):
        ck = tessera.compile(traced, "sm_90a", **opts)
        assert _launch(ck, 128, 128, 64) <= error_bound("bf16")  # one K step: no release needed
        with pytest.raises(D.TesseraError) as err:
            _launch(ck, 128, 128, 64 * 8)
        assert err.value.code is D.RUNTIME_LAUNCH_TIMEOUT and "deadlocked on the host emulator" in str(err.value)
        assert _launch(ck, 128, 128, 64, seed=1) <= error_bound("bf16")  # the hung flag does not outlive its launch


def test_run_on_host_reports_the_same_deadlock():
    from tessera.target.nvidia.emit.cuda import emit_cuda
    from tessera.compiler.driver import default_pipeline, lower

    traced, opts = _gemm()
    module, _ = lower(traced, default_pipeline("sm_90a", **opts), "sm_90a")
    em = emit_cuda(module)
    from dataclasses import replace
    em = replace(em, source=_drop_first_release(em.source))
    a, w, c, _ = operands(128, 128, 512, BF16, 0)
    with pytest.raises(D.TesseraError) as err:
        EH.run_on_host(em, [a, w, c, 1.0], G.grid(128, 128, BM=128, BN=128))
    assert err.value.code is D.RUNTIME_LAUNCH_TIMEOUT


def test_a_thread_that_misses_a_cta_barrier_is_a_deadlock_not_a_hung_process():
    """sm_90 mma.sync GEMM (no mbarriers): thread 0 skips its first __syncthreads, so the CTA's last barrier
    waits for an arrival that never comes."""
    traced = G.gemm.trace(*specs("bf16"), BM=64, BN=64, BK=32, TRANS_B=True)

    def skip(source: str) -> str:
        assert "__syncthreads();" in source
        return source.replace("__syncthreads();", "if (threadIdx.x != 0) __syncthreads();", 1)

    with testing.emulate_on_host("sm_90"), testing.inject_faults(source=skip):
        ck = tessera.compile(traced, "sm_90", stages=1)
        a, w, c, _ = operands(64, 64, 64, BF16, 0)
        with pytest.raises(D.TesseraError) as err:
            ck.launch(G.grid(64, 64, BM=64, BN=64), [a, w, c, 1.0])
    assert err.value.code is D.RUNTIME_LAUNCH_TIMEOUT


@pytest.mark.parametrize("stages", [None, 2])
def test_sm90a_compiled_kernel_takes_numpy_arrays_on_the_emulator(stages):
    """No stages: tessera.compile's default (1), K-loops of 1 and 3 steps, 4 tiles over 3 CTAs."""
    traced, _ = _gemm(stages)
    with testing.emulate_on_host("sm_90"):
        ck = tessera.compile(traced, "sm_90a", **({} if stages is None else {"stages": stages}))
        for K in (64, 136):
            assert _launch(ck, 256, 200, K, seed=K) <= error_bound("bf16")


def test_sm90a_compiled_kernel_takes_bf16_behind_the_cuda_array_interface():
    traced, opts = _gemm()
    with testing.emulate_on_host("sm_90"):
        ck = tessera.compile(traced, "sm_90a", **opts)
        assert _launch(ck, 200, 136, 136, wrap=FakeDeviceArray) <= error_bound("bf16")


def test_a_two_byte_void_that_names_another_type_is_refused():
    """`<V2` is bf16 only when nothing says otherwise: a descr naming another type keeps it unknown."""
    from tessera.compiler import arrays

    a = np.zeros((4, 4), BF16)
    plain = FakeDeviceArray(a)
    assert arrays.view(plain).dtype == "bf16"
    other = FakeDeviceArray(a)
    other.__cuda_array_interface__ = {**other.__cuda_array_interface__, "descr": [("myhalf", "<V2")]}
    assert arrays.view(other).dtype is None
    assert arrays.view(FakeDeviceArray(a.astype(np.float16))).dtype == "f16"
