"""tessera.ops and tessera.compile on the GPU: array kinds, strict argument checks, and injected faults.

Every fault here -- a compile error in the emitted source, a corrupted cubin
(caught by its hash, or with a forged hash by the driver), a cubin for an
arch the device cannot run, a too-small output -- must end in a coded
error, with the output untouched and no run record; never in a result that
claims to be fine. Loading damaged cubins runs in a child interpreter so a
driver crash cannot take the test process down.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tessera
import tessera.ops as ops
from tessera.compiler import compile, testing
from tessera.ir.diagnostics import TesseraError
from tessera.kernels import gemm as G
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime import CompileCache, device_info

torch = pytest.importorskip("torch")
T = tessera.tensor
SRC = Path(__file__).resolve().parents[2] / "src"


def expect(code: str, fn, *args, **kwargs) -> TesseraError:
    """fn(...) raises `code`; a failed tessera.ops call also leaves no run record."""
    with pytest.raises(TesseraError) as err:
        fn(*args, **kwargs)
    assert err.value.code.name == code, str(err.value)
    if getattr(fn, "__module__", "").startswith("tessera.ops"):
        assert ops.last_run() is None
    return err.value


def operands(M=96, N=80, K=64, dtype=torch.bfloat16, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(M, K, device="cuda", generator=g).to(dtype),
            torch.randn(K, N, device="cuda", generator=g).to(dtype))


def want_of(a, b):
    return a.double() @ b.double()


def rel(got, want) -> float:
    torch.cuda.synchronize()
    return rel_error(got.double().cpu().numpy(), want.cpu().numpy())


# --- array kinds -------------------------------------------------------------------------------------

def test_torch_arrays_are_used_in_place_and_results_name_the_artifact():
    a, b = operands()
    out = torch.full((96, 80), float("nan"), device="cuda", dtype=torch.bfloat16)
    where = out.data_ptr()
    assert ops.gemm(a, b, out=out) is out and out.data_ptr() == where
    assert rel(out, want_of(a, b)) <= error_bound("bf16")
    rec = ops.last_run()
    d = ops.gemm(a, b)  # allocated like a: a bf16 CUDA tensor
    assert d.is_cuda and d.dtype == torch.bfloat16 and ops.last_run().artifact_hash == rec.artifact_hash
    info = device_info()  # a bf16 product TMA can read takes the arch-specific (sm_90a) kernel on Hopper
    assert rec.lane == "cuda" and rec.arch == (info.arch_specific if info.arch == "sm_90" else info.arch)


def test_cupy_arrays_through_the_cuda_array_interface():
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((70, 50)).astype(np.float16), rng.standard_normal((50, 30)).astype(np.float16)
    d = ops.gemm(cp.asarray(a), cp.asarray(b), out_dtype="f32")
    assert isinstance(d, cp.ndarray) and d.dtype == np.float32
    assert rel_error(cp.asnumpy(d), a.astype(np.float64) @ b.astype(np.float64)) <= error_bound("f16")
    assert ops.last_run().lane == "cuda"


def test_an_unaligned_view_takes_the_elementwise_path_and_is_right():
    """One element past a 256-byte allocation boundary: 2-byte aligned, not 16 -- slower, still correct."""
    a_full, b = operands(M=64, N=48, K=65)
    flat = torch.empty(64 * 65 + 1, device="cuda", dtype=torch.bfloat16)
    a = flat[1:].view(64, 65)
    a.copy_(a_full)
    assert a.data_ptr() % 16 and a.is_contiguous()
    d = ops.gemm(a, b, out_dtype="f32")
    assert rel(d, want_of(a, b)) <= error_bound("bf16")


def test_a_side_stream_is_used():
    a, b = operands()
    out = torch.zeros(96, 80, device="cuda", dtype=torch.float32)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())  # a and b were made on the default stream
    with torch.cuda.stream(side):
        ops.gemm(a, b, out=out, stream=side)
    side.synchronize()
    assert rel(out, want_of(a, b)) <= error_bound("bf16")


@pytest.mark.parametrize("case", ["cpu_tensor", "mixed", "layout", "alignment", "dtype", "gqa", "too_small_out"])
def test_bad_arguments_are_coded_and_nothing_is_written(case):
    a, b = operands()
    out = torch.full((96, 80), 7.0, device="cuda")
    if case == "cpu_tensor":
        err = expect("OPS_ARG_DEVICE", ops.gemm, a.cpu(), b.cpu(), out=out)
    elif case == "mixed":
        err = expect("OPS_ARG_DEVICE", ops.gemm, a, b.float().cpu().numpy().astype(ml_dtypes.bfloat16), out=out)
    elif case == "layout":
        err = expect("OPS_ARG_LAYOUT", ops.gemm, a.t().contiguous().t(), b, out=out)
    elif case == "alignment":
        raw = torch.empty(96 * 64 + 8, device="cuda", dtype=torch.float16)
        odd = DevicePointer(raw.data_ptr() + 1, (96, 64), "<f2")  # f16 elements at an odd address
        err = expect("OPS_ARG_ALIGNMENT", ops.gemm, odd, b.half(), out=out)
    elif case == "dtype":
        err = expect("OPS_ARG_DTYPE", ops.gemm, a, b.half(), out=out)
    elif case == "gqa":
        q, kv = torch.zeros(1, 6, 8, 64, device="cuda", dtype=torch.bfloat16), \
            torch.zeros(1, 4, 8, 64, device="cuda", dtype=torch.bfloat16)
        o = torch.full((1, 6, 8, 64), 7.0, device="cuda", dtype=torch.bfloat16)
        err = expect("OPS_GQA_HEADS", ops.attention, q, kv, kv, out=o)
        assert bool((o == 7).all())
    else:
        small = torch.full((95, 80), 7.0, device="cuda")
        err = expect("OPS_ARG_SHAPE", ops.gemm, a, b, out=small)
        assert bool((small == 7).all())
    torch.cuda.synchronize()
    assert bool((out == 7).all()) and err.message.startswith("tessera.ops.")


class DevicePointer:
    """A bare __cuda_array_interface__ over device memory (what numba or a C extension hands over)."""

    def __init__(self, address: int, shape: tuple, typestr: str):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (address, False),
                                         "version": 3, "strides": None}


# --- the compile driver on the device ----------------------------------------------------------------

def _gemm_tk(BM=64, BN=64):
    return G.gemm.trace(T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "f32"), None, None,
                        tessera.scalar("f32"), None, BM=BM, BN=BN)


def test_compiled_kernel_launch_and_determinism():
    first = compile(_gemm_tk(), cache=CompileCache(disk=False))
    second = compile(_gemm_tk(), cache=CompileCache(disk=False))
    assert first.arch == device_info().arch and first.source == second.source and first.cubin == second.cubin
    a, b = operands(M=100, N=70, K=53)
    c = torch.full((100, 70), float("nan"), device="cuda")
    res = first.launch(G.grid(100, 70, BM=64, BN=64), [a, b, c, 1.0])
    assert (res.lane, res.artifact_hash, res.kernel) == ("cuda", first.artifact_hash, "gemm")
    assert rel(c, want_of(a, b)) <= error_bound("bf16")
    loaded = first.loaded()
    assert loaded.num_regs > 0 and loaded.local_size_bytes == 0  # no spills (DESIGN section 4)
    small = torch.full((99, 70), 7.0, device="cuda")  # too small for A's M rows
    err = expect("RUNTIME_ARG_INVALID", first.launch, (2, 2), [a, b, small, 1.0])
    assert "'M'" in err.message and bool((small == 7).all())


def _flip(art):
    cubin = bytearray(art.cubin)
    cubin[len(cubin) // 2] ^= 0xFF
    return replace(art, cubin=bytes(cubin))


@pytest.mark.parametrize("fault, code", [
    ({"source": lambda s: s.replace("const int lane = tid & 31;", "const int lane = tid &;")},
     "CODEGEN_COMPILE_FAILED"),
    ({"artifact": _flip}, "RUNTIME_LOAD_FAILED"),
    ({"arch": "sm_80"}, "RUNTIME_LOAD_FAILED"),
])
def test_injected_faults_through_ops_end_in_coded_errors(fault, code):
    # K = 60: A's 120-byte rows are no TMA pitch, so the portable mma.sync kernel runs on any device, the one
    # whose source the first fault edits (the sm_90a kernel's faults: test_hopper_gemm_gpu, test_launch_timeout_gpu)
    a, b = operands(K=60)
    out = torch.full((96, 80), 7.0, device="cuda")
    ops.gemm(a, b, out=out)  # a good call first: its cached plan must not hide the fault
    out.fill_(7.0)
    with testing.inject_faults(**fault):
        expect(code, ops.gemm, a, b, out=out)
    torch.cuda.synchronize()
    assert bool((out == 7).all())
    ops.gemm(a, b, out=out)  # after the block the good kernel is back
    assert rel(out, want_of(a, b)) <= error_bound("bf16") and ops.last_run().lane == "cuda"


def test_a_cubin_for_another_arch_is_refused_at_the_compile_level():
    ck = compile(_gemm_tk(), arch="sm_80", cache=CompileCache(disk=False))
    a, b = operands()
    out = torch.full((96, 80), 7.0, device="cuda")
    err = expect("RUNTIME_LOAD_FAILED", ck.launch, (2, 2), [a, b, out, 1.0])
    assert "sm_80" in err.message and bool((out == 7).all())


def test_damaged_cubins_with_forged_hashes_are_refused_by_the_driver():
    script = r"""
