"""`kernel[grid](*args, **meta)`: trace, compile and launch a user kernel in one line, the Triton way.

    @tessera.kernel
    def add(X, Y, Z, *, BLOCK=1024):
        i = tl.program_id(0) * BLOCK
        tl.store(Z, [i], tl.load(X, [i], (BLOCK,)) + tl.load(Y, [i], (BLOCK,)))

    add[lambda meta: (tessera.cdiv(n, meta["BLOCK"]),)](x, y, z)        # or add[(8,)](x, y, z, BLOCK=512)

Arguments are the kernel's run-time parameters, in order or by name: arrays
(torch tensors, cupy / __cuda_array_interface__ arrays, numpy arrays) and
Python or numpy scalars; keyword-only parameters of the kernel are its
meta-parameters. A call specialises on what the trace needs: each array's
dtype and rank (dims stay symbolic, so every size shares one compile), each
scalar's type, each absent (None) argument, the meta-parameters, the lane and
the arch. Alignment and divisibility are not part of the key: the emitted
code tests pointer and pitch alignment at run time and takes the vectorised
path where it holds, and tile edges are masked, so a new size never
recompiles. Each specialisation is traced and compiled once per process (and
its cubin cached on disk by `tessera.compile`).

Lanes: `lane="cuda"` (the GPU; numpy arrays are copied in and out and the call
waits) or `lane="reference"` (the CPU reference interpreter running the same
traced IR, writing numpy arrays and CPU torch tensors in place). The default
is "cuda", or "reference" when the environment sets TESSERA_INTERPRET=1, so
the exact code that runs on the GPU can be debugged on a laptop. Without a GPU
the cuda lane raises RUNTIME_NO_DEVICE: there is no silent fallback.

Returns the lane's record: the runtime's LaunchResult (artifact hash, arch)
or the interpreter's RunResult (IR hash, programs run).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tessera.compiler import arrays
from tessera.compiler.driver import compile_cached
from tessera.compiler.launch_shape import LaunchShape
from tessera.dsl.errors import frame_position
from tessera.dsl.kernel import Kernel, check_static_dims
from tessera.dsl.specs import TensorSpec, spec_of, tensor
from tessera.ir import diagnostics as D

INTERPRET_ENV = "TESSERA_INTERPRET"
LANES = ("cuda", "reference")
LAUNCH_KEYWORDS = ("lane", "stream", "arch", "launch_shape", "static_dims")
_traced: dict = {}  # (kernel, specs, meta) -> TracedKernel, for the reference lane


def cdiv(a: int, b: int) -> int:
    """Ceiling division, for grids: cdiv(n, BLOCK) programs cover n elements."""
    return -(-a // b)


def default_lane() -> str:
    """'reference' when TESSERA_INTERPRET is set to 1 (or true/yes/on), else 'cuda'."""
    value = os.environ.get(INTERPRET_ENV, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return "cuda"
    if value in ("1", "true", "yes", "on"):
        return "reference"
    raise _invalid(f"{INTERPRET_ENV}={os.environ[INTERPRET_ENV]!r} is neither 1 nor 0",
                   hint=f"set {INTERPRET_ENV}=1 to run kernel[grid](...) on the reference interpreter, 0 or unset "
                        "for the GPU")


def _invalid(message: str, hint: str | None = None) -> D.TesseraError:
    return D.TesseraError(D.COMPILE_LAUNCH_INVALID, message, hint=hint)


@dataclass(frozen=True)
class Launch:
    """A kernel bound to its grid (`kernel[grid]`); calling it runs the kernel."""

    kernel: Kernel
    grid: object

    def __call__(self, *args, lane: str | None = None, stream=None, arch: str | None = None,
                 launch_shape: LaunchShape | None = None, static_dims: dict | None = None, **kwargs):
        try:
            return launch(self.kernel, self.grid, args, kwargs, lane=lane, stream=stream, arch=arch,
                          launch_shape=launch_shape, static_dims=static_dims)
        except D.TesseraError as err:
            if err.location is None:  # a launch problem: point at the line that launched
                file, line, col = frame_position(sys._getframe(1))
                err.with_location(f"{file}:{line}:{col}")
            raise err.with_traceback(None) from None


def launch(kernel: Kernel, grid, args: tuple, kwargs: dict, *, lane: str | None = None, stream=None,
           arch: str | None = None, launch_shape: LaunchShape | None = None, static_dims: dict | None = None):
    """Run `kernel` over `grid` on `args` (see the module docstring); the lane's LaunchResult / RunResult."""
    clash = [n for n in (*kernel.params, *kernel.meta_names) if n in LAUNCH_KEYWORDS]
    if clash:
        raise _invalid(f"kernel {kernel.name} has a parameter named {clash[0]!r}, which kernel[grid](...) keeps for "
                       "itself", hint=f"rename it: {', '.join(LAUNCH_KEYWORDS)} are launch keywords")
    lane = default_lane() if lane is None else lane
    if lane not in LANES:
        raise _invalid(f"lane={lane!r} is not one of {', '.join(map(repr, LANES))}",
                       hint=f"pass lane='cuda' (the GPU) or lane='reference' (the CPU interpreter), or set "
                            f"{INTERPRET_ENV}=1")
    values, meta = _bind(kernel, args, kwargs)
    static = {**kernel.static_dims, **check_static_dims(kernel.name, kernel.params, static_dims or {})}
    specs = tuple(_spec(values[p], p, static.get(p, ())) for p in kernel.params)
    full_meta = {**kernel.meta_defaults, **meta}
    dims = _grid(kernel, grid, full_meta)
    if lane == "reference":
        from tessera.reference.runner import run
        key = (kernel, specs, tuple(sorted(meta.items(), key=lambda kv: kv[0])))
        traced = _traced.get(key)
        if traced is None:
            traced = _traced[key] = kernel.trace(*specs, **meta)
        host = [_host_array(values[p], p) for p in traced.arg_names]
        return run(traced, dims, host)
    if arch is None:
        from tessera.compiler.driver import device_arch
        try:
            arch = device_arch()
        except D.TesseraError as err:
            if err.code is D.RUNTIME_NO_DEVICE:
                raise D.TesseraError(D.RUNTIME_NO_DEVICE, f"{kernel.name}[grid](...) runs on the GPU and there is "
                                                          f"none ({err.message})",
                                     hint=f"set {INTERPRET_ENV}=1 or pass lane='reference' to run it on the CPU "
                                          "reference interpreter") from None
            raise
    ck = compile_cached(kernel, specs, meta, arch=arch, shape=launch_shape)
    return ck.launch(dims, [values[p] for p in ck.traced.arg_names], stream=stream)


