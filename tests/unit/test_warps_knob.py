"""The warp grid as a compile knob (issue 17: warps were settable only through a pipeline string).

`tessera.compile(traced, arch, warps=(WM, WN))` (or `LaunchShape(warps=...)`, also for `kernel[grid](...,
launch_shape=...)`) reaches tile-to-fragments' `warps` option through the named pipeline: the kernel runs
WM * WN warps, compiles without local memory, and its emitted C++ matches float64 on the host emulator for
ragged shapes. A grid the tile does not split over is the pass's coded error; the default pipeline text
(hence every existing cache key) is unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

import tessera
from tessera.compiler.driver import lower
from tessera.compiler.launch_shape import LaunchShape
from tessera.ir import diagnostics as D
from tessera.kernels import gemm as G
from tessera.reference.oracles import error_bound, rel_error
from tessera.runtime.host_emulator import run_on_host
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import count_instructions, disassemble, resource_usage

T = tessera.tensor
TILE = dict(BM=128, BN=128, BK=32)


def _traced():
    specs = (T(("M", "K"), "f16"), T(("K", "N"), "f16"), T(("M", "N"), "f32"), None, None, tessera.scalar("f32"), None)
    return G.gemm.trace(*specs, **TILE, TRANS_A=False, TRANS_B=False, ACTIVATION="none")


@pytest.mark.parametrize("warps", [(4, 2), (2, 4), (1, 4)])
def test_compile_takes_the_warp_grid(warps):
    ck = tessera.compile(_traced(), "sm_90", warps=warps, stages=3)
    assert ck.emitted.num_threads == 32 * warps[0] * warps[1]
    usage = next(iter(resource_usage(ck.cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0
    assert count_instructions(disassemble(ck.cubin), "HMMA") > 0


@pytest.mark.parametrize("warps", [None, (4, 2), (1, 4)])
def test_the_warp_grid_keeps_the_numerics(warps):
    M, N, K = 200, 130, 96
    rng = np.random.default_rng(sum(warps or ()))
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    shape = LaunchShape(stages=2, warps=warps)
    module, _ = lower(_traced(), shape.pipeline("sm_90"), "sm_90")
    run_on_host(emit_cuda(module), [a, b, c, 1.0], G.grid(M, N, **TILE))
    assert rel_error(c, a.astype(np.float64) @ b.astype(np.float64)) <= error_bound("f16")


def test_a_grid_the_tile_does_not_split_over_is_a_coded_error():
    with pytest.raises(D.TesseraError) as err:
        tessera.compile(_traced(), "sm_90", warps=(3, 1))
    assert err.value.code is D.TILE_FRAGMENT_UNSUPPORTED and "warps [3, 1]" in str(err.value) and err.value.hint


def test_the_default_leaves_the_pipeline_text_alone():
    assert "warps" not in LaunchShape(stages=3).pipeline("sm_90")
    assert LaunchShape(warps=[4, 2]).warps == (4, 2)  # a JSON config's list
    assert LaunchShape(warps=(4, 2)).pipeline("sm_90").endswith(" warps=4,2}")
