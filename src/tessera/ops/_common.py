"""What every op shares: lanes, coded argument checks, cached plans, and the record of the last run.

Strict dispatch (DESIGN lesson 5): lane 'auto' means the GPU, and without
one the call fails with OPS_NO_GPU; the CPU reference interpreter runs only
when asked for with lane='reference'. Every successful call leaves a
`RunRecord` (lane, kernel, artifact hash, config, grid) that `last_run()`
returns in the calling thread; a failed call leaves none. Arguments are
checked before any output is allocated, copied or written.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass

import numpy as np

from tessera.compiler import arrays, testing
from tessera.compiler.kernel import INDEX_LIMIT
from tessera.ir import diagnostics as D

LANES = ("auto", "cuda", "reference")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # .../tessera/
_state = threading.local()
_INSIDE: dict[str, bool] = {}


def _in_package(filename: str) -> bool:
    """Whether `filename` is tessera's (normalised once per name: a sys.path entry with '..' names files so)."""
    hit = _INSIDE.get(filename)
    if hit is None:
        hit = _INSIDE[filename] = os.path.abspath(filename).startswith(_PACKAGE_DIR)
    return hit
_plans: dict = {}


class OpsError(D.TesseraError):
    """A coded op error, located at the caller's line (the first frame outside tessera)."""

    def __init__(self, code: D.Code, op: str, message: str, hint: str | None = None):
        super().__init__(code, f"tessera.ops.{op}: {message}", hint=hint)
        frame = sys._getframe(1)
        while frame is not None and _in_package(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is not None:
            self.with_location(f"{frame.f_code.co_filename}:{frame.f_lineno}:1")
        else:
            self.with_location(f"tessera.ops.{op}")


@dataclass(frozen=True)
class RunRecord:
    """What the last op call ran.

    lane: 'cuda', 'reference' or 'host-emulator' (tests) -- what actually ran.
    kernel: the kernel's name. artifact_hash: sha256 of the cubin (cuda) or
    of the IR (reference). arch: the cubin's arch (None on the reference
    lane). config: the tile configuration (meta-parameters and stages).
    grid, block, smem_bytes: the launch (block/smem None on the reference
    lane). synchronized: whether the call waited for completion (numpy
    inputs and the reference lane do; device arrays run asynchronously on
    the stream). launched: False when the output was empty and nothing ran.
    """

    op: str
    lane: str
    kernel: str
    artifact_hash: str
    arch: str | None
    config: dict
    grid: tuple
    block: tuple | None
    smem_bytes: int | None
    synchronized: bool
    launched: bool = True


@dataclass(eq=False)
class Plan:
    """One op specialisation on one lane: the compiled kernel on the cuda lane (its `traced` made on demand),
    the traced one on the reference lane."""

    op: str
    lane: str
    traced: object
    compiled: object | None
    config: dict

    def run(self, grid, values, func_args, stream, device: int):
        """Launch (cuda: C parameter `values`) or interpret (reference: func.func `func_args`); record it."""
        if 0 in grid:
            name = self.compiled.name if self.compiled is not None else self.traced.name
            _state.last = RunRecord(self.op, self.lane, name, self._hash(), self._arch(), self.config,
                                    tuple(grid) + (1,) * (3 - len(grid)), self._block(), self._smem(), True,
                                    launched=False)
            return
        if self.compiled is not None:
            _state.last = (self, self.compiled.launch_values(grid, values, stream, device=device), grid)
            return
        from tessera.reference import run
        res = run(self.traced, grid, func_args)  # the TracedKernel: its symbolic dims are checked too
        _state.last = RunRecord(self.op, res.lane, res.kernel, res.ir_hash, None, self.config, res.grid, None,
                                None, True)

    def replay(self, grid, values, stream, device: int):
        """A function of no arguments that repeats `run(grid, values, None, stream, device)` on the cuda lane
        with everything but the launch itself done now (CompiledKernel.prepare), or None where it cannot."""
        if self.compiled is None or 0 in grid:
            return None
        fire = self.compiled.prepare(grid, values, stream, device=device)
        if fire is None:
            return None

        def replay():
            _state.last = (self, fire(), grid)
        return replay

    def _hash(self):
        if self.compiled is not None:
            return self.compiled.artifact_hash
        from tessera.reference import ir_hash
        return ir_hash(self.traced.module)

    def _arch(self):
        return self.compiled.arch if self.compiled is not None else None

    def _block(self):
        return self.compiled.block if self.compiled is not None else None

    def _smem(self):
        return self.compiled.smem_bytes if self.compiled is not None else None


def last_run() -> RunRecord | None:
    """The RunRecord of this thread's last successful op call (None before one, or after a failed call)."""
    last = getattr(_state, "last", None)
    if isinstance(last, tuple):  # the warm path stores (plan, LaunchResult, grid); build the record on demand
        plan, res, grid = last
        ck = plan.compiled
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        last = RunRecord(plan.op, res.lane, res.kernel, res.artifact_hash, res.arch, plan.config,
                         grid + (1,) * (3 - len(grid)), ck.block, ck.smem_bytes, res.synchronized)
        _state.last = last
    return last


def set_last(record: RunRecord) -> None:
    """Make `record` this thread's last run (an op of several launches reports them as one)."""
    _state.last = record


def start(op: str, lane) -> str:
    """Forget the last record and resolve the lane: 'cuda' or 'reference' (OPS_NO_GPU / OPS_LANE_INVALID)."""
    _state.last = None
    if lane == "reference":
        return lane
    if lane == "auto" or lane == "cuda":
        if testing.backend() is not None:
            return "cuda"
        from tessera.runtime.device import has_gpu, why_no_gpu
        if has_gpu():
            return "cuda"
        raise OpsError(D.OPS_NO_GPU, op, f"lane={lane!r} needs a CUDA device and there is none ({why_no_gpu()}); "
                                         "Tessera never falls back to the CPU silently")
    raise OpsError(D.OPS_LANE_INVALID, op, f"lane={lane!r} is not one of {', '.join(map(repr, LANES))}")


def plan_for(key: tuple, build) -> Plan:
    """The cached Plan for `key`, built by `build()` on a miss (uncached while a testing hook is active)."""
    plan = _plans.get(key)
    if plan is None or testing.active():
        plan = build()
        if not testing.active():
            _plans[key] = plan
    return plan


class Checker:
    """Checks one call's arrays together: types, dtypes, ranks, layout, one lane and one device."""

    def __init__(self, op: str, lane: str):
        self.op, self.lane = op, lane
        self.device: int | None = None
        self.host: str | None = None      # name of a numpy argument (cuda lane: all or none)
        self.devarg: str | None = None    # name of a device argument
        self.devobj = self.devview = None  # the first device array (its framework names the default stream)

    def fail(self, code: D.Code, message: str, hint: str | None = None) -> OpsError:
        return OpsError(code, self.op, message, hint)

    def array(self, name: str, x, dtypes: tuple, rank: int | tuple, v: arrays.ArrayView | None = None
              ) -> arrays.ArrayView:
        v = v or arrays.view(x)
        if v is None:
            raise self.fail(D.OPS_ARG_TYPE, f"{name} is a {type(x).__name__}, not an array")
        if len(v.shape) != rank and (type(rank) is int or len(v.shape) not in rank):
            raise self.fail(D.OPS_ARG_SHAPE, f"{name} has shape {list(v.shape)} (rank {len(v.shape)}); it must "
                                             f"have rank {rank if type(rank) is int else ' or '.join(map(str, rank))}")
        if v.dtype not in dtypes:
            raise self.fail(D.OPS_ARG_DTYPE, f"{name} has dtype {v.dtype or 'unsupported'}; it takes "
                                             f"{' or '.join(dtypes)}")
        if not v.contiguous:
            raise self.fail(D.OPS_ARG_LAYOUT, f"{name} (shape {list(v.shape)}, strides {v.strides}) is not "
                                              "C-contiguous")
        for d in v.shape:
            if d >= INDEX_LIMIT:
                raise self.fail(D.OPS_ARG_SHAPE, f"{name} has a dim of {d}; kernel indices are 32-bit (< 2**31)")
        self._place(name, x, v)
        return v

    def _place(self, name: str, x, v: arrays.ArrayView) -> None:
        if self.lane == "reference":
            if v.source != "numpy":
                raise self.fail(D.OPS_ARG_DEVICE, f"{name} is a {v.source} {'device' if v.ptr else 'host'} array; "
                                                  "the reference lane takes numpy arrays")
            return
        if v.ptr is None:
            if v.source != "numpy":
                raise self.fail(D.OPS_ARG_DEVICE, f"{name} is a CPU {v.source} tensor; the cuda lane takes CUDA "
                                                  "arrays or numpy arrays")
            self.host = self.host or name
        else:
            if v.ptr % arrays.ITEMSIZE[v.dtype]:
                raise self.fail(D.OPS_ARG_ALIGNMENT, f"{name} is at address {v.ptr:#x}, not a multiple of its "
                                                     f"{v.dtype} element size {arrays.ITEMSIZE[v.dtype]}")
            dev = v.device
            if dev is not None:
                if self.device is not None and dev != self.device:
                    raise self.fail(D.OPS_ARG_DEVICE, f"{name} is on device {dev}, {self.devarg} on device "
                                                      f"{self.device}")
                self.device = dev
            if self.devarg is None:
                self.devarg, self.devobj, self.devview = name, x, v
        if self.host is not None and self.devarg is not None:
            raise self.fail(D.OPS_ARG_DEVICE, f"{self.host} is a numpy array and {self.devarg} a device array: pass "
                                              "all device arrays, or all numpy arrays (copied in and out)")

    def output(self, name: str, out, template, tview, shape: tuple, dtype: str, inputs: tuple, v=None):
        """(array, view) of an output: `out` (view `v` if known) checked against shape, dtype, inputs; or a new one."""
        if out is None:
            obj = arrays.empty_like(template, tview, shape, dtype)
            if obj is None:
                raise self.fail(D.OPS_ARG_TYPE, f"cannot allocate {name} next to a {type(template).__name__}; "
                                                f"pass {name}= (shape {list(shape)}, {dtype})")
            return obj, arrays.view(obj)
        v = self.array(name, out, (dtype,), len(shape), v)
        if v.shape != shape:
            raise self.fail(D.OPS_ARG_SHAPE, f"{name} has shape {list(v.shape)}; the result is {list(shape)}")
        if v.readonly:
            raise self.fail(D.OPS_ARG_READONLY, f"{name} is read-only")
        for in_name, x, xv in inputs:
            if x is None:
                continue
            shared = np.may_share_memory(out, x) if v.ptr is None else arrays.overlaps(v, xv)
            if shared:
                raise self.fail(D.OPS_ARG_ALIAS, f"{name} overlaps input {in_name}")
        return out, v

    def scalar(self, name: str, x) -> float:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise self.fail(D.OPS_ARG_VALUE, f"{name} must be a real number, got {type(x).__name__} {x!r}")
        return float(x)

    def flag(self, name: str, x) -> bool:
        if not isinstance(x, (bool, np.bool_)):
            raise self.fail(D.OPS_ARG_VALUE, f"{name} must be True or False, got {x!r}")
        return bool(x)

    def stream(self, stream) -> None:
        if stream is not None and self.lane == "reference":
            raise self.fail(D.OPS_ARG_VALUE, "stream= applies to the cuda lane; the reference lane runs synchronously")

    def launch_stream(self, stream):
        """`stream` if given; else the current stream of the device arrays' framework (torch, cupy), so the
        launch is ordered after the work that produced them; else None (the legacy default stream)."""
        if stream is not None or self.devobj is None:
            return stream
        handle = arrays.current_stream(self.devobj, self.devview)
        return None if not handle else handle


def reset() -> None:
    """Forget this thread's last record (a call starts so; `start` does it on the full path)."""
    _state.last = None


def memref(values: list, obj, v: arrays.ArrayView, shape: tuple | None = None) -> None:
    """Append one memref's C parameters: pointer (or the numpy array to stage), sizes, C-contiguous strides."""
    memref_at(values, obj if v.ptr is None else v.ptr, v.shape if shape is None else shape)


def memref_at(values: list, address, shape: tuple) -> None:
    """Append the C parameters of a C-contiguous memref at `address` (a device pointer, a runtime buffer's
    address, or the numpy array to stage)."""
    values.append(address)
    values.extend(shape)
    values.extend(arrays.c_strides(shape))
