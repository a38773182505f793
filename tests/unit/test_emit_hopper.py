"""CUDA emission for sm_90a: the warp-specialised wgmma + TMA GEMM, read back from its source and its SASS.

`tessera.compile(..., arch="sm_90a")` runs warp-specialize and emit_hopper; CI
has no GPU, so the evidence that the kernel is what the IR says is the text
(one tensor map per TMA-read memref, the logical-grid parameters of a
persistent kernel, 1024-byte aligned shared memory, setmaxnreg only with two
consumer warpgroups, wgmma descriptors equal to `tessera.layouts.smem_swizzle`'s
encoding at the offsets where TMA puts the boxes) and the machine code (HGMMA
of the tile's shape, UTMALDG, SYNCS mbarrier instructions, no local memory).
"""

from __future__ import annotations

import re

import pytest

import tessera
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import count_instructions, has_local_memory
from tessera.compiler import compile
from tessera.compiler.driver import lower
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.kernels import gemm as G
from tessera.layouts.smem_swizzle import smem_layout
from tessera.runtime import CompileCache

T = tessera.tensor

# The traced specs of test_compiler's sm_90a GEMM: bias and residual are read in the epilogue, not by TMA.
EPILOGUE_SPECS = (T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"), T((1, "N"), "bf16"),
                  T(("M", "N"), "bf16"), tessera.scalar("f32"), None)
# C = alpha * A @ B^T + beta * C: C is read and written through the accumulator layout.
PLAIN_SPECS = (T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"), None, None,
               tessera.scalar("f32"), tessera.scalar("f32"))
# C = gelu(alpha * A @ B^T + bias): nothing reads a whole tile, so C is written through shared memory by TMA.
BIAS_SPECS = (T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"), T((1, "N"), "bf16"), None,
              tessera.scalar("f32"), None)
CONFIGS = {
    "128x256": (EPILOGUE_SPECS, dict(BM=128, BN=256, BK=64, ACTIVATION="gelu"), 4),
    "64x128": (PLAIN_SPECS, dict(BM=64, BN=128, BK=64), 3),
    "128x256-tma-store": (BIAS_SPECS, dict(BM=128, BN=256, BK=64, ACTIVATION="gelu"), 4),
    "256x128-tma-store": (BIAS_SPECS, dict(BM=256, BN=128, BK=64, ACTIVATION="gelu"), 4),  # 2 blocks per consumer
    # three consumer warpgroups; C in 32-column boxes of 64-byte rows (160 columns are not whole 128-byte rows)
    "192x160-tma-store": (BIAS_SPECS, dict(BM=192, BN=160, BK=64, ACTIVATION="gelu"), 4),
}
_DESC = re.compile(r"tsr_wgmma_desc\(([ab])_ \+ (\d+)u, 0x([0-9a-f]+)ull\)")
_TMA = re.compile(r"tsr_tma_load_2d\(tsr_sbase \+ (\d+)u \+ (\d+)u \* \(unsigned\)\w+, &(\w+)_tmap,")
_A_BASE = re.compile(r"const unsigned a_ = tsr_sbase \+ (\d+)u \+ (\d+)u \* \(unsigned\)\w+ \+ (\d+)u \* ")
_B_BASE = re.compile(r"const unsigned b_ = tsr_sbase \+ (\d+)u \+ (\d+)u \* \(unsigned\)\w+;")


def trace(specs, meta):
    return G.gemm.trace(*specs, TRANS_B=True, **meta)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def hopper(request):
    """(config name, meta, CompiledKernel, the lowered nv module) for one sm_90a GEMM."""
    specs, meta, stages = CONFIGS[request.param]
    ck = compile(trace(specs, meta), "sm_90a", stages=stages, cache=CompileCache(disk=False))
    module, _ = lower(trace(specs, meta), f"tessera-lower-to-nv{{arch=sm_90a stages={stages}}}", "sm_90a")
    return request.param, meta, ck, module


def kernel_args(module):
    kernel = next(op for op in module.walk() if op.name == "func.func")
    return kernel.body.block.args


