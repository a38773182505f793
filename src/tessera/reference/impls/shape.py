"""Tile creation and reshaping: constant, splat, iota, broadcast, transpose, reshape, reduce, convert.

Tile values are never mutated, so constants and iotas are built once per op
(read-only arrays) and broadcast/transpose return numpy views.
"""

from __future__ import annotations

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from tessera.ir import tile_ops as T
from tessera.reference import numerics
from tessera.reference.values import fill_value, np_dtype


def _frozen(x: np.ndarray) -> np.ndarray:
    x.setflags(write=False)
    return x


def _constant(op: T.ConstantOp) -> np.ndarray:
    t = op.result.type
    dtype = np_dtype(t.element_type)
    return _frozen(np.full(t.get_shape(), fill_value(op.value.value.data, dtype), dtype=dtype))


def _iota(op: T.IotaOp) -> np.ndarray:
    t = op.result.type
    shape, axis = t.get_shape(), op.axis.data
    ramp = np.arange(shape[axis]).reshape([-1 if d == axis else 1 for d in range(len(shape))])
    return _frozen(np.broadcast_to(ramp, shape).astype(np_dtype(t.element_type)))


@register_impls
class ShapeFunctions(InterpreterFunctions):
    @impl(T.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: T.ConstantOp, args: PythonValues) -> PythonValues:
        return (interpreter.cached(op, lambda: _constant(op)),)

    @impl(T.IotaOp)
    def run_iota(self, interpreter: Interpreter, op: T.IotaOp, args: PythonValues) -> PythonValues:
        return (interpreter.cached(op, lambda: _iota(op)),)

    @impl(T.SplatOp)
    def run_splat(self, interpreter: Interpreter, op: T.SplatOp, args: PythonValues) -> PythonValues:
        shape, dtype = interpreter.cached(
            op, lambda: (op.result.type.get_shape(), np_dtype(op.result.type.element_type)))
        return (np.full(shape, fill_value(args[0], dtype), dtype=dtype),)

    @impl(T.BroadcastOp)
    def run_broadcast(self, interpreter: Interpreter, op: T.BroadcastOp, args: PythonValues) -> PythonValues:
        shape = interpreter.cached(op, lambda: op.result.type.get_shape())
        return (np.broadcast_to(args[0], shape),)

    @impl(T.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: T.TransposeOp, args: PythonValues) -> PythonValues:
        return (args[0].T,)

    @impl(T.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: T.ReshapeOp, args: PythonValues) -> PythonValues:
        shape = interpreter.cached(op, lambda: op.result.type.get_shape())
        return (np.reshape(args[0], shape),)

    @impl(T.ScanOp)
    def run_scan(self, interpreter: Interpreter, op: T.ScanOp, args: PythonValues) -> PythonValues:
        x = args[0]
        return (np.cumsum(x, axis=op.axis.data, dtype=x.dtype),)

    @impl(T.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: T.ReduceOp, args: PythonValues) -> PythonValues:
        return (numerics.reduce(op.kind.data, args[0], op.axis.data),)

    @impl(T.ConvertOp)
    def run_convert(self, interpreter: Interpreter, op: T.ConvertOp, args: PythonValues) -> PythonValues:
        dtype = interpreter.cached(op, lambda: np_dtype(op.result.type.element_type))
        return (numerics.convert(args[0], dtype),)
