"""Elementwise tile ops, tile.cmp and tile.select: one table-driven implementation.

The op name selects the numpy function (tables in `numerics`); the result's
element type, derived once per op, decides the rounding.
"""

from __future__ import annotations

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from tessera.ir import tile_ops as T
from tessera.reference import numerics
from tessera.reference.values import np_dtype


def _run_elementwise(self, interpreter: Interpreter, op, args: PythonValues) -> PythonValues:
    dtype = interpreter.cached(op, lambda: np_dtype(op.result.type.element_type))
    return (numerics.elementwise(op.name, args, dtype),)


@register_impls
class ElementwiseFunctions(InterpreterFunctions):
    run_add = impl(T.AddOp)(_run_elementwise)
    run_sub = impl(T.SubOp)(_run_elementwise)
    run_mul = impl(T.MulOp)(_run_elementwise)
    run_div = impl(T.DivOp)(_run_elementwise)
    run_max = impl(T.MaxOp)(_run_elementwise)
    run_min = impl(T.MinOp)(_run_elementwise)
    run_neg = impl(T.NegOp)(_run_elementwise)
    run_abs = impl(T.AbsOp)(_run_elementwise)
    run_exp = impl(T.ExpOp)(_run_elementwise)
    run_exp2 = impl(T.Exp2Op)(_run_elementwise)
    run_log = impl(T.LogOp)(_run_elementwise)
    run_sqrt = impl(T.SqrtOp)(_run_elementwise)
    run_rsqrt = impl(T.RsqrtOp)(_run_elementwise)
    run_tanh = impl(T.TanhOp)(_run_elementwise)
    run_erf = impl(T.ErfOp)(_run_elementwise)

    @impl(T.CmpOp)
    def run_cmp(self, interpreter: Interpreter, op: T.CmpOp, args: PythonValues) -> PythonValues:
        return (numerics.compare(op.predicate.data, args[0], args[1]),)

    @impl(T.SelectOp)
    def run_select(self, interpreter: Interpreter, op: T.SelectOp, args: PythonValues) -> PythonValues:
        cond, x, y = args
        return (np.where(cond, x, y),)
