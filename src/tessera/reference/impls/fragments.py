"""Typed fragments: tile.fragment_pack/zero/mma/unpack/store over a warp grid.

A fragment value is a `Fragment` whose data is [wm | 1, wn | 1, rows, cols]
(see `tessera.reference.values.Fragment`). With `warps [wm, wn]`, warp (i, j)
owns rows offset + i*m of the source tile for roles a and acc (role b: no row
shift) and cols offset + j*n for roles b and acc (role a: no col shift). So a
packed `a` is [wm, 1, m, k], a packed `b` is [1, wn, k, n], an accumulator is
[wm, wn, m, n], and fragment_mma is one broadcast batched matmul whose product
uses the same numerics as tile.mma (`numerics.mma`). The `layout` and
`family` type parameters choose registers on the GPU and do not change values,
so the reference ignores them; the lane maps that realise them are checked by
the layouts tests.
"""

from __future__ import annotations

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from tessera.ir import diagnostics as D
from tessera.ir.fragment_ops import (
    FragmentMmaOp,
    FragmentPackOp,
    FragmentStoreOp,
    FragmentUnpackOp,
    FragmentZeroOp,
    footprint,
    warp_grid,
)
from tessera.reference import numerics
from tessera.reference.values import Fragment, np_dtype, to_dtype
from tessera.reference.windows import window_shape, write_window


def _plan(frag_type, warps_attr):
    """(role, rows, cols, wm, wn, dtype) of a fragment type under a warp grid."""
    rows, cols = frag_type.shape
    role = frag_type.role.data
    wm, wn = warp_grid(warps_attr) if warps_attr is not None else (1, 1)
    dtype = np_dtype(frag_type.acc if role == "acc" else frag_type.elem)
    return role, rows, cols, wm, wn, dtype


def _pack(op, src: np.ndarray, r0: int, c0: int, plan, height: int, width: int) -> Fragment:
    role, rows, cols, wm, wn, dtype = plan
    if r0 < 0 or c0 < 0 or r0 + height > src.shape[0] or c0 + width > src.shape[1]:
        raise D.TesseraError(D.REF_FRAGMENT_BOUNDS,
                             f"tile.fragment_pack: warps [{wm}, {wn}] cover rows {r0}..{r0 + height - 1}, cols "
                             f"{c0}..{c0 + width - 1}, outside the {src.shape[0]}x{src.shape[1]} source tile", op=op)
    block = src[r0:r0 + height, c0:c0 + width]
    if role == "a":
        data = block.reshape(wm, 1, rows, cols)
    elif role == "b":
        data = block.reshape(rows, 1, wn, cols).transpose(1, 2, 0, 3)
    else:
        data = block.reshape(wm, rows, wn, cols).transpose(0, 2, 1, 3)
    out = to_dtype(data, dtype)
    return Fragment(out.copy() if out.dtype == src.dtype else out, (wm, wn))


def _expand(op, frag: Fragment, wm: int, wn: int) -> np.ndarray:
    """The fragment's data broadcast to the full [wm, wn, rows, cols] grid."""
    fm, fn = frag.warp_dims()
    if (frag.grid is not None and frag.grid != (wm, wn)) or fm not in (1, wm) or fn not in (1, wn):
        built = list(frag.grid or (fm, fn))
        raise D.TesseraError(D.REF_WARP_GRID_MISMATCH,
                             f"{op.name}: the fragment was built for warps {built}, not warps [{wm}, {wn}]", op=op)
    return np.broadcast_to(frag.data, (wm, wn) + frag.data.shape[2:])


def unpack(op, frag: Fragment, plan) -> np.ndarray:
    """Reassemble the warps' matrices into the tile they cover (the warp grid's footprint)."""
    role, rows, cols, wm, wn, _ = plan
    full = _expand(op, frag, wm, wn)
    if role == "a":
        return full[:, 0].reshape(wm * rows, cols)
    if role == "b":
        return full[0].transpose(1, 0, 2).reshape(rows, wn * cols)
    return full.transpose(0, 2, 1, 3).reshape(wm * rows, wn * cols)


@register_impls
class FragmentFunctions(InterpreterFunctions):
    @impl(FragmentPackOp)
    def run_pack(self, interpreter: Interpreter, op: FragmentPackOp, args: PythonValues) -> PythonValues:
        src, r0, c0 = args
        if op.result.type.layout.data == "col":  # the source holds the operand's transpose (B as N x K)
            src, r0, c0 = src.T, c0, r0
        plan, (height, width) = interpreter.cached(
            op, lambda: (_plan(op.result.type, op.warps), footprint(op.result.type, warp_grid(op.warps))))
        return (_pack(op, src, r0, c0, plan, height, width),)

    @impl(FragmentZeroOp)
    def run_zero(self, interpreter: Interpreter, op: FragmentZeroOp, args: PythonValues) -> PythonValues:
        def build() -> Fragment:
            _, rows, cols, _, _, dtype = _plan(op.result.type, None)
            data = np.zeros((1, 1, rows, cols), dtype=dtype)
            data.setflags(write=False)
            return Fragment(data)
        return (interpreter.cached(op, build),)

    @impl(FragmentMmaOp)
    def run_mma(self, interpreter: Interpreter, op: FragmentMmaOp, args: PythonValues) -> PythonValues:
        a, b, acc = args
        grids = {f.grid for f in args if f.grid is not None}
        if len(grids) > 1:
            names = ", ".join(f"{n} warps {list(f.grid)}" for n, f in zip("a b acc".split(), args) if f.grid)
            raise D.TesseraError(D.REF_WARP_GRID_MISMATCH, f"tile.fragment_mma: operands of different warp grids "
                                                           f"meet ({names})", op=op)
        return (Fragment(numerics.mma(a.data, b.data, acc.data), grids.pop() if grids else None),)

    @impl(FragmentUnpackOp)
    def run_unpack(self, interpreter: Interpreter, op: FragmentUnpackOp, args: PythonValues) -> PythonValues:
        plan = interpreter.cached(op, lambda: _plan(op.source.type, op.warps))
        return (unpack(op, args[0], plan),)

    @impl(FragmentStoreOp)
    def run_store(self, interpreter: Interpreter, op: FragmentStoreOp, args: PythonValues) -> PythonValues:
        frag, array, *offsets = args
        plan, window = interpreter.cached(op, lambda: (
            _plan(op.value.type, op.warps),
            window_shape(len(op.dest.type.get_shape()), footprint(op.value.type, warp_grid(op.warps)))))
        write_window(array, tuple(offsets), window, unpack(op, frag, plan))
        return ()
