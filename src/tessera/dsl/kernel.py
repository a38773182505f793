"""`@tessera.kernel` and tracing: a Python tile program specialised into one func.func.

Positional parameters are run-time arguments (tensors become memref
arguments, scalars index/i32/f32 arguments, and a None spec drops the
parameter from the func.func); keyword-only parameters are compile-time
meta-parameters: Python control flow on them unrolls at trace time.
`Kernel.trace` runs the (rewritten) body once on traced values and returns a
`TracedKernel` holding a verified module.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import io
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.printer import Printer

from tessera.dsl import builder as B
from tessera.dsl.errors import KernelError, from_ir_error
from tessera.dsl.rewrite import rewrite
from tessera.dsl.scalar import Scalar
from tessera.dsl.specs import ArgSpec, TensorSpec, spec_of
from tessera.dsl.tensor_arg import Tensor
from tessera.ir import diagnostics as D
from tessera.ir.verify import verify_module

_REQUIRED = inspect.Parameter.empty
LAUNCHER_MODULE = "tessera.compiler.launcher"  # kernel[grid](...): the back end's launcher


@dataclass
class TracedKernel:
    """One specialisation of a kernel: the module, what it was specialised on, and its argument order.

    `params` lists every run-time parameter in signature order; `arg_names`
    only those that are func.func arguments (a parameter traced with a None
    spec is not one). `meta` holds every meta-parameter, defaults included.
    """

    name: str
    module: ModuleOp
    params: tuple[str, ...]
    specs: dict[str, ArgSpec]
    meta: dict[str, object]
    source_file: str = field(default="", repr=False)

    @property
    def func(self) -> func.FuncOp:
        return self.module.body.block.first_op  # type: ignore[return-value]

    @property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(n for n in self.params if self.specs[n] is not None)

    @property
    def arg_specs(self) -> tuple:
        return tuple(self.specs[n] for n in self.arg_names)

    def func_args(self, *values, **named) -> list:
        """The func.func argument list for run-time values given per parameter (positionally or by name).

        Values for parameters traced as None must be None and are dropped.
        """
        if len(values) > len(self.params):
            raise KernelError(D.DSL_SIGNATURE, f"{self.name} takes {len(self.params)} run-time arguments, "
                                               f"got {len(values)}")
        bound = dict(zip(self.params, values))
        for k, v in named.items():
            if k not in self.params or k in bound:
                raise KernelError(D.DSL_SIGNATURE, f"{self.name}: unexpected or repeated argument '{k}'")
            bound[k] = v
        out = []
        for n in self.params:
            if n not in bound:
                raise KernelError(D.DSL_SIGNATURE, f"{self.name}: missing run-time argument '{n}'")
            if self.specs[n] is None:
                if bound[n] is not None:
                    raise KernelError(D.DSL_SIGNATURE, f"{self.name}: '{n}' was traced as None, so it takes None")
            else:
                out.append(bound[n])
        return out

    def ir_text(self, locations: bool = False) -> str:
        """The module as MLIR text; `locations=True` adds each op's loc(file:line:col)."""
        buf = io.StringIO()
        Printer(stream=buf, print_debuginfo=locations).print_op(self.module)
        return buf.getvalue() + "\n"


