"""The runtime on a real GPU: right answers through every argument path, coded failures, warm-launch cost.

Every fault injected here must end in a coded error, never in a LaunchResult.
Faults that could take the process (or its CUDA context) down run in a child
interpreter. Figures (launch overhead, memory) go to $TESSERA_FIGURES as JSON
when it is set, and to stdout.
"""

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from cuda_samples import DYNAMIC_SMEM, MMA, TINY, VECADD  # noqa: E402

from tessera.target.nvidia.toolchain import CodegenError, compile_cuda  # noqa: E402
from tessera.runtime import RuntimeLaunchError, can_run, device_info, load, mem_info, ptr, scalar  # noqa: E402

VADD_SIG = (ptr("a", "f32", "n", "in"), ptr("b", "f32", "n", "in"), ptr("c", "f32", "n", "out"), scalar("n", "i32"))
MMA_SIG = (ptr("A", "bf16", 256, "in"), ptr("B", "bf16", 128, "in"), ptr("C", "f32", 128, "in"),
           ptr("D", "f32", 128, "out"))
TINY_SIG = (ptr("x", "f32", "n"), scalar("n", "i32"))
WARM_LAUNCHES = 10_000


@pytest.fixture(scope="module")
def info():
    return device_info(0)


@pytest.fixture(scope="module")
def vadd_art(info):
    return compile_cuda(VECADD, info.arch)


@pytest.fixture(scope="module")
def vadd(vadd_art):
    return load(vadd_art, "vadd", VADD_SIG)


def blocks(n, per_block=256):
    return (n + per_block - 1) // per_block


def expect(code, fn, *args, **kwargs):
    with pytest.raises((RuntimeLaunchError, CodegenError)) as err:
        fn(*args, **kwargs)
    assert err.value.code.name == code, str(err.value)
    return err.value


def run_child(script: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), *sys.path]))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240, env=env)
    return out.stdout + out.stderr + f"\nEXIT {out.returncode}"


def test_device_is_described(info):
    major, minor = info.compute_capability
    assert info.arch == f"sm_{major}{minor}" and info.sm_count > 0 and info.total_memory > 0
    if (major, minor) == (9, 0):
        assert info.arch_specific == "sm_90a"


def test_vecadd_numpy_arrays_are_copied_in_and_out(vadd, vadd_art):
    n = 1000
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    c = np.full(n, np.nan, np.float32)
    a_before = a.copy()
    res = vadd.launch(blocks(n), 256, 0, (a, b, c, n))
    np.testing.assert_array_equal(c, a + b)
    np.testing.assert_array_equal(a, a_before)
    assert (res.lane, res.artifact_hash, res.kernel, res.arch, res.synchronized) == \
        ("cuda", vadd_art.sha256, "vadd", vadd_art.arch, True)


def test_vecadd_torch_tensors_are_used_in_place(vadd):
    torch = pytest.importorskip("torch")
    n = 4097
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.full((n,), float("nan"), device="cuda")
    where = c.data_ptr()
    res = vadd.launch(blocks(n), 256, 0, (a, b, c, n), stream=torch.cuda.current_stream(), sync=True)
    assert res.synchronized and c.data_ptr() == where
    assert torch.equal(c, a + b)
    c.zero_()
    res = vadd.launch(blocks(n), 256, 0, (a, b, c, n))  # asynchronous on the legacy stream torch also uses
    assert not res.synchronized
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


def test_vecadd_cupy_arrays_are_used_in_place(vadd):
    cp = pytest.importorskip("cupy")
    n = 3000
    a, b, c = cp.arange(n, dtype=cp.float32), cp.ones(n, dtype=cp.float32), cp.zeros(n, dtype=cp.float32)
    vadd.launch(blocks(n), 256, 0, (a, b, c, n), sync=True)
    np.testing.assert_array_equal(cp.asnumpy(c), np.arange(n, dtype=np.float32) + 1)


