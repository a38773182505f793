"""DESIGN lesson 2 as a gate: every named pipeline x every shipped kernel (as tessera.ops configures
them) x every mma.sync arch ends with no `tile.*` op, and emission takes the result. A pipeline
missing the lowering is caught (the control), and lesson 4: an injected option works only
alongside a bogus one that must fail."""

from __future__ import annotations

import pytest

import tessera
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.ir import diagnostics as D
from tessera.ir.dialect import make_context
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.kernels import linear_attention as LA
from tessera.ops import configs
from tessera.passes.pipeline import named_pipelines, parse_pipeline

T = tessera.tensor


def shipped_kernels():
    """name -> traced kernel, in the configurations tessera.ops picks."""
    g = configs.gemm_config(4096, 4096, 4096)
    gemm_specs = (T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "bf16"), T((1, "N"), "f32"),
                  T(("M", "N"), "bf16"), tessera.scalar("f32"), tessera.scalar("f32"))
    q, kv = T(("B", "H", "S", 128), "bf16"), T(("B", "H_kv", "S_k", 128), "bf16")
    x = T(("B", "H", "T", 128), "bf16")
    f32 = (T(("M", "K"), "f32"), T(("K", "N"), "f32"), T(("M", "N"), "f32"), None, None, tessera.scalar("f32"), None)
    return {
        "gemm-bf16-epilogue": G.gemm.trace(*gemm_specs, **g.meta(), ACTIVATION="silu", TRANS_B=True),
        "gemm-f32": G.gemm.trace(*f32, **configs.gemm_config(64, 64, 64).meta()),
        "flash-attention-causal": FA.flash_attention.trace(q, kv, kv, q, T(("B", "H", "S"), "f32"),
                                                           tessera.scalar("f32"), CAUSAL=True,
                                                           **configs.attention_config(4096, 128).meta()),
        "linear-attention": LA.linear_attention.trace(x, x, x, x, T((1, "H"), "f32"),
                                                      **configs.linear_attention_config(128, 128).meta()),
    }


KERNELS = shipped_kernels()
PIPELINES = sorted(named_pipelines())


def run_pipeline(text: str, traced):
    module = traced.module.clone()
    parse_pipeline(text).apply(make_context(), module)
    return module


def test_there_is_a_named_lowering_pipeline():
    assert "tessera-lower-to-nv" in PIPELINES


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_no_tile_op_reaches_emission(pipeline, kernel, arch):
    module = run_pipeline(f"{pipeline}{{arch={arch}}}", KERNELS[kernel])
    leftover = sorted({op.name for op in module.walk() if op.name.startswith("tile.")})
    assert leftover == [], f"{pipeline} leaves {leftover} in {kernel}"
    assert "__global__" in emit_cuda(module).source


def test_control_a_pipeline_without_the_lowering_is_refused_at_emission():
    module = run_pipeline("tile-to-fragments{arch=sm_90}", KERNELS["gemm-bf16-epilogue"])
    assert any(op.name.startswith("tile.") for op in module.walk())
    with pytest.raises(D.TesseraError) as err:
        emit_cuda(module)
    assert err.value.code is D.EMIT_UNKNOWN_OP


@pytest.mark.parametrize("injected", ["stages=3", "warps=2,2"])
def test_an_injected_option_is_honoured_and_a_bogus_twin_fails(injected):
    good = f"tessera-lower-to-nv{{arch=sm_90 {injected}}}"
    module = run_pipeline(good, KERNELS["gemm-bf16-epilogue"])
    assert not any(op.name.startswith("tile.") for op in module.walk())
    with pytest.raises(D.TesseraError) as err:
        parse_pipeline(f"tessera-lower-to-nv{{arch=sm_90 {injected} stagez=3}}")
    assert err.value.code is D.OPT_OPTION_UNKNOWN and "stagez" in err.value.message