def test_one_tensor_map_per_memref_that_tma_reads_or_writes(hopper):
    name, meta, ck, module = hopper
    args = kernel_args(module)
    tma_read = sorted({list(args).index(op.source) for op in module.walk() if isinstance(op, H.TmaLoadOp)})
    tma_written = sorted({list(args).index(op.dest) for op in module.walk() if isinstance(op, H.WgaccStoreTmaOp)})
    staged = name.endswith("tma-store")  # an epilogue that loads whole tiles (C, residual) stores from registers
    tmaps = [p for p in ck.emitted.params if p.role == "tmap"]
    assert tma_read == [0, 1] and tma_written == ([2] if staged else [])  # never bias or residual
    assert [p.arg for p in tmaps] == [0, 1] + tma_written
    c_cols = 64 if meta["BN"] % 64 == 0 else 32  # C in 64 x 64 boxes (128-byte rows), else 64 x 32 (64-byte rows)
    boxes = [(meta["BM"], 64), (meta["BN"], 64)] + [(64, c_cols)] * staged
    assert [p.box for p in tmaps] == boxes
    assert [p.swizzle for p in tmaps] == [128, 128] + [2 * c_cols] * staged
    declared = re.findall(r"const __grid_constant__ tsr_tensormap (\w+)_tmap\b", ck.source)
    assert declared == ["A", "B"] + ["C"] * staged
    assert {m[2] for m in _TMA.findall(ck.source)} == {"A", "B"}
    # One store per 64-column box, per 64-row block a consumer owns, written once or twice (an epilogue run
    # with a bounds-checked window has interior and edge paths).
    blocks = 2 if meta["BM"] == 256 else 1
    once = meta["BN"] // c_cols * staged * blocks
    assert once <= ck.source.count("tsr_tma_store_2d(&C_tmap,") <= 2 * once


def test_persistent_kernel_takes_the_logical_grid(hopper):
    _, _, ck, _ = hopper
    grid = [p for p in ck.emitted.params if p.role == "grid"]
    assert [(p.name, p.dim, p.ctype) for p in grid] == [("tsr_grid0", 0, "int"), ("tsr_grid1", 1, "int")]
    assert ck.emitted.persistent
    assert re.search(r"\bint tsr_grid0,\s*int tsr_grid1\)", ck.source)
    assert "= tsr_grid0;" in ck.source and "= tsr_grid1;" in ck.source  # nv.logical_grid reads them


def test_shared_memory_is_1024_byte_aligned_for_the_128_byte_swizzle(hopper):
    _, _, ck, _ = hopper
    assert re.search(r"extern __shared__ __align__\(1024\) unsigned char \w+\[\];", ck.source)


