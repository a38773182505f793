"""tile.load / tile.store / tile.masked_store: whole tiles between global arrays and registers, with ragged edges.

Offsets index every memref dim and the tile covers the trailing dims; the
boundary rule (pad on read, drop on write, negative offsets included) lives
in `tessera.reference.windows`.
"""

from __future__ import annotations

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from tessera.ir.tile_ops import AtomicAddOp, LoadOp, MaskedStoreOp, StoreOp
from tessera.reference.values import fill_value, np_dtype
from tessera.reference.windows import add_window, read_window, window_shape, write_window, write_window_masked


def _load_plan(op: LoadOp):
    t = op.result.type
    shape = t.get_shape()
    window = window_shape(len(op.source.type.get_shape()), shape)
    return shape, window, fill_value(op.padding.value.data, np_dtype(t.element_type))


@register_impls
class TileMemoryFunctions(InterpreterFunctions):
    @impl(LoadOp)
    def run_load(self, interpreter: Interpreter, op: LoadOp, args: PythonValues) -> PythonValues:
        array, *offsets = args
        shape, window, pad = interpreter.cached(op, lambda: _load_plan(op))
        return (read_window(array, tuple(offsets), window, shape, pad),)

    @impl(StoreOp)
    def run_store(self, interpreter: Interpreter, op: StoreOp, args: PythonValues) -> PythonValues:
        tile, array, *offsets = args
        window = interpreter.cached(
            op, lambda: window_shape(len(op.dest.type.get_shape()), op.value.type.get_shape()))
        write_window(array, tuple(offsets), window, tile)
        return ()

    @impl(MaskedStoreOp)
    def run_masked_store(self, interpreter: Interpreter, op: MaskedStoreOp, args: PythonValues) -> PythonValues:
        tile, mask, array, *offsets = args
        window = interpreter.cached(
            op, lambda: window_shape(len(op.dest.type.get_shape()), op.value.type.get_shape()))
        write_window_masked(array, tuple(offsets), window, tile, mask)
        return ()

    @impl(AtomicAddOp)
    def run_atomic_add(self, interpreter: Interpreter, op: AtomicAddOp, args: PythonValues) -> PythonValues:
        tile, array, *rest = args
        offsets, mask = (rest[:-1], rest[-1]) if op.mask is not None else (rest, None)
        window = interpreter.cached(
            op, lambda: window_shape(len(op.dest.type.get_shape()), op.value.type.get_shape()))
        add_window(array, tuple(offsets), window, tile, mask)
        return ()
