"""The sm_90a GEMM in every operand layout: NN (a@b, B as [K, N]), NT (B as [N, K]), TN (A as [K, M]), TT.

A K-major operand (A as [M, K], B as [N, K]) and an MN-major one (A as [K, M],
B as [K, N]) differ only in how the staged tile is stored and described: TMA
boxes across the tile's contiguous dimension and wgmma descriptors with
imm-trans 1 (tessera.layouts.smem_swizzle, major="mn"). So the evidence is the
same as for NT (test_emit_hopper, test_hopper_host_emulation): NVRTC compiles
each layout and its SASS holds the tile's HGMMAs with no local memory; the
emitted descriptors equal the layout model's; and the emitted C++ run on the
host emulator matches float64 on ragged shapes across schedules, clusters,
split-K and stream-K.
"""

from __future__ import annotations

import re
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

from tessera.compiler import compile
from tessera.compiler.driver import lower
from tessera.dsl import tl
from tessera.dsl.specs import ScalarSpec, tensor
from tessera.ir import diagnostics as D
from tessera.kernels import gemm as G
from tessera.layouts.smem_swizzle import smem_layout
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime import CompileCache
from tessera.runtime.host_emulator import run_on_host
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import count_instructions, has_local_memory

NP = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}
LAYOUTS = {"NN": (False, False), "NT": (False, True), "TN": (True, False), "TT": (True, True)}


def specs(layout: str, dtype: str, full: bool = False):
    ta, tb = LAYOUTS[layout]
    return (tensor(("K", "M") if ta else ("M", "K"), dtype), tensor(("N", "K") if tb else ("K", "N"), dtype),
            tensor(("M", "N"), dtype), tensor((1, "N"), "f32") if full else None,
            tensor(("M", "N"), dtype) if full else None, ScalarSpec(tl.f32), ScalarSpec(tl.f32) if full else None)


def trace(layout: str, BM: int, BN: int, BK: int, dtype: str = "bf16", full: bool = False):
    ta, tb = LAYOUTS[layout]
    return G.gemm.trace(*specs(layout, dtype, full), BM=BM, BN=BN, BK=BK, TRANS_A=ta, TRANS_B=tb,
                        ACTIVATION="relu" if full else "none")


# -- NVRTC + SASS ---------------------------------------------------------------------------------------------------

SASS_CASES = {  # name: (layout, BM, BN, BK, stages, schedule)
    "NN-128x256": ("NN", 128, 256, 64, 4, "cooperative"),
    "TN-128x256": ("TN", 128, 256, 64, 4, "cooperative"),
    "TT-128x256": ("TT", 128, 256, 64, 4, "cooperative"),
    "NN-192x160": ("NN", 192, 160, 64, 4, "cooperative"),  # B's 320-byte rows: the 64-byte swizzle for both
    "TN-128x128-pingpong": ("TN", 128, 128, 64, 5, "pingpong"),
}


@pytest.fixture(scope="module", params=sorted(SASS_CASES))
def compiled(request):
    layout, bm, bn, bk, stages, schedule = SASS_CASES[request.param]
    ck = compile(trace(layout, bm, bn, bk), "sm_90a", stages=stages, schedule=schedule,
                 cache=CompileCache(disk=False))
    return request.param, SASS_CASES[request.param], ck


def test_every_layout_compiles_to_hgmma_with_no_local_memory(compiled):
    name, (layout, bm, bn, bk, _, schedule), ck = compiled
    sass = ck.sass()
    blocks = 2 if schedule == "pingpong" else 1  # a ping-pong consumer holds the whole 128-row tile: two m64 blocks
    assert count_instructions(sass, f"HGMMA.64x{bn}x16.F32.BF16") == blocks * bk // 16, name
    assert count_instructions(sass, "HGMMA") == blocks * bk // 16
    assert count_instructions(sass, "UTMALDG") >= 2
    assert not has_local_memory(ck.cubin) and not has_local_memory(sass)
    ta, tb = LAYOUTS[layout]
    ta, tb = int(ta), int(not tb)  # MN-major: A given as [K, M] (TRANS_A), B as [K, N] (not TRANS_B)
    asm = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.bf16\.bf16 [^;]*, 1, 1, 1, (\d), (\d);",
                     ck.source)
    assert asm and set(asm) == {(str(ta), str(tb))}  # imm-trans-a / imm-trans-b follow the layout


_DESC = re.compile(r"tsr_wgmma_desc\(([ab])_ \+ (\d+)u, 0x([0-9a-f]+)ull\)")
_TMA = re.compile(r"tsr_tma_load_2d(?:_evict_first)?\(tsr_sbase \+ (\d+)u \+ \d+u \* \(unsigned\)\w+, &(\w+)_tmap,"
                  r" (\w+), (\w+),")