def test_threads_and_register_reallocation_follow_the_consumer_count(hopper):
    name, meta, ck, _ = hopper
    consumers = min(meta["BM"] // 64, 3) if meta["BM"] != 256 else 2  # 256 rows: two warpgroups of two blocks
    assert ck.emitted.num_threads == 128 * (1 + consumers)
    assert f"__launch_bounds__({ck.emitted.num_threads}, 1)" in ck.source
    realloc = re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32 (\d+);", ck.source)
    # Two or three consumer warpgroups need more than the even share of registers; one does not.
    want = {1: [], 2: [("dec", "40"), ("inc", "232")], 3: [("dec", "32"), ("inc", "160")]}[consumers]
    assert realloc == want, name


def test_sass_has_hgmma_of_the_tile_tma_and_mbarriers_and_no_local_memory(hopper):
    _, meta, ck, _ = hopper
    sass = ck.sass()
    bn, k_steps = meta["BN"], meta["BK"] // 16
    blocks = 2 if meta["BM"] == 256 else 1  # m64 wgmmas per consumer per k16 step
    assert count_instructions(sass, f"HGMMA.64x{bn}x16.F32.BF16") == blocks * k_steps, sass[:2000]
    assert count_instructions(sass, "HGMMA") == blocks * k_steps
    assert count_instructions(sass, "UTMALDG") >= 2  # one box of A and one of B per K step
    if "tsr_tma_store_2d(&" in ck.source:
        assert count_instructions(sass, "UTMASTG") >= bn // 64  # the epilogue's 64 x 64 boxes of C
    assert count_instructions(sass, "SYNCS") > 0  # mbarrier init / arrive / expect_tx / try_wait
    assert not has_local_memory(ck.cubin) and not has_local_memory(sass)


def check_descriptors(source: str, bm: int, bn: int, bk: int, blocks: int = 1) -> None:
    """Every k16 step's (offset, constant) equals smem_layout's descriptor, and TMA boxes land on that layout;
    `blocks` wgmmas (64-row blocks per consumer) each repeat the steps."""
    device = "\n".join(line for line in source.splitlines() if "tsr_wgmma_host(" not in line)  # the asm, not the
    steps = _DESC.findall(device)                                                             # emulator's copy
    assert len(steps) == 2 * (bk // 16) * blocks, steps
    host = _DESC.findall("\n".join(line for line in source.splitlines() if "tsr_wgmma_host(" in line))
    assert host == steps  # the host emulator reads through the very same descriptors
    (a_base, a_stage, a_wg), = {tuple(map(int, m)) for m in _A_BASE.findall(source)}
    (b_base, b_stage), = {tuple(map(int, m)) for m in _B_BASE.findall(source)}
    for operand, rows, base, stage in (("a", bm, a_base, a_stage), ("b", bn, b_base, b_stage)):
        lay = smem_layout(rows, bk, "bf16", "128B")
        got = [(int(off), int(const, 16)) for op, off, const in steps if op == operand]
        want = []
        for j in range(bk // 16):
            d = lay.descriptor(k0=16 * j)
            want.append((d.start, d.encode() - (d.start >> 4)))
        assert got == want * blocks, (operand, got, want)
        assert all(const & 0x3FFF == 0 for _, const in got)  # tsr_wgmma_desc ORs the start address in
        # The TMA box of columns [64j, 64j + 64) starts where the layout puts column 64j.
        boxes = sorted((int(dst), int(st)) for dst, st, name in _TMA.findall(source) if name == operand.upper())
        assert boxes == [(base + int(lay.linear_offset(0, 64 * j)), stage) for j in range(bk // 64)]
    assert a_wg == 64 * 128  # consumer c reads rows 64c.. of A: 64 rows of 128 bytes further


def test_wgmma_descriptors_match_the_smem_swizzle_encoding(hopper):
    _, meta, ck, _ = hopper
    check_descriptors(ck.source, meta["BM"], meta["BN"], meta["BK"], 2 if meta["BM"] == 256 else 1)


@pytest.mark.parametrize("bm, bn, bk, stages", [(64, 128, 128, 3), (128, 128, 128, 2)])
def test_descriptors_of_a_two_box_k_step(bm, bn, bk, stages):
    """BK=128 is two 64-column TMA boxes per operand: the k16 steps past column 64 read the second box."""
    traced = trace(PLAIN_SPECS, dict(BM=bm, BN=bn, BK=bk))
    module, _ = lower(traced, f"tessera-lower-to-nv{{arch=sm_90a stages={stages}}}", "sm_90a")
    source = emit_cuda(module, traced.name).source
    check_descriptors(source, bm, bn, bk)
    assert source.count(f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.bf16.bf16") == bk // 16


# --- split-K in one launch ---------------------------------------------------------------------------------

@pytest.mark.parametrize("meta, schedule, cluster", [(dict(BM=128, BN=128, BK=64), "cooperative", 1),
                                                      (dict(BM=128, BN=128, BK=64), "pingpong", 1),
                                                      (dict(BM=128, BN=64, BK=64), "pingpong", 2)],
                         ids=["cooperative", "pingpong", "pingpong-cluster2"])
def test_split_k_kernel_has_the_scratch_parameter_coalesced_partials_and_no_local_memory(meta, schedule, cluster):
    """The configs ops.gemm and the benchmark split with: the runtime's scratch parameter (record = 2 splits x
    blocks x 64 x BN f32 + 16 bytes of counters), 16-byte partial stores and loads past L1, one GPU-scope
    counter atomic per 64-row block, HGMMA, and no spill (the accumulator stays in registers through the fixup)."""
    ck = compile(trace(BIAS_SPECS, {**meta, "ACTIVATION": "gelu"}), "sm_90a", stages=5, schedule=schedule,
                 cluster=cluster, splitk=2, cache=CompileCache(disk=False))
    scratch = [p for p in ck.emitted.params if p.role == "scratch"]
    assert [(p.name, p.ctype, p.dim) for p in scratch] == \
        [("tsr_scratch", "unsigned char*", 2 * 2 * 64 * meta["BN"] * 4 + 16)]
    assert ck.emitted.splitk == 2 and ck.signature[-1].kind == "ptr" and ck.signature[-1].elem == "u8"
    sass = ck.sass()
    blocks = 2 if schedule == "pingpong" else 1  # a ping-pong consumer holds both 64-row blocks of its tile
    assert count_instructions(sass, "ATOMG") == blocks
    assert count_instructions(sass, "STG.E.128") > 0 and count_instructions(sass, "LDG.E.128") > 0
    assert count_instructions(sass, "HGMMA") > 0
    assert not has_local_memory(ck.cubin) and not has_local_memory(sass)


@pytest.mark.parametrize("meta, schedule", [(dict(BM=128, BN=128, BK=64), "cooperative"),
                                             (dict(BM=128, BN=64, BK=64), "pingpong"),
                                             (dict(BM=64, BN=16, BK=128), "cooperative")],
                         ids=["cooperative", "pingpong", "decode-tile"])
def test_split_k_in_a_cluster_sends_the_block_through_distributed_shared_memory(meta, schedule):
    """cluster=2 multicast=k: no scratch parameter and no global atomic; rank 1's block goes out as 16-byte
    st.async stores into rank 0 (n / 8 per block a consumer holds), rank 0 reads it back with 16-byte shared
    loads; the launch says cluster 2 along no grid axis (-1) and one unit per tile (splitk 1); no spill."""
    ck = compile(trace(BIAS_SPECS, {**meta, "ACTIVATION": "gelu"}), "sm_90a", stages=4, schedule=schedule,
                 cluster=2, multicast="k", cache=CompileCache(disk=False))
    assert not [p for p in ck.emitted.params if p.role == "scratch"]
    assert (ck.emitted.cluster, ck.emitted.cluster_axis, ck.emitted.splitk) == (2, -1, 1)
    assert "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32" in ck.source
    sass = ck.sass()
    blocks = 2 if schedule == "pingpong" else 1  # a ping-pong consumer holds both 64-row blocks of its tile
    assert count_instructions(sass, "STAS") == blocks * meta["BN"] // 8
    assert count_instructions(sass, "ATOMG") == 0 and count_instructions(sass, "HGMMA") > 0
    assert not has_local_memory(ck.cubin) and not has_local_memory(sass)


_SPLITK_64 = ("%u, %m = nv.splitk_fixup %b, %t, %t, %t, %t {n = 64 : i64, splits = 2 : i64, blocks = 2 : i64, "
              "flag = 0 : i64} : vector<32xf32> -> vector<32xf32>")
_STREAMK_64 = ("%u, %m = nv.streamk_fixup %b, %t, %t, %t, %t, %t, %t, %t {n = 64 : i64, blocks = 2 : i64, "
               "slot_stride = 2 : i64, flag = 0 : i64} : vector<32xf32> -> vector<32xf32>")


@pytest.mark.parametrize("second", [_SPLITK_64, _STREAMK_64], ids=["two-split-k-records", "split-k-and-stream-k"])
def test_disagreeing_scratch_layouts_are_a_coded_emit_error(second):
    text = f"""
func.func @two(%t: index) attributes {{nv.num_threads = 384 : i64, nv.arch = "sm_90a", nv.smem_bytes = 1024 : i64}} {{
  %a = nv.fill {{value = 1.0 : f64}} : vector<64xf32>
  %b = nv.fill {{value = 1.0 : f64}} : vector<32xf32>
  %s, %l = nv.splitk_fixup %a, %t, %t, %t, %t {{n = 128 : i64, splits = 2 : i64, blocks = 2 : i64, flag = 0 : i64}} : vector<64xf32> -> vector<64xf32>
  {second}
  func.return
}}"""
    from tessera.ir.parse import parse_module
    from tessera.ir import diagnostics as D
    with pytest.raises(D.TesseraError) as err:
        emit_cuda(parse_module(text))
    assert err.value.code == D.EMIT_UNSUPPORTED and "disagree on the scratch layout" in str(err.value)


def test_split_k_scratch_survives_a_refused_argument_and_is_replaced_after_a_failed_launch(monkeypatch):
    """A refused argument (RUNTIME_ARG_INVALID) never reached the device: the scratch and its zeroed counters
    stay. Any other launch failure may leave counters raised: the buffers are dropped for fresh ones."""
    from tessera.compiler import testing
    from tessera.ir import diagnostics as D
    from tessera.runtime.errors import RuntimeLaunchError

    ck = compile(trace(BIAS_SPECS, dict(BM=128, BN=128, BK=64, ACTIVATION="gelu")), "sm_90a", stages=3, splitk=2,
                 cache=CompileCache(disk=False))
    dropped: list = []
    monkeypatch.setattr(ck._derived.scratch, "drop", lambda: dropped.append(1))
    with testing.emulate_on_host("sm_90"):
        with pytest.raises(RuntimeLaunchError) as err:
            ck.launch_values((1, 1), [None, None, None])  # the binder refuses the count
        assert err.value.code == D.RUNTIME_ARG_INVALID and dropped == []

        def fault(*args, **kwargs):
            raise RuntimeError("the launch failed on the device")
        monkeypatch.setattr(ck.loaded(0), "launch", fault)
        with pytest.raises(RuntimeError, match="failed on the device"):
            ck.launch_values((1, 1), [None, None, None])
        assert dropped == [1]
