"""TMA loads of memrefs of rank 3 to 5, end to end: the op, its CUDA text, NVRTC, the runtime's signature, the g++
host emulator.

The kernel is hand-written nv IR: thread 0 loads one 16 x 32 box of X at [outer..., row, col] through TMA, every
thread waits on the barrier and copies the box from shared memory to O. So the emulator's result is the box the
map and the coordinates name, checked against numpy slicing (zeros past the row and column edges and at outer
coordinates past their dims).
"""

from __future__ import annotations

import re
from dataclasses import replace
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

from _time_limit import time_limit
from tessera.compiler.kernel import launch_signature
from tessera.compiler.testing import HostKernel, emulate_on_host
from tessera.ir import diagnostics as D
from tessera.ir.parse import parse_module
from tessera.runtime.host_emulator import run_on_host
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.ir import hopper_ops as H

ROWS, COLS = 16, 32  # the box: 16 rows of 32 bf16 (64-byte rows, no swizzle)
LIMIT_S = 240  # g++ builds the emulated kernel once per source


def kernel_text(rank: int, evict_first: bool = False) -> str:
    mem = "memref<" + "?x" * rank + "bf16>"
    outer = [f"%o{d}" for d in range(rank - 2)]
    hint = " evict_first %once" if evict_first else ""
    args = "".join(f"{o}: index, " for o in outer)
    return f"""
func.func @tma{rank}(%X: {mem}, %O: memref<?x?xbf16>, {args}%r: index, %c: index{", %once: i1" * evict_first})
    attributes {{nv.num_threads = 128 : i64, nv.arch = "sm_90a", nv.smem_bytes = 2048 : i64}} {{
  %c0 = arith.constant 0 : index
  %tid = nv.thread_id : index
  nv.mbarrier_init {{base = 1024 : i64, count = 1 : i64, arrivals = 1 : i64}}
  %first = arith.cmpi eq, %tid, %c0 : index
  scf.if %first {{
    nv.mbarrier_expect_tx %c0 {{base = 1024 : i64, bytes = {ROWS * COLS * 2} : i64}}
    nv.tma_load %X[{", ".join([*outer, "%r", "%c"])}], %c0{hint} {{dst = 0 : i64, stage_bytes = 1024 : i64, bar = 1024 : i64, box = array<i64: {ROWS}, {COLS}>, swizzle = 0 : i64}} : {mem}
  }}
  nv.mbarrier_wait %c0, %c0 {{base = 1024 : i64}}
  %s = nv.alloc_shared {{offset = 0 : i64}} : !nv.smem<{ROWS}x{COLS}xbf16, {COLS}>
  %v = nv.load_shared %s {{shape = array<i64: {ROWS}, {COLS}>, threads = 128 : i64, strides = array<i64: {COLS}, 1>}} : !nv.smem<{ROWS}x{COLS}xbf16, {COLS}> -> vector<4xbf16>
  nv.store_global %v, %O[%c0, %c0] {{shape = array<i64: {ROWS}, {COLS}>, threads = 128 : i64}} : vector<4xbf16>, memref<?x?xbf16>
  func.return
}}"""


def emitted(rank: int, evict_first: bool = False):
    return emit_cuda(parse_module(kernel_text(rank, evict_first)))


def box_of(x: np.ndarray, at) -> np.ndarray:
    """The TMA box of x at [outer..., row, col] as the hardware reads it: zero wherever it lies outside x."""
    *outer, r, c = at
    want = np.zeros((ROWS, COLS), np.float32)
    if all(0 <= o < n for o, n in zip(outer, x.shape)):
        part = x[tuple(outer)][max(r, 0):r + ROWS, max(c, 0):c + COLS].astype(np.float32)
        want[max(-r, 0):max(-r, 0) + part.shape[0], max(-c, 0):max(-c, 0) + part.shape[1]] = part
    return want


# --- the op ----------------------------------------------------------------------------------------------------