class Kernel:
    """A tile program. Launch it with `kernel[grid](*args, **meta)` (tessera.compiler.launcher), trace it with
    `.trace(*arg_specs, **meta)`; inside another kernel, calling it inlines it."""

    def __init__(self, fn, name: str | None = None, static_dims: dict | None = None):
        if not inspect.isfunction(fn):
            raise KernelError(D.DSL_SOURCE, f"@tessera.kernel decorates a def function, not {fn!r}")
        self.fn = fn
        self.name = name or fn.__name__
        where = (fn.__code__.co_filename, fn.__code__.co_firstlineno, 1)
        params, meta = [], {}
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise KernelError(D.DSL_SIGNATURE, f"kernel {self.name} has *{p.name}: a kernel's parameters are "
                                                   "named", where=where)
            if p.kind == p.KEYWORD_ONLY:
                meta[p.name] = p.default
            else:
                params.append(p)
        self.params: tuple[str, ...] = tuple(p.name for p in params)
        self._param_defaults = {p.name: p.default for p in params if p.default is not _REQUIRED}
        self.meta_defaults: dict[str, object] = {k: v for k, v in meta.items() if v is not _REQUIRED}
        self.meta_names: tuple[str, ...] = tuple(meta)
        self._rewritten = None
        self.static_dims = check_static_dims(self.name, self.params, static_dims or {}, where)
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<tessera.kernel {self.name}({', '.join(self.params)}; {', '.join(self.meta_names)})>"

    def _program(self):
        if self._rewritten is None:
            self._rewritten = rewrite(self.fn)
        return self._rewritten

    def __call__(self, *args, **kwargs):
        if B.active() is None:
            raise KernelError(D.DSL_KERNEL_CALL, f"{self.name} is a @tessera.kernel and cannot be called directly",
                              hint=f"launch it with {self.name}[grid](*args, **meta) (TESSERA_INTERPRET=1 runs that "
                                   "on the CPU), or trace it with .trace(*arg_specs, **meta)")
        return self._program()[0](*args, **kwargs)

    def __getitem__(self, grid):
        """`kernel[grid](*args, **meta)`: trace, compile (once per specialisation) and launch in one line.

        grid: 1-3 ints, or a function of the meta-parameters (a dict) returning them. The launcher
        belongs to the back end (tessera.compiler.launcher), found by name as targets are, so the
        front end imports no compiler.
        """
        return importlib.import_module(LAUNCHER_MODULE).Launch(self, grid)

    def trace(self, *args, **kwargs) -> TracedKernel:
        """Specialise on arg specs and meta-parameters and build the verified Tile IR module.

        Each positional argument is a spec for the matching run-time parameter:
        `tessera.tensor(shape, dtype)`, `tessera.scalar(dtype)`, a numpy array,
        a Python float/int, or None (the parameter is absent: the body sees
        None and the func.func has no such argument). Keyword arguments are
        meta-parameters (or run-time specs by name). Errors in the body raise
        KernelError located at the body line, with a traceback ending there.
        """
        try:
            return self._trace(args, kwargs)
        except KernelError as err:
            raise err.user_traceback() from None

    def _bind(self, args: tuple, kwargs: dict) -> tuple[dict, dict]:
        if len(args) > len(self.params):
            raise KernelError(D.DSL_SIGNATURE, f"{self.name} takes {len(self.params)} run-time arguments "
                                               f"({', '.join(self.params)}), got {len(args)}")
        values = dict(zip(self.params, args))
        meta = {}
        for k, v in kwargs.items():
            if k in self.params:
                if k in values:
                    raise KernelError(D.DSL_SIGNATURE, f"{self.name}: run-time argument '{k}' given twice")
                values[k] = v
            elif k in self.meta_names:
                meta[k] = v
            else:
                raise KernelError(D.DSL_SIGNATURE, f"{self.name} has no parameter '{k}' (run-time: "
                                                   f"{', '.join(self.params) or 'none'}; meta: "
                                                   f"{', '.join(self.meta_names) or 'none'})")
        missing = [p for p in self.params if p not in values and p not in self._param_defaults]
        if missing:
            raise KernelError(D.DSL_SIGNATURE, f"{self.name}: missing run-time argument spec(s) {', '.join(missing)}")
        missing_meta = [m for m in self.meta_names if m not in meta and m not in self.meta_defaults]
        if missing_meta:
            raise KernelError(D.DSL_SIGNATURE, f"{self.name}: missing meta-parameter(s) {', '.join(missing_meta)}",
                              hint="meta-parameters without a default must be given by keyword to trace()")
        specs = {p: spec_of(values[p] if p in values else self._param_defaults[p], p) for p in self.params}
        return specs, {**self.meta_defaults, **meta}

    def _trace(self, args: tuple, kwargs: dict) -> TracedKernel:
        specs, meta = self._bind(args, kwargs)
        program, def_line, def_col = self._program()
        names = [n for n in self.params if specs[n] is not None]
        state = B.TraceState(self.name, names, [specs[n].ir_type() for n in names])
        wrapped, block_args = [], iter(state.entry.args)
        for n in self.params:
            spec = specs[n]
            if spec is None:
                wrapped.append(None)
            elif isinstance(spec, TensorSpec):
                wrapped.append(Tensor(next(block_args), spec, n, state))
            else:
                wrapped.append(Scalar(next(block_args), state.root))
        filename = self.fn.__code__.co_filename
        with state.active():
            result = program(*wrapped, **meta)
        if result is not None:
            raise KernelError(D.DSL_KERNEL_RETURN, f"{self.name} returned {result!r}",
                              where=(filename, def_line, def_col))
        def_loc = FileLineColLoc(StringAttr(filename), IntAttr(def_line), IntAttr(def_col))
        module = state.finish(def_loc)
        try:
            verify_module(module)
        except D.TesseraError as err:
            raise from_ir_error(err) from None
        return TracedKernel(self.name, module, self.params, specs, meta, filename)


def check_static_dims(name: str, params, static_dims, where=None) -> dict[str, tuple[int, ...]]:
    """{param: sorted dims} from a static_dims mapping, or DSL_SIGNATURE naming what is wrong."""
    if not isinstance(static_dims, dict):
        raise KernelError(D.DSL_SIGNATURE, f"{name}: static_dims is a {type(static_dims).__name__}, not a dict "
                                           "{param: (dim, ...)}", where=where)
    out = {}
    for param, dims in static_dims.items():
        if param not in params:
            raise KernelError(D.DSL_SIGNATURE, f"{name}: static_dims names {param!r}, which is not a run-time "
                                               f"parameter ({', '.join(params)})", where=where)
        dims = (dims,) if isinstance(dims, int) else dims
        if not isinstance(dims, (tuple, list)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
            raise KernelError(D.DSL_SIGNATURE, f"{name}: static_dims[{param!r}] is {dims!r}; give dim indices "
                                               "(ints >= 0)", where=where)
        out[param] = tuple(sorted(set(dims)))
    return out


def kernel(fn=None, *, name: str | None = None, static_dims: dict | None = None):
    """Decorate a tile program: `@tessera.kernel` or `@tessera.kernel(name="gemm_bf16")`.

    `def f(A, B, C, alpha, *, BM=128, BN=128)`: A, B, C, alpha are run-time
    arguments; BM, BN are meta-parameters fixed per trace. The body uses
    `tessera.tl`; loops over `tl.range(...)` become scf.for.

    static_dims: {param: (dim, ...)}: the dims a one-line launch (`kernel[grid](...)`) bakes into the
    trace as static sizes, read off the arrays it is given (a tile shape such as (BLOCK_M, D) needs D
    static); every other dim stays symbolic. `.trace(...)` takes its specs as given.
    """
    if fn is None:
        return lambda f: Kernel(f, name, static_dims)
    return Kernel(fn, name, static_dims)
