"""The f32-input GEMM compiles with NVRTC to CUDA-core code: FFMA, no tensor cores, no local memory.

The shipped GEMM traced with f32 tensors (beta, bias, gelu and residual: the
epilogue with the most live values after the K loop), at its default
128x128x32 tiles and at 64x64, for sm_80 and sm_90. The accumulator array
must stay in registers (no LDL/STL, no stack frame: DESIGN section 4), no
HMMA may appear (that would be tf32), and ptxas must read A four k-steps at
a time (LDS.128), which the emitted k loop's unroll by 4 is there for.
Skips, saying why, where NVRTC or cuobjdump cannot load.
"""

from __future__ import annotations

import pytest
from test_f32_mma import lower, traced_gemm

from tessera.target.nvidia.toolchain import sass
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.ir import diagnostics as D


def compiled(arch: str, **tiles):
    from tessera.target.nvidia.toolchain.nvrtc import CodegenError, compile_cuda

    kernel = emit_cuda(lower(traced_gemm("f32", **tiles).module, arch))
    try:
        return kernel, compile_cuda(kernel.source, arch)
    except CodegenError as err:
        if err.code is D.CODEGEN_TOOLCHAIN_MISSING:
            pytest.skip(f"NVRTC is not available here: {err.message}")
        raise


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("tiles", [{}, dict(BM=64, BN=64)], ids=["default-128x128x32", "64x64x32"])
def test_f32_gemm_is_ffma_in_registers(arch, tiles):
    kernel, art = compiled(arch, **tiles)
    assert "fmaf(" in kernel.source and "mma.sync" not in kernel.source
    try:
        text = sass.disassemble(art.cubin)
    except sass.CodegenError as err:
        if err.code is not D.CODEGEN_TOOLCHAIN_MISSING:
            raise
        pytest.skip(f"cuobjdump is not available here: {err.message}")
    slots = tiles.get("BM", 128) * tiles.get("BN", 128) // kernel.num_threads
    assert sass.count_instructions(text, "FFMA") >= 4 * slots  # one unrolled body: 4 k-steps x every slot
    assert sass.count_instructions(text, "HMMA") == 0  # f32 never becomes tf32 on tensor cores
    assert sass.count_instructions(text, "LDS.128") > 0
    assert not sass.has_local_memory(art.cubin), sass.resource_usage(art.cubin)
