"""kernel[grid](*args, **meta), the one-line launch (issue 17, item 2), and its interpret switch.

The same call runs on the reference interpreter (lane='reference' or
TESSERA_INTERPRET=1) and on the cuda lane (here the g++ host emulator, the
compiled CUDA C++ itself); both are checked against float64 numpy on fresh
random, ragged inputs. Specialisation: one trace/compile per dtype/rank/meta,
none per size. Every malformed launch raises a coded error at the caller's line.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tessera
from tessera import tl
from tessera.compiler import launcher as L
from tessera.compiler import testing
from tessera.ir import diagnostics as D


@tessera.kernel
def add(X, Y, Z, *, BLOCK=256):
    i = tl.program_id(0) * BLOCK
    tl.store(Z, [i], tl.load(X, [i], (BLOCK,)) + tl.load(Y, [i], (BLOCK,)))


@tessera.kernel
def scaled_rows(X, Y, s, *, BM=16, BN=32):
    m0, n0 = tl.program_id(0) * BM, tl.program_id(1) * BN
    tl.store(Y, [m0, n0], tl.load(X, [m0, n0], (BM, BN)) * s)


@pytest.fixture
def rng():
    return np.random.default_rng(np.random.SeedSequence().entropy)


@pytest.fixture(autouse=True)
def _no_interpret_env(monkeypatch):
    monkeypatch.delenv(L.INTERPRET_ENV, raising=False)


def vectors(rng, n, dtype=np.float32):
    return rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype), np.zeros(n, dtype)


@pytest.mark.parametrize("n", [1, 255, 1000])
def test_vector_add_on_the_reference_lane_with_a_grid_function(n, rng):
    x, y, z = vectors(rng, n)
    result = add[lambda meta: (tessera.cdiv(n, meta["BLOCK"]),)](x, y, z, lane="reference")
    assert result.lane == "reference" and result.programs == tessera.cdiv(n, 256)
    np.testing.assert_array_equal(z, (x.astype(np.float64) + y).astype(np.float32))


def test_the_interpret_switch_picks_the_reference_lane(monkeypatch, rng):
    monkeypatch.setenv(L.INTERPRET_ENV, "1")
    x, y, z = vectors(rng, 300)
    assert add[(3,)](x, y, z, BLOCK=128).lane == "reference"
    np.testing.assert_array_equal(z, x + y)
    monkeypatch.setenv(L.INTERPRET_ENV, "maybe")
    with pytest.raises(D.TesseraError) as err:
        add[(3,)](x, y, z)
    assert err.value.code is D.COMPILE_LAUNCH_INVALID and "TESSERA_INTERPRET='maybe'" in err.value.message


def test_without_a_gpu_the_cuda_lane_says_so_and_names_the_switch(rng):
    from tessera.runtime import has_gpu
    if has_gpu():
        pytest.skip("this machine has a GPU")
    x, y, z = vectors(rng, 10)
    with pytest.raises(D.TesseraError) as err:
        add[(1,)](x, y, z)
    assert err.value.code is D.RUNTIME_NO_DEVICE and "TESSERA_INTERPRET=1" in err.value.hint
    assert err.value.location.startswith(__file__) and not z.any()


def test_the_same_call_runs_compiled_code_on_the_host_emulator(rng):
    M, N = 37, 70
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.zeros_like(x)
    grid = lambda meta: (tessera.cdiv(M, meta["BM"]), tessera.cdiv(N, meta["BN"]))  # noqa: E731
    with testing.emulate_on_host("sm_90"):
        result = scaled_rows[grid](x, y, 1.5)
    assert result.lane == "host-emulator" and result.kernel == "scaled_rows" and len(result.artifact_hash) == 64
    np.testing.assert_allclose(y, x.astype(np.float64) * 1.5, rtol=1e-6)
    ref = np.zeros_like(x)
    scaled_rows[grid](x, ref, 1.5, lane="reference")
    np.testing.assert_array_equal(y, ref)


def test_bf16_and_cpu_torch_tensors_are_written_in_place(rng):
    torch = pytest.importorskip("torch")
    x, y = (torch.from_numpy(rng.standard_normal(500).astype(np.float32)).to(torch.bfloat16) for _ in range(2))
    z = torch.empty(500, dtype=torch.bfloat16)
    add[(2,)](x, y, z, lane="reference")
    assert torch.equal(z, (x.float() + y.float()).to(torch.bfloat16))
    xs, ys, zs = (a.astype(ml_dtypes.bfloat16) for a in vectors(rng, 64))
    add[(1,)](xs, ys, zs, BLOCK=64, lane="reference")
    np.testing.assert_array_equal(zs.astype(np.float32), (xs.astype(np.float32) + ys).astype(ml_dtypes.bfloat16))


def test_one_specialisation_per_dtype_rank_and_meta_not_per_size(monkeypatch, rng):
    seen = []
    real = L.compile_cached

    def recording(kernel, specs, meta, **kw):
        seen.append((specs, tuple(sorted(meta.items()))))
        return real(kernel, specs, meta, **kw)

    monkeypatch.setattr(L, "compile_cached", recording)
    with testing.emulate_on_host("sm_90"):
        for n in (100, 513, 2000):
            x, y, z = vectors(rng, n)
            add[(tessera.cdiv(n, 256),)](x, y, z)
            np.testing.assert_array_equal(z, x + y)
        add[(1,)](*vectors(rng, 10, np.float16))
        add[(1,)](*vectors(rng, 10), BLOCK=64)
    assert len(seen) == 5 and len(set(seen)) == 3, seen  # the three sizes share one key
    L._traced.clear()
    for n in (100, 513):
        add[(tessera.cdiv(n, 256),)](*vectors(rng, n), lane="reference")
    assert len(L._traced) == 1


@pytest.mark.parametrize("grid, text", [
    ((0,), "the grid is (0,)"),
    ((1, 2, 3, 4), "1 to 3 positive ints"),
    ((2.0,), "the grid is (2.0,)"),
    ((True,), "the grid is (True,)"),
    ("8", "the grid is '8'"),
    (lambda meta: meta["BLOK"], "raised KeyError: 'BLOK'"),
    (lambda meta: None, "the grid is None"),
])
def test_a_malformed_grid_is_a_coded_error_at_the_callers_line(grid, text, rng):
    x, y, z = vectors(rng, 10)
    with pytest.raises(D.TesseraError) as err:
        add[grid](x, y, z, lane="reference")
    assert err.value.code is D.COMPILE_LAUNCH_INVALID and text in err.value.message
    assert err.value.location.startswith(__file__) and not z.any()


def test_arguments_options_and_names_are_checked(rng):
    x, y, z = vectors(rng, 10)
    cases = [
        (lambda: add[(1,)](x, y, z, BLOK=3, lane="reference"), D.DSL_SIGNATURE, "has no parameter 'BLOK'"),
        (lambda: add[(1,)](x, y, lane="reference"), D.DSL_SIGNATURE, "missing run-time argument 'Z'"),
        (lambda: add[(1,)](x, y, z, x, lane="reference"), D.DSL_SIGNATURE, "takes 3 run-time arguments"),
        (lambda: add[(1,)](x, y, z, X=x, lane="reference"), D.DSL_SIGNATURE, "'X' given twice"),
        (lambda: add[(1,)](x, y, z, lane="gpu"), D.COMPILE_LAUNCH_INVALID, "lane='gpu'"),
        (lambda: add[(1,)](x, y, True, lane="reference"), D.DSL_ARG_SPEC, "is a bool"),
        (lambda: add[(1,)](x, y, [0.0] * 10, lane="reference"), D.DSL_ARG_SPEC, "not an argument spec"),
        (lambda: add[(1,)](x, y, z.astype(np.int8), lane="reference"), D.DSL_DTYPE_INVALID, "int8"),
        (lambda: add[(1,)](x, y, z[::2], lane="reference"), D.REF_ARG_LAYOUT, "not C-contiguous"),
    ]
    for call, code, text in cases:
        with pytest.raises(D.TesseraError) as err:
            call()
        assert err.value.code is code and text in err.value.message, (code, err.value)
    assert not z.any()


def test_a_kernel_parameter_may_not_take_a_launch_keyword(rng):
    @tessera.kernel
    def copy(X, Y, *, lane=0):
        tl.store(Y, [0], tl.load(X, [0], (16,)))

    x = rng.standard_normal(16).astype(np.float32)
    with pytest.raises(D.TesseraError) as err:
        copy[(1,)](x, np.zeros_like(x), lane="reference")
    assert err.value.code is D.COMPILE_LAUNCH_INVALID and "'lane'" in err.value.message


def test_calling_a_kernel_directly_points_at_the_launch_syntax(rng):
    with pytest.raises(D.TesseraError) as err:
        add(*vectors(rng, 4))
    assert err.value.code is D.DSL_KERNEL_CALL and "add[grid](*args, **meta)" in err.value.hint


def test_tessera_exports_compile_and_cdiv():
    assert {"compile", "cdiv"} <= set(tessera.__all__)
    assert tessera.cdiv(1000, 256) == 4 and tessera.cdiv(1024, 256) == 4 and callable(tessera.compile)


def test_static_dims_bake_sizes_into_the_trace(rng):
    @tessera.kernel(static_dims={"X": 1})
    def row_sums(X, Y, *, BM=8):
        m0 = tl.program_id(0) * BM
        tl.store(Y, [m0, 0], tl.sum(tl.load(X, [m0, 0], (BM, X.shape[1])), 1))  # a tile as wide as X

    x = rng.standard_normal((20, 48)).astype(np.float32)
    y = np.zeros((20, 1), np.float32)
    row_sums[(3,)](x, y, lane="reference")
    np.testing.assert_allclose(y[:, 0], x.astype(np.float64).sum(1), rtol=1e-5)
    (key,) = [k for k in L._traced if k[0] is row_sums]
    assert key[1][0].shape == ("X.0", 48)  # dim 1 static, dim 0 symbolic
    @tessera.kernel
    def wide(X, Y):
        tl.store(Y, [0, 0], tl.load(X, [0, 0], (8, X.shape[1])))

    with pytest.raises(D.TesseraError) as err:  # not declared static: the tile shape has no size
        wide[(1,)](x, np.zeros_like(x), lane="reference")
    assert err.value.code is D.DSL_SHAPE_INVALID
    wide[(1,)](x, y2 := np.zeros_like(x), lane="reference", static_dims={"X": (1,)})  # the launch keyword
    np.testing.assert_array_equal(y2[:8], x[:8])


@pytest.mark.parametrize("static, code, text", [
    ({"W": 0}, D.DSL_SIGNATURE, "names 'W'"),
    ({"X": (-1,)}, D.DSL_SIGNATURE, "dim indices"),
    ({"X": "1"}, D.DSL_SIGNATURE, "dim indices"),
    ({"X": 2}, D.COMPILE_LAUNCH_INVALID, "has rank 1"),
])
def test_bad_static_dims_are_coded(static, code, text, rng):
    x, y, z = vectors(rng, 10)
    with pytest.raises(D.TesseraError) as err:
        add[(1,)](x, y, z, lane="reference", static_dims=static)
    assert err.value.code is code and text in err.value.message
    with pytest.raises(D.TesseraError) as err:
        tessera.kernel(static_dims=[1])(lambda X: None)
    assert err.value.code in (D.DSL_SIGNATURE, D.DSL_SOURCE)


def test_errors_point_at_user_code_when_tessera_is_imported_through_dotdot(tmp_path):
    """A sys.path entry such as tutorials/../src names tessera's files with '..': still internal."""
    import subprocess
    import sys
    from pathlib import Path
    src = Path(L.__file__).resolve().parents[2]
    user = tmp_path / "user.py"
    user.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(src.parent / 'tests' / '..' / 'src')!r})\n"
        "import numpy as np, tessera\n"
        "from tessera import tl\n"
        "@tessera.kernel\n"
        "def k(X, n):\n"
        "    tl.store(X, [0], tl.full((4,), 1.0 / n, tl.f32))\n"
        "try:\n"
        "    k[(1,)](np.zeros(4, np.float32), 3, lane='reference')\n"
        "except tessera.KernelError as e:\n"
        "    print(e.location)\n")
    out = subprocess.run([sys.executable, str(user)], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith(f"{user}:7:"), out.stdout + out.stderr