@pytest.mark.parametrize("layout,bm,bn,bk,mode", [("NN", 128, 256, 64, "128B"), ("TT", 128, 128, 128, "128B"),
                                                  ("NN", 128, 160, 64, "64B"), ("TT", 64, 128, 32, "64B"),
                                                  ("TN", 64, 128, 32, "128B")])
def test_descriptors_and_boxes_follow_the_layout_model(layout, bm, bn, bk, mode):
    """Every k16 step's (offset, constant fields) is smem_swizzle's descriptor for the operand's major, and the
    TMA boxes land where that layout puts each block: K-major boxes step K, MN-major boxes step M or N."""
    module, _ = lower(trace(layout, bm, bn, bk), "tessera-lower-to-nv{arch=sm_90a stages=3}", "sm_90a")
    source = emit_cuda(module).source
    device = "\n".join(line for line in source.splitlines() if "tsr_wgmma_host(" not in line)
    steps = _DESC.findall(device)
    host_lines = [line for line in source.splitlines() if "tsr_wgmma_host(" in line]
    assert _DESC.findall("\n".join(host_lines)) == steps  # the emulator reads the same descriptors
    ta, tb = LAYOUTS[layout]
    majors = {"a": "mn" if ta else "k", "b": "k" if tb else "mn"}
    if "mn" in majors.values():  # the emulator is told each operand's major too
        assert all(f", {int(ta)}, {int(not tb)});  // k16 step" in line for line in host_lines)
    for operand, rows in (("a", bm), ("b", bn)):
        lay = smem_layout(rows, bk, "bf16", mode, majors[operand])
        got = [(int(off), int(const, 16)) for op, off, const in steps if op == operand]
        want = [(d.start, d.encode() - (d.start >> 4)) for d in (lay.descriptor(k0=k0) for k0 in range(0, bk, 16))]
        assert got == want, (operand, got, want)
        box_elems = lay.mode.row_bytes // 2
        dsts = sorted({int(dst) for dst, name, _, _ in _TMA.findall(source) if name == operand.upper()})  # evict-first
        # or not: each box is written twice
        base = dsts[0]
        if majors[operand] == "k":  # boxes of rows x (W/2) K columns
            want_dst = [base + int(lay.linear_offset(0, c)) for c in range(0, bk, box_elems)]
        else:  # boxes of bk K rows x (W/2) columns of M or N
            want_dst = [base + int(lay.linear_offset(r, 0)) for r in range(0, rows, box_elems)]
        assert dsts == want_dst, (operand, dsts, want_dst)


def test_an_mn_major_tile_that_no_swizzle_row_tiles_is_refused():
    with pytest.raises(D.TesseraError) as err:
        lower(trace("NN", 128, 40, 64), "tessera-lower-to-nv{arch=sm_90a stages=3}", "sm_90a")
    assert err.value.code == D.NV_WGMMA_UNSUPPORTED and "BN=40: an MN-major b tile" in str(err.value)


# -- host emulator numerics -------------------------------------------------------------------------------------------

def _run(layout, M, N, K, dtype, cfg, *, full=False, edit=None, seed=0):
    BM, BN, BK, stages, schedule, *rest = cfg
    cluster, store, splitk, multicast = (rest + [1, "tma", 1, "b"][len(rest):])[:4]
    k_split = "streamk=1" if splitk == "stream" else f"splitk={splitk}"
    ta, tb = LAYOUTS[layout]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((K, M) if ta else (M, K)).astype(NP[dtype])
    b = rng.standard_normal((N, K) if tb else (K, N)).astype(NP[dtype])
    c = (rng.standard_normal((M, N)) if full else np.full((M, N), np.nan)).astype(NP[dtype])
    c0 = c.astype(np.float64)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    res = rng.standard_normal((M, N)).astype(NP[dtype])
    module, _ = lower(trace(layout, BM, BN, BK, dtype, full),
                      f"tessera-lower-to-nv{{arch=sm_90a stages={stages} schedule={schedule} cluster={cluster} "
                      f"store={store} {k_split} multicast={multicast}}}", "sm_90a")
    em = emit_cuda(module)
    if edit is not None:
        em = edit(em)
    run_on_host(em, [a, b, c, bias, res, 0.5, 0.25] if full else [a, b, c, 0.5], G.grid(M, N, BM=BM, BN=BN))
    f64 = lambda x: x.astype(np.float64)  # noqa: E731
    ref = G.reference_gemm(f64(a), f64(b), c0 if full else None, bias if full else None, f64(res) if full else None,
                           0.5, 0.25 if full else None, trans_a=ta, trans_b=tb, activation="relu" if full else "none")
    return c.astype(np.float64), ref


