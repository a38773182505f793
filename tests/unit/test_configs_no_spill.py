"""Every configuration tessera.ops can pick compiles for sm_90 with tensor-core (or FFMA) code and no
local memory: the register budget is part of a config's correctness (DESIGN section 4)."""

from __future__ import annotations

import itertools

import pytest

import tessera
from tessera.target.nvidia.toolchain.sass import count_instructions, disassemble, resource_usage
from tessera.kernels import flash_attention as FA
from tessera.kernels import gemm as G
from tessera.kernels import linear_attention as LA
from tessera.ops import configs

T = tessera.tensor
SIZES = (1, 64, 65, 128, 4096)  # straddles every threshold in the config table


def gemm_configs():
    return sorted({configs.gemm_config(m, n, k) for m, n, k in itertools.product(SIZES, SIZES, SIZES)},
                  key=lambda c: (c.BM, c.BN, c.stages))


def no_spill(ck, instruction: str) -> None:
    usage = next(iter(resource_usage(ck.cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0, usage
    assert count_instructions(disassemble(ck.cubin), instruction) > 0


@pytest.mark.parametrize("cfg", gemm_configs(), ids=lambda c: f"{c.BM}x{c.BN}x{c.BK}s{c.stages}")
@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_gemm_configs_with_the_full_epilogue(cfg, dtype):
    specs = (T(("M", "K"), dtype), T(("K", "N"), dtype), T(("M", "N"), dtype), T((1, "N"), "f32"),
             T(("M", "N"), dtype), tessera.scalar("f32"), tessera.scalar("f32"))
    tk = G.gemm.trace(*specs, **cfg.meta(), ACTIVATION="gelu")
    no_spill(tessera.compile(tk, arch="sm_90", stages=cfg.stages if dtype != "f32" else 1),
             "HMMA" if dtype != "f32" else "FFMA")


@pytest.mark.parametrize("D", configs.HEAD_DIMS)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_configs(D, causal):
    cfg = configs.attention_config(4096, D)
    q, kv = T(("B", "H", "S", D), "bf16"), T(("B", "H_kv", "S_k", D), "bf16")
    tk = FA.flash_attention.trace(q, kv, kv, q, T(("B", "H", "S"), "f32"), tessera.scalar("f32"), CAUSAL=causal,
                                  **cfg.meta())
    no_spill(tessera.compile(tk, arch="sm_90", stages=cfg.stages), "HMMA")


@pytest.mark.parametrize("D", configs.HEAD_DIMS)
def test_linear_attention_configs(D):
    cfg = configs.linear_attention_config(D, D)
    x = T(("B", "H", "T", D), "bf16")
    tk = LA.linear_attention.trace(x, x, x, x, T((1, "H"), "f32"), **cfg.meta())
    no_spill(tessera.compile(tk, arch="sm_90", stages=cfg.stages), "HMMA")


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89"])
def test_every_16_bit_gemm_config_fits_each_archs_shared_memory(arch):
    """sm_86/sm_89 have 99 KiB per CTA: the 128 x 128 x 32 tile with 3 stages (124 KiB for bf16) was picked there
    and failed with NV_SMEM_OVERFLOW (found by benchmarks/emit_hashes.py); gemm_config(arch=) takes 64 x 128."""
    picked = {configs.gemm_config(m, n, k, arch, "bf16") for m, n, k in itertools.product(SIZES, SIZES, SIZES)}
    specs = (T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "bf16"), T((1, "N"), "f32"),
             T(("M", "N"), "bf16"), tessera.scalar("f32"), tessera.scalar("f32"))
    for cfg in sorted(picked, key=lambda c: (c.BM, c.BN, c.stages)):
        if cfg.stages == 1:
            continue  # the unpipelined tiles are at most the pipelined ones' size
        ck = tessera.compile(G.gemm.trace(*specs, **cfg.meta(), ACTIVATION="gelu"), arch=arch, stages=cfg.stages)
        assert ck.smem_bytes <= {"sm_80": 163, "sm_86": 99, "sm_89": 99}[arch] * 1024, (arch, cfg)
    assert configs.gemm_config(4096, 4096, 4096, "sm_86", "f32").BM == 128  # f32 tiles fit as they are
