"""The reference interpreter: xDSL's `Interpreter` plus Tessera's op implementations.

`ReferenceInterpreter` keeps xDSL's region walking, scoping and function
calls, and changes two things about running one op:

* dispatch: a plain dict lookup per op type (xDSL's path also notifies
  listeners and re-checks operand counts on every op, which dominates a tile
  program's run time); and
* errors: an exception raised by an implementation becomes a coded
  `TesseraError` located at the op, instead of xDSL's generic diagnostic.

It also carries the current program id and grid (what tile.program_id and
tile.num_programs read) and a per-op cache for data derived once from an
op's attributes and types (shapes, dtypes, padding), so ops in a loop do not
re-derive them on every iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, OpImplResult
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Operation

from tessera.ir import diagnostics as D
from tessera.reference.impls.elementwise import ElementwiseFunctions
from tessera.reference.impls.fragments import FragmentFunctions
from tessera.reference.impls.grid import GridFunctions
from tessera.reference.impls.loops import ScfRefFunctions
from tessera.reference.impls.memory import TileMemoryFunctions
from tessera.reference.impls.mma import MmaFunctions
from tessera.reference.impls.scalar import ArithRefFunctions, MathRefFunctions, MemRefRefFunctions
from tessera.reference.impls.shape import ShapeFunctions
from tessera.reference.impls.staging import StagingFunctions


def implementation_sets() -> list[InterpreterFunctions]:
    """Every implementation set the reference interpreter registers, in registration order.

    xDSL's func implementations are reused as they are, and its scf ones with the for-loop step checked
    (impls/loops.py); arith is xDSL's with the float, i1 and missing ops
    overridden (see impls/scalar.py).
    """
    return [ScfRefFunctions(), FuncFunctions(), ArithRefFunctions(), MathRefFunctions(), MemRefRefFunctions(),
            GridFunctions(), TileMemoryFunctions(), MmaFunctions(), ElementwiseFunctions(), ShapeFunctions(),
            StagingFunctions(), FragmentFunctions()]


@dataclass
class ReferenceInterpreter(Interpreter):
    program_id: tuple[int, int, int] = (0, 0, 0)
    grid: tuple[int, int, int] = (1, 1, 1)
    ops_executed: int = 0
    op_cache: dict[Operation, Any] = field(default_factory=dict)
    _dispatch: dict[type, tuple[InterpreterFunctions, Callable]] = field(default_factory=dict)

    @classmethod
    def for_module(cls, module: ModuleOp) -> "ReferenceInterpreter":
        interp = cls(module, index_bitwidth=64)
        for impls in implementation_sets():
            interp.register_implementations(impls, override=True)
        interp._dispatch = dict(interp._impls._impl_dict)  # noqa: SLF001 - read once, then our fast path
        return interp

    def supports(self, op: Operation | type[Operation]) -> bool:
        """Whether an op (or op class) has a reference implementation."""
        return (op if isinstance(op, type) else type(op)) in self._dispatch

    def cached(self, op: Operation, build: Callable[[], Any]) -> Any:
        """Data derived from `op`'s static attributes/types, built on first use."""
        try:
            return self.op_cache[op]
        except KeyError:
            value = self.op_cache[op] = build()
            return value

    def _run_op(self, op: Operation, inputs: tuple[Any, ...]) -> OpImplResult:
        self.ops_executed += 1
        entry = self._dispatch.get(type(op))
        if entry is None:
            raise D.TesseraError(D.REF_OP_UNSUPPORTED, f"no reference implementation for {op.name}", op=op)
        ft, fn = entry
        try:
            return fn(ft, self, op, inputs)
        except D.TesseraError as err:
            if err.op is None:
                err.op = op
            raise
        except Exception as err:  # noqa: BLE001 - every failure becomes a located, coded diagnostic
            raise D.TesseraError(D.REF_EXEC_FAILED, f"{op.name}: {type(err).__name__}: {err}", op=op) from err
