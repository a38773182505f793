"""Reference semantics of the nv dialect: run lowered kernels on the CPU, all threads of a CTA in lockstep.

A per-thread register vector is a numpy array [threads, N]; scalars are
uniform Python/numpy values; shared memory is one byte array laid out by
the `nv.alloc_shared` offsets, so aliasing between scratch uses is real.
CTAs run one after another (grid-sequential). Fragment ops read the lane-map
*tables* (not the emitter's derived formulas) and nv.mma_sync runs
`tessera.layouts.emulate.warp_tile_mma`, so a wrong index or layout shows up
as a wrong number.

Two things lockstep execution would hide are modelled explicitly:
* cp.async data lands only at the nv.cp_async_wait that covers its group;
  reading the destination earlier is an error;
* a race check: within one barrier interval, a shared byte written by one
  thread and read or written by another (or read by one and then written by
  another) is an error naming both ops. It checks the barriers that
  lower-tile-to-nv placed and `nv_barriers` kept.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp

from tessera.ir.types import type_name
from tessera.target.nvidia.emulate.nv_ir_ops import IMPLS
from tessera.target.nvidia.emulate.nv_state import CTA, NvRuntimeError, dtype_of

__all__ = ["NvRuntimeError", "run_kernel"]


def run_kernel(module: ModuleOp, args, grid, name: str | None = None) -> None:
    """Run the lowered kernel over `grid` (1-3 ints) CTA by CTA; memref arguments (numpy arrays) are updated in place.

    `args` follows the func.func signature: numpy arrays for memrefs (dtype as
    the memref's element type), Python ints/floats for scalars.
    """
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks
               and (name is None or op.sym_name.data == name)]
    if len(kernels) != 1:
        raise NvRuntimeError(f"expected one kernel{f' named {name}' if name else ''}, found {len(kernels)}")
    kernel = kernels[0]
    params = kernel.body.block.args
    if len(args) != len(params):
        raise NvRuntimeError(f"{len(args)} arguments for {len(params)} parameters")
    bound = {}
    for p, a in zip(params, args):
        if isinstance(p.type, MemRefType):
            if not isinstance(a, np.ndarray) or a.dtype != dtype_of(p.type.element_type):
                raise NvRuntimeError(f"argument {p.name_hint}: expected a numpy array of {type_name(p.type.element_type)}")
        bound[p] = a
    grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                CTA(kernel, bound, (x, y, z), grid, IMPLS).run(kernel.body.block.ops)
