"""The shipped kernels, written as tile programs in the same surface users get.

Each module holds the `@tessera.kernel` tile program, `grid(...)` (the launch
grid from shapes and meta-parameters) and a float64 numpy `reference_*`.
"""

from tessera.kernels import flash_attention, gemm, linear_attention

KERNELS = {
    "gemm": gemm.gemm,
    "flash_attention": flash_attention.flash_attention,
    "linear_attention": linear_attention.linear_attention,
}

__all__ = ["gemm", "flash_attention", "linear_attention", "KERNELS"]
