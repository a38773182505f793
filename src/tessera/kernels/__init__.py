"""The shipped kernels, written as tile programs in the same surface users get.

Each module holds the `@tessera.kernel` tile program, `grid(...)` (the launch
grid from shapes and meta-parameters) and `reference_*`: the float64 oracle of
`tessera.reference.oracles` called with the kernel's argument conventions (one
reference per op, so a kernel and the interpreter's tests check against the same math).
"""

from tessera.kernels import flash_attention, gemm, linear_attention

KERNELS = {
    "gemm": gemm.gemm,
    "flash_attention": flash_attention.flash_attention,
    "linear_attention": linear_attention.linear_attention,
}

__all__ = ["gemm", "flash_attention", "linear_attention", "KERNELS"]
