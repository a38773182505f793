"""tile.mma: acc + a @ b on whole tiles (numerics in `tessera.reference.numerics.mma`)."""

from __future__ import annotations

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from tessera.ir.tile_ops import MmaOp
from tessera.reference import numerics


@register_impls
class MmaFunctions(InterpreterFunctions):
    @impl(MmaOp)
    def run_mma(self, interpreter: Interpreter, op: MmaOp, args: PythonValues) -> PythonValues:
        a, b, acc = args
        return (numerics.mma(a, b, acc),)
