"""Tessera: a tile-centric GPU kernel compiler.

Kernels are Python tile programs traced into Tile IR (xDSL), lowered through
typed register fragments to NVIDIA target code, and checked on the CPU by a
reference interpreter that runs the same IR.
"""

__version__ = "0.1.0"

_DSL_NAMES = ("kernel", "Kernel", "TracedKernel", "KernelError", "tensor", "scalar", "TensorSpec", "ScalarSpec",
              "DType", "bf16", "f16", "f32", "f64", "i1", "i32", "index")
__all__ = [*_DSL_NAMES, "tl", "compile", "cdiv"]


def __getattr__(name: str):
    """Import the kernel surface on first use, so `tessera-opt` starts without numpy and the tracer."""
    if name == "tl":
        import tessera.tl as tl_module

        return tl_module
    if name in _DSL_NAMES:
        import tessera.dsl as dsl

        return getattr(dsl, name)
    if name == "compile":  # tessera.compile(traced, arch=...) -> CompiledKernel
        from tessera.compiler import compile as compile_kernel

        return compile_kernel
    if name == "cdiv":  # grids for kernel[grid](...): cdiv(n, BLOCK)
        from tessera.compiler.launcher import cdiv

        return cdiv
    if name == "TesseraPerformanceWarning":  # what tessera.compile warns with (tessera.compiler.report)
        from tessera.compiler.report import TesseraPerformanceWarning

        return TesseraPerformanceWarning
    if name == "ops":
        import tessera.ops as ops_module

        return ops_module
    raise AttributeError(f"module 'tessera' has no attribute {name!r}")
