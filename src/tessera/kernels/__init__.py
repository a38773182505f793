"""The shipped kernels, written as tile programs in the same surface users get.

Each module holds the `@tessera.kernel` tile program, `grid(...)` (the launch
grid from shapes and meta-parameters) and `reference_*`: the float64 oracle of
`tessera.reference.oracles` called with the kernel's argument conventions (one
reference per op, so a kernel and the interpreter's tests check against the same math).
"""

import importlib

__all__ = ["gemm", "flash_attention", "linear_attention", "KERNELS"]


def __getattr__(name: str):
    """Each kernel module on first use (they load the tracer); `KERNELS` maps op names to the kernels."""
    if name in ("gemm", "flash_attention", "linear_attention"):
        return importlib.import_module(f"{__name__}.{name}")
    if name == "KERNELS":
        return {k: getattr(importlib.import_module(f"{__name__}.{k}"), k)
                for k in ("gemm", "flash_attention", "linear_attention")}
    raise AttributeError(f"module 'tessera.kernels' has no attribute {name!r}")