@pytest.mark.parametrize("mode", ["numpy", "torch"])
def test_mma_sync_16x8x16_matches_numpy(info, mode):
    kernel = load(compile_cuda(MMA, info.arch), "mma_16x8x16", MMA_SIG)
    rng = np.random.default_rng(1)
    A = rng.standard_normal((16, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((16, 8)).astype(ml_dtypes.bfloat16)
    C = rng.standard_normal((16, 8)).astype(np.float32)  # a non-zero accumulator: C must really be read
    want = A.astype(np.float64) @ B.astype(np.float64) + C
    if mode == "numpy":
        D = np.zeros((16, 8), np.float32)
        kernel.launch(1, 32, 0, (A, B, C, D))
    else:
        torch = pytest.importorskip("torch")
        dev = lambda x: torch.from_numpy(np.ascontiguousarray(x)).cuda()  # noqa: E731
        tA, tB = dev(A.view(np.int16)).view(torch.bfloat16), dev(B.view(np.int16)).view(torch.bfloat16)
        tD = torch.zeros((16, 8), device="cuda")
        kernel.launch(1, 32, 0, (tA, tB, dev(C), tD), sync=True)
        D = tD.cpu().numpy()
        expect("RUNTIME_ARG_INVALID", kernel.launch, 1, 32, 0, (tA.half(), tB, dev(C), tD))  # f16 where bf16 is due
    np.testing.assert_allclose(D, want, rtol=1e-5, atol=1e-4)
    assert not np.allclose(D, want - C, atol=1e-2)


def test_arch_specific_cubin_runs(info):
    if info.arch_specific is None:
        pytest.skip(f"{info.arch} has no arch-specific variant")
    kernel = load(compile_cuda(VECADD, info.arch_specific), "vadd", VADD_SIG)
    a = np.arange(64, dtype=np.float32)
    c = np.zeros(64, np.float32)
    assert kernel.launch(1, 64, 0, (a, a, c, 64)).arch == info.arch_specific
    np.testing.assert_array_equal(c, 2 * a)


def test_dynamic_shared_memory_above_48k(info):
    kernel = load(compile_cuda(DYNAMIC_SMEM, info.arch), "smem_count", (ptr("out", "f32", 1), scalar("nfloats", "i32")))
    out = np.zeros(1, np.float32)
    nbytes = 100 * 1024
    kernel.launch(1, 256, nbytes, (out, nbytes // 4))
    assert out[0] == nbytes // 4
    expect("RUNTIME_LAUNCH_FAILED", kernel.launch, 1, 256, 400 * 1024, (out, 1))


# --- fault injection: each ends in a coded error ------------------------------------------------

def test_compile_error_is_coded(info):
    expect("CODEGEN_COMPILE_FAILED", compile_cuda, 'extern "C" __global__ void k(float* x) { x[0] = ; }', info.arch)


def test_flipped_cubin_bytes_are_never_loaded(vadd_art):
    cubin = bytearray(vadd_art.cubin)
    cubin[len(cubin) // 2] ^= 0xFF
    err = expect("RUNTIME_LOAD_FAILED", load, replace(vadd_art, cubin=bytes(cubin)), "vadd", VADD_SIG)
    assert "sha256" in err.message


def test_driver_rejects_damaged_cubins_whose_hash_was_forged(vadd_art, tmp_path):
    """With the hash recomputed, the driver is the last line: it must refuse, and we must say so."""
    path = tmp_path / "good.cubin"
    path.write_bytes(vadd_art.cubin)
    script = f"""
import hashlib
from dataclasses import replace
from tessera.target.nvidia.toolchain import compile_cuda
from tessera.runtime import RuntimeLaunchError, load, ptr, scalar
from cuda_samples import VECADD
sig = (ptr("a", "f32"), ptr("b", "f32"), ptr("c", "f32"), scalar("n", "i32"))
good = compile_cuda(VECADD, {vadd_art.arch!r})
assert good.cubin == open({str(path)!r}, "rb").read()
for name in ("elf_magic", "zeros", "truncated"):
    cubin = bytearray(good.cubin)
    if name == "elf_magic":
        cubin[1:4] = b"XYZ"
    elif name == "zeros":
        cubin = bytearray(len(cubin))
    else:
        cubin = cubin[: len(cubin) // 3]
    cubin = bytes(cubin)
    forged = replace(good, cubin=cubin, sha256=hashlib.sha256(cubin).hexdigest())
    try:
        print("LOADED", name, load(forged, "vadd", sig))
    except RuntimeLaunchError as e:
        print("CODE", name, e.code.name, e.message.splitlines()[0][:160])
"""
    out = run_child(script)
    for name in ("elf_magic", "zeros", "truncated"):
        assert f"CODE {name} RUNTIME_LOAD_FAILED" in out, out
    assert "LOADED" not in out and "EXIT 0" in out, out


def test_cubin_for_an_arch_the_device_cannot_run_is_refused(info):
    for arch in ("sm_100", "sm_80"):
        if can_run(arch, info.compute_capability):
            continue
        art = compile_cuda(VECADD, arch)
        err = expect("RUNTIME_LOAD_FAILED", load, art, "vadd", VADD_SIG)
        assert "cannot run it" in err.message
        # Labelled as if it were for this device, the driver itself must refuse it.
        err = expect("RUNTIME_LOAD_FAILED", load, replace(art, arch=info.arch), "vadd", VADD_SIG)
        assert "driver could not load" in err.message


def test_too_small_output_is_refused_before_anything_is_written(vadd):
    torch = pytest.importorskip("torch")
    n = 1024
    a = torch.ones(n, device="cuda")
    c = torch.full((n - 1,), 7.0, device="cuda")
    err = expect("RUNTIME_ARG_INVALID", vadd.launch, blocks(n), 256, 0, (a, a, c, n))
    assert "'c'" in err.message and "1023 elements" in err.message
    torch.cuda.synchronize()
    assert bool((c == 7).all())
    c_host = np.full(n - 1, 7, np.float32)
    expect("RUNTIME_ARG_INVALID", vadd.launch, blocks(n), 256, 0, (np.ones(n, np.float32), np.ones(n, np.float32),
                                                                     c_host, n))
    assert (c_host == 7).all()


def test_bad_launch_configuration_is_coded(vadd):
    a = np.ones(4, np.float32)
    for grid, block in [(1, 2048), (0, 32), ((1, 70000), 32), (1, (32, 32, 2)), ("1", 32)]:
        expect("RUNTIME_LAUNCH_FAILED", vadd.launch, grid, block, 0, (a, a, a.copy(), 4))
    # Past our checks, the driver's own refusal is coded too (a block the driver cannot run).
    err = expect("RUNTIME_LAUNCH_FAILED", vadd._enqueue, (1, 1, 1, 4096, 1, 1, 0), [0, 0, 0, 0], None)
    assert "cuLaunchKernel failed" in err.message


def test_signature_that_does_not_match_the_kernel_is_refused(vadd_art):
    three = (ptr("a", "f32"), ptr("b", "f32"), ptr("c", "f32"))
    err = expect("RUNTIME_LOAD_FAILED", load, vadd_art, "vadd", three)
    assert "takes 4 parameters of sizes [8, 8, 8, 4]" in err.message
    expect("RUNTIME_LOAD_FAILED", load, vadd_art, "vadd", three + (scalar("n", "i64"),))
    expect("RUNTIME_LOAD_FAILED", load, vadd_art, "no_such_kernel", VADD_SIG)


def test_execution_fault_is_coded_not_ok(info):
    script = f"""
import numpy as np
from tessera.target.nvidia.toolchain import compile_cuda
from tessera.runtime import RuntimeLaunchError, load, ptr
from cuda_samples import FAULT
kernel = load(compile_cuda(FAULT, {info.arch!r}), "fault", (ptr("x", "f32", 1, "in"),))
try:
    print("RESULT", kernel.launch(1, 32, 0, (np.ones(1, np.float32),)))
except RuntimeLaunchError as e:
    print("CODE", e.code.name, e.message)
"""
    out = run_child(script)
    assert "CODE RUNTIME_LAUNCH_FAILED" in out and "ILLEGAL_ADDRESS" in out, out
    assert "RESULT" not in out, out


# --- warm launches: flat memory, host cost next to bare cuda.core -------------------------------

def _per_launch_us(fn, count):
    from cuda.bindings import driver
    driver.cuCtxSynchronize()
    start = time.perf_counter()
    fn(count)
    elapsed = time.perf_counter() - start
    driver.cuCtxSynchronize()
    return elapsed / count * 1e6


def test_warm_launches_keep_memory_flat_and_cost_little(info):
    from cuda.bindings import driver
    from cuda.core import LEGACY_DEFAULT_STREAM, LaunchConfig, ObjectCode
    from cuda.core import launch as core_launch

    art = compile_cuda(TINY, info.arch)
    kernel = load(art, "tiny", TINY_SIG)
    n = 32
    err, dptr = driver.cuMemAlloc(n * 4)
    assert err == driver.CUresult.CUDA_SUCCESS
    driver.cuMemsetD32(dptr, 0, n)
    x = int(dptr)
    bare_kernel = ObjectCode.from_cubin(art.cubin).get_kernel("tiny")
    config, n32 = LaunchConfig(grid=1, block=32), np.int32(n)

    def ours(count):
        for _ in range(count):
            kernel.launch(1, 32, 0, (x, n))

    def bare(count):
        for _ in range(count):
            core_launch(LEGACY_DEFAULT_STREAM, config, bare_kernel, x, n32)

    ours(1000)
    bare(1000)
    free_before, total = mem_info()
    times = {"tessera": [], "bare_cuda_core": []}
    for _ in range(3):
        times["tessera"].append(_per_launch_us(ours, WARM_LAUNCHES))
        times["bare_cuda_core"].append(_per_launch_us(bare, WARM_LAUNCHES))
    free_after, _ = mem_info()
    host = np.empty(n, np.float32)
    driver.cuMemcpyDtoH(host.ctypes.data, dptr, n * 4)
    assert (host == 2000 + 6 * WARM_LAUNCHES).all()  # every launch ran, exactly once

    figures = {"device": info.name, "arch": info.arch, "warm_launches": WARM_LAUNCHES,
               "host_us_per_launch": {k: [round(v, 3) for v in vs] for k, vs in times.items()},
               "median_us": {k: round(statistics.median(vs), 3) for k, vs in times.items()},
               "device_free_bytes_before": free_before, "device_free_bytes_after": free_after,
               "device_total_bytes": total, "driver_version": driver.cuDriverGetVersion()[1]}
    try:
        import torch
        t = torch.zeros(n, device="cuda")

        def ours_torch(count):
            for _ in range(count):
                kernel.launch(1, 32, 0, (t, n))
        figures["median_us"]["tessera_torch_tensor_arg"] = round(statistics.median(
            _per_launch_us(ours_torch, WARM_LAUNCHES) for _ in range(3)), 3)
    except ImportError:
        pass
    staged = np.zeros(n, np.float32)

    def ours_staged(count):
        for _ in range(count):
            kernel.launch(1, 32, 0, (staged, n))
    ours_staged(1)
    staged_before, _ = mem_info()
    figures["median_us"]["tessera_numpy_staged"] = round(_per_launch_us(ours_staged, 500), 3)
    staged_after, _ = mem_info()
    assert staged[0] == 501
    figures["numpy_staged_free_bytes_before_after"] = [staged_before, staged_after]
    driver.cuMemFree(dptr)

    text = json.dumps(figures, indent=1)
    print(text)
    if os.environ.get("TESSERA_FIGURES"):
        Path(os.environ["TESSERA_FIGURES"]).write_text(text)
    assert free_after == free_before
    assert abs(staged_after - staged_before) <= 2 << 20
    ours_us, bare_us = figures["median_us"]["tessera"], figures["median_us"]["bare_cuda_core"]
    assert ours_us < 2 * bare_us + 5, f"warm launch {ours_us} us vs bare cuda.core {bare_us} us"
