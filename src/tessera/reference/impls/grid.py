"""tile.program_id / tile.num_programs: the coordinates of the program being run.

The runner runs the grid one program at a time and sets
`interpreter.program_id` and `interpreter.grid` (always 3-D: axes a launch
does not use have id 0 and extent 1, as in CUDA).
"""

from __future__ import annotations

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from tessera.ir.tile_ops import NumProgramsOp, ProgramIdOp


@register_impls
class GridFunctions(InterpreterFunctions):
    @impl(ProgramIdOp)
    def run_program_id(self, interpreter: Interpreter, op: ProgramIdOp, args: PythonValues) -> PythonValues:
        return (interpreter.program_id[op.axis.data],)

    @impl(NumProgramsOp)
    def run_num_programs(self, interpreter: Interpreter, op: NumProgramsOp, args: PythonValues) -> PythonValues:
        return (interpreter.grid[op.axis.data],)
