"""SASS inspection: the checks CI runs on every cubin must see HMMA/HGMMA and catch local memory."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_samples import LOCAL_ARRAY, MMA, VECADD, WGMMA  # noqa: E402

from tessera.target.nvidia.toolchain import (CodegenError, compile_cuda, count_instructions, disassemble,  # noqa: E402
                             has_local_memory, instructions, resource_usage)


@pytest.fixture(scope="module", params=["sm_80", "sm_90"])
def mma_cubin(request):
    return compile_cuda(MMA, request.param).cubin


@pytest.fixture(scope="module")
def local_cubin():
    return compile_cuda(LOCAL_ARRAY, "sm_90").cubin


def test_mma_sync_kernel_shows_hmma_and_no_local_memory(mma_cubin):
    sass = disassemble(mma_cubin)
    assert count_instructions(sass, "HMMA") == 1
    assert count_instructions(sass, "HMMA.16816.F32.BF16") == 1
    assert count_instructions(sass, "HMMA", function="mma_16x8x16") == 1
    assert count_instructions(sass, "HGMMA") == 0
    assert not has_local_memory(mma_cubin) and not has_local_memory(sass)
    usage = resource_usage(mma_cubin)["mma_16x8x16"]
    assert usage.registers > 0 and usage.stack_bytes == 0 and usage.local_bytes == 0


def test_nvdisasm_agrees_with_cuobjdump(mma_cubin):
    sass = disassemble(mma_cubin, tool="nvdisasm")
    assert count_instructions(sass, "HMMA") == 1
    assert count_instructions(sass, "HMMA", function="mma_16x8x16") == 1


def test_local_array_kernel_is_caught(local_cubin):
    """The control for the no-local-memory check: a run-time-indexed array must trip it."""
    sass = disassemble(local_cubin)
    assert count_instructions(sass, "STL") > 0
    assert has_local_memory(sass) and has_local_memory(local_cubin)
    assert resource_usage(local_cubin)["local_array"].stack_bytes >= 256 * 4


def test_vecadd_has_no_tensor_core_instructions():
    sass = disassemble(compile_cuda(VECADD, "sm_90").cubin)
    assert count_instructions(sass, "HMMA") == 0 and count_instructions(sass, "FADD") >= 1


def test_sm90a_wgmma_shows_hgmma():
    art = compile_cuda(WGMMA, "sm_90a")
    sass = disassemble(art.cubin)
    assert ".target\tsm_90a" in sass or "sm_90a" in sass
    assert count_instructions(sass, "HGMMA") == 1
    assert count_instructions(sass, "HGMMA.64x8x16.F32.BF16") == 1
    assert count_instructions(sass, "WARPGROUP") >= 1  # wgmma.fence -> WARPGROUP.ARRIVE
    assert count_instructions(sass, "HMMA") == 0
    assert not has_local_memory(art.cubin)


def test_instruction_parser_reads_predicates_and_functions():
    sass = """
        Function : k
        /*0000*/                   LDC R1, c[0x0][0x28] ;   /* 0x00000a00ff017b82 */
        /*0010*/              @!P0 STL.128 [R1], R4 ;       /* 0x0000000401007387 */
        /*0020*/               @P1 HGMMA.64x8x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT, gsb0 ;
        Function : other
        /*0000*/                   EXIT ;
    """
    ins = instructions(sass)
    assert [(i.function, i.offset, i.predicate, i.opcode) for i in ins] == [
        ("k", 0, "", "LDC"), ("k", 16, "@!P0", "STL.128"), ("k", 32, "@P1", "HGMMA.64x8x16.F32.BF16"),
        ("other", 0, "", "EXIT")]
    assert has_local_memory(sass) and count_instructions(sass, "HGMMA", function="other") == 0
    assert not has_local_memory(sass.replace("STL.128", "STS.128"))


def test_unreadable_cubin_is_coded(mma_cubin):
    for bad in (b"not a cubin at all", mma_cubin[: len(mma_cubin) // 3]):
        with pytest.raises(CodegenError) as err:
            disassemble(bad)
        assert err.value.code.name == "CODEGEN_SASS_FAILED"
    with pytest.raises(CodegenError) as err:
        resource_usage("text, not bytes")
    assert err.value.code.name == "CODEGEN_SASS_FAILED"
