"""Code generation back end: CUDA C++ text -> NVRTC cubin, and the SASS checks CI runs on it.

The IR -> CUDA C++ emitter lives beside these modules; this package's toolchain
layer needs no GPU: NVRTC and the disassemblers are pip packages.
"""

from tessera.target.nvidia.toolchain.nvrtc import (OPTION_TYPES, CodegenError, CompiledArtifact, compile_cuda, normalize_options,
                                   parse_arch, supported_archs, toolchain_versions)

_SASS = ("Instruction", "ResourceUsage", "count_instructions", "disassemble", "find_tool", "has_local_memory",
         "instructions", "resource_usage")

__all__ = [
    "OPTION_TYPES", "CodegenError", "CompiledArtifact", "compile_cuda", "normalize_options", "parse_arch",
    "supported_archs", "toolchain_versions",
    "Instruction", "ResourceUsage", "count_instructions", "disassemble", "find_tool", "has_local_memory",
    "instructions", "resource_usage",
]


def __getattr__(name: str):
    """The SASS readers on first use (a launch needs NVRTC's records, not the disassemblers)."""
    if name in _SASS:
        from tessera.target.nvidia.toolchain import sass

        return getattr(sass, name)
    raise AttributeError(f"module 'tessera.target.nvidia.toolchain' has no attribute {name!r}")
