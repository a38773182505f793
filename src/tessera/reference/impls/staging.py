"""Shared-memory staging: tile.alloc, tile.view, tile.async_copy, tile.wait.

* tile.alloc gives a fresh mutable numpy buffer each time it runs (once per
  program when it sits outside the loops, as kernels place it); its contents
  persist across loop iterations until overwritten. A fresh buffer is filled
  with a poison pattern (nan, or the most negative integer), like
  uninitialised shared memory, so a pack that reads before any copy shows up
  in the numbers instead of passing as zeros.
* tile.view is lazy: a `View` window of the global array, nothing is read.
* tile.async_copy copies the window (padding past the edges) into the
  buffer immediately and returns a `Token`; the reference has no
  concurrency, so completion is eager.
* tile.wait checks that it got tokens from async copies and does nothing else.
"""

from __future__ import annotations

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import AllocOp, AsyncCopyOp, ViewOp, WaitOp
from tessera.reference.values import Token, View, fill_value, is_float_dtype, np_dtype
from tessera.reference.windows import read_window, window_shape


def _poison(dtype: np.dtype):
    if is_float_dtype(dtype):
        return fill_value(float("nan"), dtype)
    return False if dtype == np.bool_ else np.iinfo(dtype).min


def _alloc_plan(op: AllocOp):
    t = op.result.type
    dtype = np_dtype(t.element_type)
    return t.get_shape(), dtype, _poison(dtype)


@register_impls
class StagingFunctions(InterpreterFunctions):
    @impl(AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: AllocOp, args: PythonValues) -> PythonValues:
        shape, dtype, poison = interpreter.cached(op, lambda: _alloc_plan(op))
        return (np.full(shape, poison, dtype=dtype),)

    @impl(ViewOp)
    def run_view(self, interpreter: Interpreter, op: ViewOp, args: PythonValues) -> PythonValues:
        array, *offsets = args
        shape, window = interpreter.cached(op, lambda: (
            op.result.type.get_shape(), window_shape(len(op.source.type.get_shape()), op.result.type.get_shape())))
        return (View(array, tuple(offsets), window, shape),)

    @impl(AsyncCopyOp)
    def run_async_copy(self, interpreter: Interpreter, op: AsyncCopyOp, args: PythonValues) -> PythonValues:
        view, buffer = args
        pad = interpreter.cached(op, lambda: fill_value(op.padding.value.data, buffer.dtype))
        buffer[...] = read_window(view.array, view.offsets, view.window, view.shape, pad)
        return (Token(op),)

    @impl(WaitOp)
    def run_wait(self, interpreter: Interpreter, op: WaitOp, args: PythonValues) -> PythonValues:
        for i, token in enumerate(args):
            if not isinstance(token, Token):
                raise D.TesseraError(D.REF_TOKEN_INVALID, f"tile.wait: operand #{i} is {type(token).__name__}, "
                                                          "not an async-copy token", op=op)
        return ()