def test_the_op_knows_its_rank_and_the_maps_box():
    module = parse_module(kernel_text(4))
    (op,) = [o for o in module.walk() if isinstance(o, H.TmaLoadOp)]
    assert op.rank() == 4 and op.map_box() == (1, 1, ROWS, COLS) and len(op.outer) == 2
    built = H.TmaLoadOp(op.source, op.row, op.col, op.stage, dst=0, stage_bytes=1024, bar=1024, box=(ROWS, COLS),
                        swizzle=0, outer=list(op.outer))
    built.verify()
    assert list(built.outer) == list(op.outer)


# --- the CUDA text and NVRTC --------------------------------------------------------------------------------

def test_the_load_passes_its_coordinates_innermost_first():
    src = emitted(4).source
    assert re.search(r"tsr_tma_load_4d\(tsr_sbase \+ 0u \+ 1024u \* \(unsigned\)c0, &X_tmap, c, r, o1, o0, ", src)
    assert ("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes\"\n"
            "               \" [%0], [%1, {%2, %3, %4, %5}], [%6];") in src
    hinted = emitted(4, evict_first=True).source
    assert re.search(r"if \(once\) tsr_tma_load_4d_evict_first\(.*, &X_tmap, c, r, o1, o0, .*\); "
                     r"else tsr_tma_load_4d\(", hinted)
    assert "bytes.L2::cache_hint\"\n               \" [%0], [%1, {%2, %3, %4, %5}], [%6], %7;" in hinted


def test_a_2d_load_does_not_bring_the_rank_n_helpers():
    src = emitted(2).source
    assert "tsr_tma_load_2d(tsr_sbase + 0u + 1024u * (unsigned)c0, &X_tmap, c, r, " in src
    assert "tsr_tma_load_3d" not in src and "bulk.tensor.4d" not in src


@pytest.mark.parametrize("rank", [3, 4, 5])
@pytest.mark.parametrize("evict_first", [False, True], ids=["plain", "evict-first"])
def test_rank_n_loads_compile_with_nvrtc_for_sm_90a(rank, evict_first):
    from tessera.target.nvidia.toolchain import CodegenError, compile_cuda

    try:
        art = compile_cuda(emitted(rank, evict_first).source, "sm_90a")
    except CodegenError as err:
        if err.code is D.CODEGEN_TOOLCHAIN_MISSING:
            pytest.skip(f"NVRTC is not available here: {err.message}")
        raise
    coords = ", ".join([r"%r\d+"] * rank)
    loads = re.findall(rf"cp\.async\.bulk\.tensor\.{rank}d\.shared::cluster\.global\.mbarrier::complete_tx::bytes"
                       rf"(\.L2::cache_hint)? \[%r\d+\], \[%rd\d+, \{{{coords}\}}\], \[%r\d+\]", art.ptx)
    assert sorted(loads) == (["", ".L2::cache_hint"] if evict_first else [""])


# --- the runtime signature ------------------------------------------------------------------------------------

def test_a_rank_4_map_names_the_pointer_and_every_size_and_stride():
    em = emitted(4)
    arg_types = tuple(parse_module(kernel_text(4)).body.block.ops.first.function_type.inputs)
    sig = {p.name: p for p in launch_signature(em, arg_types)}
    assert sig["X_tmap"].tensor == ("X", "X_size0", "X_size1", "X_size2", "X_size3", "X_stride0", "X_stride1",
                                    "X_stride2", "X_stride3")
    assert sig["X_tmap"].box == (ROWS, COLS) and sig["X_tmap"].kind == "tmap"


# --- the host emulator --------------------------------------------------------------------------------------

X4 = np.random.default_rng(7).standard_normal((2, 3, 40, 48)).astype(ml_dtypes.bfloat16)  # [B, H, S, D]
AT4 = [(1, 2, 0, 0), (0, 1, 32, 16),  # rows 40..47 past S: zero
       (1, 0, 8, 32), (0, 2, -4, 0),  # columns 48..63 past D, rows -4..-1 before the edge: zero
       (2, 0, 0, 0), (0, 3, 8, 0), (-1, 1, 0, 0)]  # b or h past its dim: the whole box is zero


