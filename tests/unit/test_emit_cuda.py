"""emit_cuda: nv IR -> CUDA C++, compiled with NVRTC for sm_80 and sm_90 and read back as SASS.

The compile tests need the pip NVRTC and cuobjdump (tessera.target.nvidia.toolchain.nvrtc / sass);
they skip, saying why, where those cannot load. Everything else runs anywhere.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import test as xdsl_test
from xdsl.rewriter import InsertPoint, Rewriter

from tessera.target.nvidia.emit import c_types as C
from tessera.target.nvidia.emit.copies import blocked_coords
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.ir import diagnostics as D
from tessera.ir.dialect import make_context
from tessera.ir.parse import parse_module
from tessera.passes import parse_pipeline

INPUTS = Path(__file__).resolve().parents[1] / "lit" / "nv" / "Inputs"
KERNELS = {
    "gemm3": ("gemm_tile.mlir", "tessera-lower-to-nv{{arch={arch} stages=3}}"),
    "epilogue": ("gemm_epilogue.mlir", "lower-tile-to-nv{{arch={arch}}}"),
    "logical": ("logical_ops.mlir", "lower-tile-to-nv{{arch={arch}}}"),
    "copy_pad": ("copy_pad.mlir", "lower-tile-to-nv{{arch={arch}}}"),
}


def lowered(kernel: str, arch: str = "sm_80"):
    path, pipeline = KERNELS[kernel]
    module = parse_module((INPUTS / path).read_text(), path)
    parse_pipeline(pipeline.format(arch=arch)).apply(make_context(), module)
    return module


@lru_cache(maxsize=None)
def emitted(kernel: str, arch: str = "sm_80"):
    return emit_cuda(lowered(kernel, arch))


@lru_cache(maxsize=None)
def compiled(kernel: str, arch: str):
    from tessera.target.nvidia.toolchain.nvrtc import CodegenError, compile_cuda

    try:
        return compile_cuda(emitted(kernel, arch).source, arch)
    except CodegenError as err:
        if err.code is D.CODEGEN_TOOLCHAIN_MISSING:
            pytest.skip(f"NVRTC is not available here: {err.message}")
        raise


def test_emission_is_deterministic():
    assert emit_cuda(lowered("epilogue")).source == emit_cuda(lowered("epilogue")).source


def test_kernel_abi():
    k = emitted("epilogue")
    assert (k.name, k.num_threads, k.arch) == ("gemm_epilogue", 128, "sm_80")
    assert k.smem_bytes > 48 * 1024  # the 128x128 f32 unpack scratch: dynamic shared memory
    names = [p.name for p in k.params]
    assert names[:5] == ["A", "A_size0", "A_size1", "A_stride0", "A_stride1"]
    assert names[-2:] == ["K", "alpha"] and len(names) == 5 * 5 + 2
    ptrs = {p.name: p.ctype for p in k.params if p.role == "ptr"}
    assert ptrs["A"] == "const tsr_u16* __restrict__" and ptrs["D"] == "float* __restrict__"
    assert [p.ctype for p in k.params if p.role == "value"] == ["long long", "float"]  # index K, f32 alpha
    assert 'extern "C" __global__ void __launch_bounds__(128, 1) gemm_epilogue(' in k.source
    assert "(int)bias_size1" in k.source and "bias_size0" not in k.source.split("{", 2)[-1].replace(
        "long long bias_size0", "")  # static dim 1 is a constant, the dynamic one is read


def test_index_arithmetic_is_the_lane_map_formula():
    src = emitted("gemm3").source
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in src
    assert "(lane >> 2)" in src and "2 * (lane & 3)" in src  # groupID and 2 * threadID_in_group, fitted
    assert "tsr_cp_async16(" in src and "cp.async.cg.shared.global" in src
    assert "tsr_cp_async_wait(tsr_groups - 1 - max(" in src


def test_unlowered_tile_op_is_refused_with_its_location():
    text = (INPUTS / "gemm_epilogue.mlir").read_text()
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "tile.program_id" in ln)
    with pytest.raises(D.TesseraError) as info:
        emit_cuda(parse_module(text, "gemm_epilogue.mlir"))
    assert info.value.code is D.EMIT_UNKNOWN_OP
    assert "tile.program_id" in info.value.message
    assert D.format_diagnostic(info.value).startswith(f"gemm_epilogue.mlir:{line}:3: error: EMIT_UNKNOWN_OP")


def test_unknown_op_in_lowered_kernel_is_refused():
    module = lowered("logical")
    kernel = next(op for op in module.walk() if op.name == "func.func")
    stray = xdsl_test.TestOp()
    Rewriter.insert_op(stray, InsertPoint.at_start(kernel.body.block))
    with pytest.raises(D.TesseraError) as info:
        emit_cuda(module)
    assert info.value.code is D.EMIT_UNKNOWN_OP and "test.op" in info.value.message


def test_missing_kernel_name():
    with pytest.raises(D.TesseraError) as info:
        emit_cuda(lowered("logical"), name="nope")
    assert info.value.code is D.EMIT_UNSUPPORTED and "it has: logical" in info.value.message


@pytest.mark.parametrize("shape", [(128, 128), (128, 32), (32, 128), (1, 128), (128, 1), (3, 5), (2, 4, 64),
                                   (256, 512), (6, 3, 8), (96,), (1, 1)])
def test_blocked_coords_match_unravel(shape):
    exprs = blocked_coords(shape, 128)
    size = math.prod(shape)
    for tid, slot in itertools.product(range(128), range(-(-size // 128))):
        if tid + slot * 128 < size:
            got = tuple(eval(x.replace("/", "//"), {"tid": tid, "i_": slot}) for x in exprs)  # noqa: S307
            assert got == np.unravel_index(tid + slot * 128, shape)


def test_literals():
    from xdsl.dialects.builtin import bf16, f32, i32

    assert C.literal(f32, 0.1) == "0.1f" and C.literal(f32, 3.0) == "3.0f"
    assert C.literal(f32, -math.inf) == "__int_as_float(0xff800000)"
    assert C.bits_literal(bf16, -math.inf) == "0xff80u" and C.bits_literal(bf16, 1.0) == "0x3f80u"
    assert C.literal(i32, 7.0) == "7"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel, hmma", [("gemm3", 64), ("epilogue", 64), ("logical", 0), ("copy_pad", 0)])
def test_compiles_with_hmma_and_no_local_memory(kernel, hmma, arch):
    from tessera.target.nvidia.toolchain import sass

    art = compiled(kernel, arch)
    text = sass.disassemble(art.cubin)
    assert sass.count_instructions(text, "HMMA") == hmma  # one per m16n8k16 atom of the K-loop body
    assert not sass.has_local_memory(art.cubin), sass.resource_usage(art.cubin)
    if kernel in ("gemm3", "copy_pad"):
        assert sass.count_instructions(text, "LDGSTS") > 0  # cp.async
