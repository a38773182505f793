"""The tracing kernel surface: `@kernel`, arg specs, `tl` and the traced kernel.

    @tessera.kernel
    def scale(X, Y, alpha, *, BM=64, BN=64):
        m0, n0 = tl.program_id(0) * BM, tl.program_id(1) * BN
        tl.store(Y, [m0, n0], tl.load(X, [m0, n0], (BM, BN)) * alpha)

    tk = scale.trace(tessera.tensor(("M", "N"), "f32"), tessera.tensor(("M", "N"), "f32"),
                     tessera.scalar("f32"), BM=32)
    print(tk.ir_text())
"""

from tessera.dsl import tl
from tessera.dsl.dtypes import DType, as_dtype, bf16, f16, f32, f64, i1, i32, index
from tessera.dsl.errors import KernelError
from tessera.dsl.kernel import Kernel, TracedKernel, kernel
from tessera.dsl.scalar import Scalar
from tessera.dsl.specs import ScalarSpec, TensorSpec, scalar, tensor
from tessera.dsl.tensor_arg import Tensor
from tessera.dsl.tile import Tile

__all__ = ["tl", "kernel", "Kernel", "TracedKernel", "KernelError", "tensor", "scalar", "TensorSpec", "ScalarSpec",
           "Tile", "Scalar", "Tensor", "DType", "as_dtype", "bf16", "f16", "f32", "f64", "i1", "i32", "index"]