def run_box(em, x: np.ndarray, at) -> np.ndarray:
    out = np.full((ROWS, COLS), np.nan, ml_dtypes.bfloat16)
    hint = [True] * any(p.name == "once" for p in em.params)  # the evict-first branch, where there is one
    run_on_host(em, [x, out, *at, *hint], (1,))
    return out.astype(np.float32)


def test_rank_4_boxes_on_the_host_emulator_match_numpy():
    em = emitted(4)
    with time_limit(LIMIT_S, em.source, "tma-rank-4", ".cu"):
        for at in AT4:
            assert np.array_equal(run_box(em, X4, at), box_of(X4, at)), at


def test_swapped_outer_coordinates_are_caught():
    """The same text with b and h swapped in the call reads another box: the check above can fail."""
    em = emitted(4)
    bad = replace(em, source=em.source.replace("&X_tmap, c, r, o1, o0,", "&X_tmap, c, r, o0, o1,"))
    with time_limit(LIMIT_S, bad.source, "tma-rank-4-swapped", ".cu"):
        assert not np.array_equal(run_box(bad, X4, (1, 2, 0, 0)), box_of(X4, (1, 2, 0, 0)))


@pytest.mark.parametrize("rank, shape, at", [(3, (5, 40, 48), (4, 30, 16)), (5, (2, 2, 3, 24, 40), (1, 0, 2, 16, 8))])
def test_rank_3_and_5_boxes_on_the_host_emulator_match_numpy(rank, shape, at):
    x = np.random.default_rng(rank).standard_normal(shape).astype(ml_dtypes.bfloat16)
    em = emitted(rank, evict_first=True)  # the hint reads the same box
    with time_limit(LIMIT_S, em.source, f"tma-rank-{rank}", ".cu"):
        assert np.array_equal(run_box(em, x, at), box_of(x, at))


def test_a_padded_view_reads_through_its_strides():
    """A view of a padded [B, H, S, D] array: the map carries its outer pitches, not the view's dense ones."""
    big = np.random.default_rng(3).standard_normal((2, 4, 48, 64)).astype(ml_dtypes.bfloat16)
    view = big[:, 1:4, :40, :48]
    em = emitted(4)
    with time_limit(LIMIT_S, em.source, "tma-rank-4-view", ".cu"):
        for at in [(1, 2, 8, 16), (0, 1, 32, 32)]:
            assert np.array_equal(run_box(em, view, at), box_of(view, at)), at


def test_the_runtime_lane_binds_and_encodes_a_rank_4_map():
    """The runtime's binder and TmapSlot (rank 4) with the host encoder, as the emulated cuda lane launches."""
    em = emitted(4)
    arg_types = tuple(parse_module(kernel_text(4)).body.block.ops.first.function_type.inputs)
    kernel = SimpleNamespace(name=em.name, emitted=em, signature=launch_signature(em, arg_types), arch="sm_90a",
                             artifact=SimpleNamespace(sha256="test"), block=(128, 1, 1), smem_bytes=em.smem_bytes)
    strides = tuple(s // X4.itemsize for s in X4.strides)
    with time_limit(LIMIT_S, em.source, "tma-rank-4-runtime", ".cu"), emulate_on_host("sm_90") as backend:
        host = HostKernel(backend, kernel)
        for at in AT4[:3]:
            out = np.full((ROWS, COLS), np.nan, ml_dtypes.bfloat16)
            host.launch(1, (128, 1, 1), em.smem_bytes, (X4, *X4.shape, *strides, None, out, *out.shape, COLS, 1, *at))
            assert np.array_equal(out.astype(np.float32), box_of(X4, at)), at