def _bind(kernel: Kernel, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """(run-time values by parameter, meta-parameters given) with the kernel's coded signature errors."""
    if len(args) > len(kernel.params):
        raise D.TesseraError(D.DSL_SIGNATURE, f"{kernel.name} takes {len(kernel.params)} run-time arguments "
                                              f"({', '.join(kernel.params)}), got {len(args)}")
    values, meta = dict(zip(kernel.params, args)), {}
    for k, v in kwargs.items():
        if k in kernel.params:
            if k in values:
                raise D.TesseraError(D.DSL_SIGNATURE, f"{kernel.name}: run-time argument '{k}' given twice")
            values[k] = v
        elif k in kernel.meta_names:
            meta[k] = v
        else:
            raise D.TesseraError(D.DSL_SIGNATURE, f"{kernel.name} has no parameter '{k}' (run-time: "
                                                  f"{', '.join(kernel.params) or 'none'}; meta: "
                                                  f"{', '.join(kernel.meta_names) or 'none'}; launch: "
                                                  f"{', '.join(LAUNCH_KEYWORDS)})")
    for p in kernel.params:
        if p not in values:
            if p not in kernel._param_defaults:
                raise D.TesseraError(D.DSL_SIGNATURE, f"{kernel.name}: missing run-time argument '{p}'")
            values[p] = kernel._param_defaults[p]
    return values, meta


def _spec(value, param: str, static: tuple[int, ...] = ()):
    """The trace spec of one run-time value: an array's dtype and rank (dims symbolic but for `static`,
    which take the array's sizes), a scalar's type."""
    if value is None or not hasattr(value, "shape") or (isinstance(value, np.ndarray) and not static):
        spec = spec_of(value, param)
        if static and not isinstance(spec, TensorSpec):
            raise _invalid(f"static_dims names {param!r}, which is given {type(value).__name__} {value!r}, not an "
                           "array")
        return spec
    v = arrays.view(value)
    if v is None or v.dtype is None:
        raise D.TesseraError(D.DSL_ARG_SPEC, f"argument '{param}' is a {type(value).__name__} with no dtype "
                                             "Tessera takes")
    if not v.shape:
        raise D.TesseraError(D.DSL_ARG_SPEC, f"argument '{param}' is a 0-d array: pass a Python number")
    if static and static[-1] >= len(v.shape):
        raise _invalid(f"static_dims[{param!r}] names dim {static[-1]}, but {param} has rank {len(v.shape)}")
    return tensor(tuple(v.shape[i] if i in static else f"{param}.{i}" for i in range(len(v.shape))), v.dtype)


def _grid(kernel: Kernel, grid, meta: dict) -> tuple[int, ...]:
    """The grid as 1-3 positive ints: given, or computed by `grid(meta)` from the meta-parameters."""
    if callable(grid):
        try:
            grid = grid(dict(meta))
        except Exception as err:  # the user's function: say which call failed and why
            raise _invalid(f"the grid function of {kernel.name}[grid](...) raised {type(err).__name__}: {err}",
                           hint="it is called with the meta-parameters (defaults included) as one dict, e.g. "
                                "lambda meta: (tessera.cdiv(n, meta['BLOCK']),)") from None
    dims = (grid,) if isinstance(grid, (int, np.integer)) else grid
    ok = isinstance(dims, (tuple, list)) and 1 <= len(dims) <= 3 and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 1 for d in dims)
    if not ok:
        raise _invalid(f"{kernel.name}[grid]: the grid is {grid!r}; it must be 1 to 3 positive ints",
                       hint="pass a tuple such as (tessera.cdiv(n, BLOCK),) or a function of the meta-parameters "
                            "returning one")
    return tuple(int(d) for d in dims)


def _host_array(value, param: str):
    """A numpy view of a CPU array for the interpreter (a CPU torch tensor shares its memory)."""
    if value is None or isinstance(value, (np.ndarray, int, float, np.number)):
        return value
    if type(value).__module__.startswith("torch") and hasattr(value, "numpy"):
        if value.device.type != "cpu":
            raise D.TesseraError(D.RUNTIME_ARG_INVALID, f"argument '{param}' is a {value.device} tensor: the "
                                                        "reference lane runs on the CPU",
                                 hint="pass CPU tensors or numpy arrays with lane='reference'")
        if str(value.dtype) == "torch.bfloat16":
            import torch
            return value.detach().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return value.detach().numpy()
    raise D.TesseraError(D.RUNTIME_ARG_INVALID, f"argument '{param}' is a {type(value).__name__}: the reference "
                                                "lane takes numpy arrays or CPU torch tensors",
                         hint="copy device arrays to the host first, or use lane='cuda'")