EMULATED = {  # name: (layout, (BM, BN, BK, stages, schedule[, cluster[, store[, splitk[, multicast]]]]))
    "NN-coop-128x256": ("NN", (128, 256, 64, 3, "cooperative")),
    "TN-coop-128x256": ("TN", (128, 256, 64, 3, "cooperative")),
    "TT-coop-128x256-registers": ("TT", (128, 256, 64, 3, "cooperative", 1, "registers")),
    "NN-pingpong-128x128": ("NN", (128, 128, 64, 4, "pingpong")),
    "NN-coop-128x128-cluster2": ("NN", (128, 128, 64, 3, "cooperative", 2)),  # B's K rows split between the pair
    "TT-pingpong-128x128-cluster2": ("TT", (128, 128, 64, 3, "pingpong", 2)),
    "TN-coop-128x64-cluster2-multicast-a": ("TN", (128, 64, 64, 3, "cooperative", 2, "tma", 1, "a")),
    "NN-coop-128x128-splitk3": ("NN", (128, 128, 64, 3, "cooperative", 1, "tma", 3)),
    "NN-coop-192x160": ("NN", (192, 160, 64, 3, "cooperative")),  # 64-byte swizzle for both operands
    "TN-coop-256x128": ("TN", (256, 128, 64, 3, "cooperative")),  # MN-major A, two 64-row blocks per consumer
    "TT-coop-64x128-bk32": ("TT", (64, 128, 32, 5, "cooperative")),
    "NN-pingpong-128x64-bk128": ("NN", (128, 64, 128, 2, "pingpong")),
    "NN-coop-128x256-streamk": ("NN", (128, 256, 64, 3, "cooperative", 1, "tma", "stream")),
}


@pytest.mark.parametrize("name", sorted(EMULATED))
def test_every_layout_on_the_host_emulator_matches_float64(name):
    """300 x 264 x 200: ragged in every dimension, K-loops longer than the ring."""
    layout, cfg = EMULATED[name]
    got, ref = _run(layout, 300, 264, 200, "bf16", cfg)
    assert not np.isnan(got).any()
    assert rel_error(got, ref) <= error_bound("bf16")


@pytest.mark.parametrize("layout", ["NN", "TN", "TT"])
def test_full_epilogue_in_every_layout(layout):
    got, ref = _run(layout, 200, 136, 136, "f16", (128, 128, 64, 3, "cooperative"), full=True, seed=3)
    assert rel_error(got, ref) <= error_bound("f16")


def test_reading_an_mn_major_tile_as_k_major_is_caught():
    """The emulator takes imm-trans from the emitted call: dropping it reads B's [K, N] tile as [N, K]."""
    def drop_trans(em):
        assert ", 0, 1);  // k16 step" in em.source
        return replace(em, source=em.source.replace(", 0, 1);  // k16 step", ");  // k16 step"))

    got, ref = _run("NN", 128, 128, 64, "bf16", (128, 128, 64, 3, "cooperative"), edit=drop_trans)
    assert rel_error(got, ref) > 0.1


def test_compile_defaults_run_every_layout():
    """`tessera.compile(gemm, "sm_90a")` with its default launch shape, for each layout."""
    for layout in LAYOUTS:
        ck = compile(trace(layout, 128, 128, 64), "sm_90a", cache=CompileCache(disk=False))
        assert ck.arch == "sm_90a" and "wgmma.mma_async" in ck.source, layout



def _swapped_configs() -> list[dict]:
    """The swap_config rule's outputs and every swapped tuning candidate, once each."""
    from tessera.ops._hopper import HOPPER_CANDIDATES, SWAP, swap_config

    rule = [swap_config(M).as_dict() for M in (1, 32, 64)]
    return list({repr(c): c for c in rule + [c for c in HOPPER_CANDIDATES if c.get(SWAP)]}.values())


@pytest.mark.parametrize("config", _swapped_configs(),
                         ids=lambda c: f"{c['BM']}x{c['BN']}x{c['BK']}-s{c['stages']}-k{c['splitk']}")
@pytest.mark.parametrize("layout", ["NT", "TT"])
def test_the_swapped_decode_configs_compile_to_hgmma_with_no_local_memory(config, layout):
    """ops.gemm's swap-AB configs (the swap_config rule and the tuner's: 64 or 128 x 16/32/64 x 128 tiles, register
    stores), in the layouts a swapped NT (nn.Linear) or NN call runs: the tile's HGMMAs, no TMA store, no local
    memory."""
    from tessera.ops._hopper import HopperConfig

    cfg = HopperConfig.from_config(config)
    ck = compile(trace(layout, cfg.BM, cfg.BN, cfg.BK), "sm_90a", shape=cfg.shape, cache=CompileCache(disk=False))
    sass = ck.sass()
    assert count_instructions(sass, f"HGMMA.64x{cfg.BN}x16.F32.BF16") == cfg.BK // 16  # one code path for each 64-row block
    assert count_instructions(sass, "UTMALDG") >= 2 and count_instructions(sass, "UTMASTG") == 0
    assert not has_local_memory(ck.cubin) and not has_local_memory(sass)
