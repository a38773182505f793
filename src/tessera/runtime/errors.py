"""The runtime's one exception type: a coded error that says which kernel failed and why.

Strict dispatch (DESIGN.md section 3, lesson 5) means every load or launch
failure surfaces as a `RuntimeLaunchError` with a stable code, never as a
driver traceback and never as a result that claims the kernel ran.
"""

from __future__ import annotations

from tessera.ir.diagnostics import TesseraError


class RuntimeLaunchError(TesseraError):
    """RUNTIME_NO_DEVICE, RUNTIME_LOAD_FAILED, RUNTIME_ARG_INVALID or RUNTIME_LAUNCH_FAILED, located at the kernel."""

    def __init__(self, code, message, kernel: str | None = None, hint: str | None = None):
        super().__init__(code, message, hint=hint)
        self.kernel = kernel
        self.with_location(f"cuda:{kernel}" if kernel else "tessera.runtime")


def driver_error_name(err) -> str:
    """`CUDA_ERROR_NO_BINARY_FOR_GPU` for a CUresult enum member (or its int)."""
    return getattr(err, "name", None) or str(err)
