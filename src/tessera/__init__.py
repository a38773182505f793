"""Tessera: a tile-centric GPU kernel compiler.

Kernels are Python tile programs traced into Tile IR (xDSL), lowered through
typed register fragments to NVIDIA target code, and checked on the CPU by a
reference interpreter that runs the same IR.
"""

__version__ = "0.1.0"

import sys as _sys

from tessera.dsl import (  # noqa: E402 - the kernel surface is the package's front door
    DType,
    Kernel,
    KernelError,
    ScalarSpec,
    TensorSpec,
    TracedKernel,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i32,
    index,
    kernel,
    scalar,
    tensor,
    tl,
)

# `import tessera.tl as tl` and `from tessera import tl` name the same module.
_sys.modules.setdefault("tessera.tl", tl)

__all__ = ["kernel", "Kernel", "TracedKernel", "KernelError", "tensor", "scalar", "TensorSpec", "ScalarSpec", "DType",
           "tl", "bf16", "f16", "f32", "f64", "i1", "i32", "index"]
