"""`run`: execute a Tile or Fragment IR kernel on the CPU, one program of the grid at a time.

The result says what ran -- the lane ("reference"), the kernel and a hash of
the IR text -- because the runtime never lies about what ran (DESIGN 3.5):
a caller comparing numbers can always tell a reference result from a GPU one.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from tessera.ir import diagnostics as D
from tessera.reference.args import bind_args, check_grid, find_kernel
from tessera.reference.interpreter import ReferenceInterpreter

LANE = "reference"


@dataclass(frozen=True)
class RunResult:
    """What ran and how.

    lane: always "reference" here (GPU launches report their own lane).
    kernel: the func.func's symbol name.
    ir_hash: sha256 of the module's printed IR text (the artifact this lane runs).
    grid: the launch grid as given, padded to 3-D.
    programs: how many programs ran (the grid's volume).
    ops_executed: IR ops interpreted, over all programs.
    elapsed_s: wall time of the grid loop.
    returns: each program's returned values, in run order (empty for kernels returning nothing).
    """

    lane: str
    kernel: str
    ir_hash: str
    grid: tuple[int, int, int]
    programs: int
    ops_executed: int
    elapsed_s: float
    returns: tuple[tuple, ...] = ()

    @property
    def artifact_hash(self) -> str:
        return self.ir_hash


def ir_hash(module: ModuleOp) -> str:
    return hashlib.sha256(str(module).encode()).hexdigest()


def _as_module(module) -> tuple[ModuleOp, object]:
    """(module, the TracedKernel it came from or None)."""
    if isinstance(module, ModuleOp):
        return module, None
    if isinstance(module, str):
        from tessera.ir.parse import parse_module

        return parse_module(module, "<reference.run>"), None
    from tessera.dsl.kernel import TracedKernel

    if isinstance(module, TracedKernel):
        return module.module, module
    raise D.TesseraError(D.REF_FUNC_NOT_FOUND, f"run() takes a TracedKernel, a ModuleOp or IR text, got "
                                               f"{type(module).__name__}",
                         hint="pass the traced kernel, or parse the IR with tessera.ir.parse.parse_module")


def _check_supported(kernel: func.FuncOp, interp: ReferenceInterpreter) -> None:
    """Refuse up front (before any output is written) an op the interpreter cannot run."""
    for op in kernel.body.walk():
        if not interp.supports(op):
            raise D.TesseraError(D.REF_OP_UNSUPPORTED, f"no reference implementation for {op.name}", op=op)
        if isinstance(op, func.CallOp):
            callee = interp.get_op_for_symbol(op.callee)
            if isinstance(callee, func.FuncOp) and callee is not kernel:
                _check_supported(callee, interp)


def run(module, grid, args, func_name: str | None = None, *, verify: bool = True) -> RunResult:
    """Run a kernel on the CPU reference interpreter, writing outputs into the caller's arrays.

    module: a TracedKernel (`kernel.trace(...)`), or a parsed ModuleOp (or
        its IR text) holding Tile or Fragment IR. A TracedKernel brings its
        argument specs, so dims traced with one symbol must be equal, as
        `CompiledKernel.launch` demands; a bare module has only its types, and
        its `?` dims are free.
    grid: an int or a tuple of 1 to 3 ints; programs run one after another,
        axis 0 fastest, and tile.program_id / tile.num_programs read the
        current coordinates (axes beyond the grid's rank: id 0, extent 1).
    args: one value per kernel parameter: numpy arrays for memrefs (dtype
        exactly the element type: ml_dtypes.bfloat16 for bf16, np.float16,
        np.float32, np.float64, np.int32, ...), Python ints for index/iN and
        Python floats for float scalars. Arrays are read and written in place.
    func_name: the func.func to run; may be omitted when the module has one.
    verify: verify the module first (coded IR_* errors) -- on by default.

    Bad input (unknown function, malformed grid, an op with no reference
    implementation, and every argument the compiled lane refuses: count,
    kind, dtype, rank, layout, static or symbolic dim, a dim or index scalar
    past 32 bits, an out-of-range scalar, a read-only output or one that
    shares memory with another argument -- `tessera.ir.argcheck`) raises a
    coded TesseraError naming the problem before any array is written. A
    failure while running raises REF_* errors located at the op; arrays may
    then hold partial results, as after a GPU fault.
    """
    module, traced = _as_module(module)
    if verify:
        from tessera.ir.verify import verify_module

        verify_module(module)
    kernel = find_kernel(module, func_name)
    dims = check_grid(grid)
    specs = traced.arg_specs if traced is not None and kernel is traced.func else None
    values = bind_args(kernel, args, specs)
    interp = ReferenceInterpreter.for_module(module)
    _check_supported(kernel, interp)
    digest = ir_hash(module)

    returns = []
    start = time.perf_counter()
    interp.grid = dims
    for z in range(dims[2]):
        for y in range(dims[1]):
            for x in range(dims[0]):
                interp.program_id = (x, y, z)
                try:
                    results = interp.call_op(kernel, values)
                except D.TesseraError as err:
                    if dims != (1, 1, 1):
                        err.message += f" (in program {(x, y, z)})"
                    raise
                except Exception as err:  # noqa: BLE001 - interpreter-internal failures still get a code
                    raise D.TesseraError(D.REF_EXEC_FAILED, f"@{kernel.sym_name.data} at program {(x, y, z)}: "
                                                            f"{type(err).__name__}: {err}", op=kernel) from err
                if results:
                    returns.append(tuple(results))
    elapsed = time.perf_counter() - start
    return RunResult(LANE, kernel.sym_name.data, digest, dims, dims[0] * dims[1] * dims[2],
                     interp.ops_executed, elapsed, tuple(returns))
