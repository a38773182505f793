"""lower-tile-to-nv: Fragment IR -> nv ops, checked by running the result in the nv emulator against numpy.

The kernels are the fixtures of tests/lit/nv/Inputs: a Tile IR GEMM (through the
named pipeline, 1 and 3 stages), hand-written Fragment IR with a non-zero initial
accumulator and an epilogue, and the leftover logical ops. Ragged shapes make every
edge guard matter; the emulator's race check makes every barrier matter.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tessera.ir import diagnostics as D
from tessera.target.nvidia.ir import ops as nv
from tessera.ir.dialect import make_context
from tessera.target.nvidia.emulate.nv_ir import run_kernel
from tessera.ir.parse import parse_module
from tessera.passes import parse_pipeline

INPUTS = Path(__file__).resolve().parents[1] / "lit" / "nv" / "Inputs"
BF16 = ml_dtypes.bfloat16


def lower(text_or_file: str, pipeline: str):
    text = (INPUTS / text_or_file).read_text() if text_or_file.endswith(".mlir") else text_or_file
    module = parse_module(text, text_or_file if text_or_file.endswith(".mlir") else "<test>")
    parse_pipeline(pipeline).apply(make_context(), module)
    return module


def op_names(module) -> list[str]:
    return [op.name for op in module.walk()]


def error_of(text: str, pipeline: str) -> D.TesseraError:
    with pytest.raises(D.TesseraError) as info:
        lower(text, pipeline)
    return info.value


@pytest.mark.parametrize("stages", [1, 3])
def test_gemm_accumulates_into_nonzero_c(stages):
    """C += A @ B: the loop threads the real accumulator (lesson 1), past ragged edges, over a 2x2 grid."""
    module = lower("gemm_tile.mlir", f"tessera-lower-to-nv{{arch=sm_80 stages={stages}}}")
    assert not [n for n in op_names(module) if n.startswith("tile.")]
    rng = np.random.default_rng(stages)
    M, N, K = 150, 130, 70
    A = rng.standard_normal((M, K)).astype(BF16)
    B = rng.standard_normal((K, N)).astype(BF16)
    C0 = rng.standard_normal((M, N)).astype(np.float32)
    C = C0.copy()
    run_kernel(module, [A, B, C, K], (2, 2))
    ref = C0 + A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(C, ref, rtol=1e-5, atol=1e-4)
    assert np.abs(C - (ref - C0)).max() > 0.5  # the initial C really was added


def test_gemm_epilogue_fragment_ir():
    """Hand-written Fragment IR: acc from C, K loop, unpack, relu(acc * alpha + bias) stored to D."""
    module = lower("gemm_epilogue.mlir", "lower-tile-to-nv{arch=sm_90}")
    rng = np.random.default_rng(7)
    M, N, K = 140, 200, 50
    A = rng.standard_normal((M, K)).astype(BF16)
    B = rng.standard_normal((K, N)).astype(BF16)
    C = rng.standard_normal((M, N)).astype(np.float32)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    D_ = np.full((M, N), np.nan, np.float32)
    run_kernel(module, [A, B, C, bias, D_, K, np.float32(0.5)], (2, 2))
    ref = np.maximum((C + A.astype(np.float64) @ B.astype(np.float64)) * 0.5 + bias, 0)
    np.testing.assert_allclose(D_, ref, rtol=1e-5, atol=1e-4)


def test_zero_trip_loop_keeps_initial_accumulator():
    module = lower("gemm_epilogue.mlir", "lower-tile-to-nv{arch=sm_80}")
    C = np.arange(20 * 30, dtype=np.float32).reshape(20, 30) - 100
    bias = np.ones((1, 30), np.float32)
    D_ = np.zeros((20, 30), np.float32)
    A = np.zeros((20, 0), BF16)
    B = np.zeros((0, 30), BF16)
    run_kernel(module, [A, B, C, bias, D_, 0, np.float32(2.0)], (1, 1))
    np.testing.assert_array_equal(D_, np.maximum(C * 2 + 1, 0))


def test_copy_with_padding_value():
    module = lower("copy_pad.mlir", "lower-tile-to-nv{arch=sm_80}")
    M, N = 100, 18
    X = np.arange(M * 20, dtype=np.float32).reshape(M, 20)[:, :N]
    Y = np.full((128, 32), np.nan, np.float32)
    run_kernel(module, [X, Y], (2,))
    want = np.full((128, 32), 3.0, np.float32)
    want[:M, :N] = X
    np.testing.assert_array_equal(Y, want)


def test_logical_ops_match_numpy():
    module = lower("logical_ops.mlir", "lower-tile-to-nv{arch=sm_86}")
    rng = np.random.default_rng(3)
    M, N, grid = 100, 20, 2
    X = rng.standard_normal((M, N)).astype(BF16)
    T = np.full((32, 64 * grid), np.nan, np.float32)
    R = np.full((M, 1), np.nan, np.float32)
    S = np.full((grid, 32), np.nan, np.float32)
    I = np.full((M, N), -1, np.int32)
    run_kernel(module, [X, T, R, S, I, np.float32(0.25)], (grid,))
    Xp = np.full((64 * grid, 32), -np.inf, np.float32)
    Xp[:M, :N] = X.astype(np.float32)
    r = Xp.max(1, keepdims=True)
    with np.errstate(invalid="ignore"):
        x = np.exp(Xp - r)  # rows past M are all -inf: NaN, as on the GPU
    col, row = np.meshgrid(np.arange(32), np.arange(64 * grid) % 64)
    mm = np.where(col <= row, x, 0) * np.float32(0.25)
    np.testing.assert_array_equal(R[:, 0], r[:M, 0])
    blocks = [mm[64 * g:64 * g + 64] for g in range(grid)]
    np.testing.assert_allclose(T, np.concatenate([b.T for b in blocks], 1), rtol=1e-6, equal_nan=True)
    sums = np.stack([b.sum(0) for b in blocks]).astype(BF16).astype(np.float32)
    np.testing.assert_allclose(S, np.sqrt(sums), rtol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(I, np.maximum((col + row) // 7, row)[:M, :N])


def test_types_are_converted_everywhere():
    module = lower("gemm_tile.mlir", "tessera-lower-to-nv{arch=sm_80 stages=3}")
    from tessera.ir.types import AsyncTokenType, FragmentType, TileType

    for op in module.walk():
        values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]
        assert not any(isinstance(v.type, (TileType, FragmentType, AsyncTokenType)) for v in values), op.name
    kernel = next(op for op in module.walk() if op.name == "func.func")
    assert kernel.attributes["nv.num_threads"].value.data == 128
    assert kernel.attributes["nv.arch"].data == "sm_80"
    loop = next(op for op in module.walk() if op.name == "scf.for")
    assert str(loop.results[0].type) == "vector<128xf32>"  # the 64x64 f32 accumulator: 128 registers per lane


def test_barriers_one_per_pipelined_iteration():
    """Redundant barriers go: the pipelined loop keeps only the one after its wait; the plain loop two."""
    for stages, want in ((3, 1), (1, 2)):
        module = lower("gemm_tile.mlir", f"tessera-lower-to-nv{{arch=sm_80 stages={stages}}}")
        loop = next(op for op in module.walk() if op.name == "scf.for")
        assert sum(isinstance(op, nv.BarrierOp) for op in loop.body.block.ops) == want


def test_emulator_catches_a_missing_barrier():
    """Controls for the race check: drop the barrier after the wait (or the wait) and the run fails."""
    from tessera.target.nvidia.emulate.nv_ir import NvRuntimeError

    args = lambda: [np.ones((40, 64), BF16), np.ones((64, 40), BF16), np.zeros((40, 40), np.float32), 64]
    for victim in (nv.BarrierOp, nv.CpAsyncWaitOp):
        module = lower("gemm_tile.mlir", "tessera-lower-to-nv{arch=sm_80 stages=1}")
        loop = next(op for op in module.walk() if op.name == "scf.for")
        next(op for op in loop.body.block.ops if isinstance(op, victim)).detach()
        with pytest.raises(NvRuntimeError, match="race|not delivered"):
            run_kernel(module, args(), (1, 1))


def test_wgmma_fragment_is_an_arch_error_on_sm80_and_unsupported_on_sm90a():
    text = (INPUTS / "gemm_epilogue.mlir").read_text().replace('family="mma_sync"', 'family="wgmma"')
    err = error_of(text, "lower-tile-to-nv{arch=sm_80}")
    assert err.code is D.NV_ARCH_UNSUPPORTED and "sm_90a" in err.message
    assert ":23:" in D.format_diagnostic(err) or "<test>:" in D.format_diagnostic(err)
    assert error_of(text, "lower-tile-to-nv{arch=sm_90a}").code is D.NV_LOWER_UNSUPPORTED


def test_arch_gate_on_nv_ops():
    """An nv op whose MIN_ARCH the target lacks is NV_ARCH_UNSUPPORTED, naming the op and both arches."""
    module = lower("gemm_tile.mlir", "tessera-lower-to-nv{arch=sm_80 stages=1}")
    from tessera.target.arch import Arch

    with pytest.raises(D.TesseraError) as info:
        nv.check_target_arch(module, Arch(7, 5))
    assert info.value.code is D.NV_ARCH_UNSUPPORTED and "sm_80" in info.value.message
    nv.check_target_arch(module, Arch(9, 0, "a"))  # newer arches satisfy sm_80
    assert nv.arch_satisfies(Arch(9, 0, "a"), nv.need_arch("sm_90a"))
    assert not nv.arch_satisfies(Arch(9, 0), nv.need_arch("sm_90a"))


@pytest.mark.parametrize("edit, code, phrase", [
    (('role="b", layout="row"', 'role="b", layout="col"'), "NV_LOWER_UNSUPPORTED", 'layout "col"'),
    (("%fb = tile.fragment_pack %sb[%c0, %c0] warps [2, 2]", "%fb = tile.fragment_pack %sb[%c0, %c0] warps [2, 1]"),
     "NV_THREADS_MISMATCH", "on 2 warps"),
])
def test_refusals(edit, code, phrase):
    text = (INPUTS / "gemm_epilogue.mlir").read_text().replace(*edit)
    err = error_of(text, "lower-tile-to-nv{arch=sm_80}")
    assert err.code.name == code and phrase in err.message


def test_tile_mma_must_go_through_tile_to_fragments():
    err = error_of((INPUTS / "gemm_tile.mlir").read_text(), "lower-tile-to-nv{arch=sm_80}")
    assert err.code is D.NV_LOWER_UNSUPPORTED and "tile-to-fragments" in err.message


def test_shared_memory_limit_per_arch():
    """Three 128x128 f32 stage buffers fit sm_90 (227 KiB), not sm_86 (99 KiB)."""
    text = """func.func @big() {
      %a = tile.alloc : !tile.tile<128x128xf32, smem>
      %b = tile.alloc : !tile.tile<128x128xf32, smem>
      %c = tile.alloc : !tile.tile<128x128xf32, smem>
      func.return
    }"""
    lower(text, "lower-tile-to-nv{arch=sm_90}")
    assert error_of(text, "lower-tile-to-nv{arch=sm_86}").code is D.NV_SMEM_OVERFLOW


@pytest.mark.parametrize("pipeline, code", [
    ("lower-tile-to-nv", "OPT_OPTION_MISSING"),
    ("lower-tile-to-nv{arch=sm_80 bogus=1}", "OPT_OPTION_UNKNOWN"),
    ("lower-tile-to-nv{arch=sm_75}", "OPT_OPTION_INVALID"),
    ("tessera-lower-to-nv{arch=sm_80 bogus=1}", "OPT_OPTION_UNKNOWN"),
])
def test_options_are_checked(pipeline, code):
    with pytest.raises(D.TesseraError) as info:
        parse_pipeline(pipeline)
    assert info.value.code.name == code


def test_lowering_is_deterministic():
    texts = {str(lower("gemm_epilogue.mlir", "lower-tile-to-nv{arch=sm_80}")) for _ in range(2)}
    assert len(texts) == 1