import hashlib
from dataclasses import replace
import torch
import tessera, tessera.ops as ops
from tessera.compiler import testing
from tessera.ir.diagnostics import TesseraError

def forge(kind):
    def damage(art):
        cubin = bytearray(art.cubin)
        if kind == "elf_magic":
            cubin[1:4] = b"XYZ"
        elif kind == "zeros":
            cubin = bytearray(len(cubin))
        else:
            cubin = cubin[: len(cubin) // 3]
        cubin = bytes(cubin)
        return replace(art, cubin=cubin, sha256=hashlib.sha256(cubin).hexdigest())
    return damage

a = torch.randn(64, 64, device="cuda").bfloat16()
out = torch.full((64, 64), 7.0, device="cuda")
for kind in ("elf_magic", "zeros", "truncated"):
    try:
        with testing.inject_faults(artifact=forge(kind)):
            ops.gemm(a, a, out=out)
        print("RAN", kind, ops.last_run())
    except TesseraError as e:
        print("CODE", kind, e.code.name, ops.last_run(), bool((out == 7).all()))
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), *sys.path]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240, env=env)
    text = proc.stdout + proc.stderr
    for kind in ("elf_magic", "zeros", "truncated"):
        assert f"CODE {kind} RUNTIME_LOAD_FAILED None True" in text, text
    assert "RAN" not in text and proc.returncode == 0, text
