"""scf.for with the step checked: a loop whose step is not positive is an error, as it is on the GPU.

xDSL's scf.for runs Python's `range(lb, ub, step)`: a zero step raises a bare
ValueError and a negative one silently runs backwards (or not at all), while
the emitted CUDA (`for (i = lb; i < ub; i += step)`) spins forever for both.
scf.for requires a positive step, so the reference refuses the others with a
coded error naming the loop.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.interpreter import Interpreter, PythonValues, impl, register_impls
from xdsl.interpreters.scf import ScfFunctions

from tessera.ir import diagnostics as D


@register_impls
class ScfRefFunctions(ScfFunctions):
    @impl(scf.ForOp)
    def run_for(self, interpreter: Interpreter, op: scf.ForOp, args: PythonValues) -> PythonValues:
        lb, ub, step, *carried = args
        if step <= 0:
            raise D.TesseraError(D.REF_LOOP_STEP, f"scf.for step is {step} at run time (bounds {lb} to {ub}): the "
                                                  "loop would never end on the GPU", op=op,
                                 hint="pass a positive step: scf.for (tl.range) counts up by a step > 0")
        values = tuple(carried)
        for i in range(lb, ub, step):
            values = interpreter.run_ssacfg_region(op.body, (i, *values), "for_loop")
        return values
