"""Trace-free launch records for the shipped kernels: a new process launches them without xDSL or the tracer.

A warm disk cache used to save only NVRTC: a fresh process still imported xDSL, traced, lowered and emitted each
kernel before the cubin lookup (0.35-0.48 s to a first GEMM). `tessera.compile` reads launch records keyed by
the traced IR (`record_store`), which skips lowering and emission but still traces. The ops go one step further:
they name a kernel by its import path and its specialisation by plain descriptions (`tensor`, `scalar`), so

    compiled("tessera.kernels.gemm:gemm", specs, meta, arch=..., shape=...)

keys a record by the kernel path, the descriptions, meta-parameters, arch and launch shape (plus the Tessera
build and the toolchain, as every record key), and a warm process reads one JSON file and one cubin entry and
imports neither the kernel nor xDSL; `ck.traced` re-traces on first use. A miss compiles as before and writes
the record. Kernels read from such a record do not raise the compile-time performance warnings again.
"""

from __future__ import annotations

import importlib

from tessera.compiler import driver, testing
from tessera.compiler import record_store as store
from tessera.compiler.launch_shape import LaunchShape

FORMAT = "tessera-launch-record-1"  # a trace-free request (driver.compile keys its records by the traced IR)
_memo: dict = {}
driver.other_memos.append(_memo)  # driver.clear_memo forgets these too


def tensor(dims, dtype: str) -> tuple:
    """A tensor argument's description: `tessera.tensor(dims, dtype)` without loading the tracer."""
    return ("tensor", tuple(dims), dtype)


def scalar(dtype: str) -> tuple:
    """A scalar argument's description: `tessera.scalar(dtype)`."""
    return ("scalar", dtype)


def specs_of(described: tuple) -> tuple:
    """The tracer's specs for `tensor` / `scalar` descriptions (None stays None)."""
    from tessera.dsl.specs import scalar as scalar_spec, tensor as tensor_spec

    return tuple(None if d is None else tensor_spec(d[1], d[2]) if d[0] == "tensor" else scalar_spec(d[1])
                 for d in described)


def resolve(kernel: str):
    """The Kernel named `module:attribute`."""
    module, _, name = kernel.partition(":")
    return getattr(importlib.import_module(module), name)


def compiled(kernel: str, specs: tuple, meta: dict, *, arch: str, shape: LaunchShape, cache=None):
    """`compile_cached(resolve(kernel), specs_of(specs), meta, arch=arch, shape=shape)`, read from a launch
    record when one was written for this request (see the module docstring), else compiled and recorded."""
    from tessera.runtime.cache import default_cache

    where = None if cache is None else (str(cache.directory), cache.disk)
    memo_key = (kernel, specs, tuple(sorted(meta.items())), arch, shape, where)
    hooked = testing.active()
    hit = None if hooked else _memo.get(memo_key)
    if hit is not None:
        return hit
    cache = cache if cache is not None else default_cache()
    key = None if testing.faults() is not None or not cache.disk else record_key(kernel, specs, meta, arch, shape)
    ck = None if key is None else store.load(cache, key, lambda: resolve(kernel).trace(*specs_of(specs), **meta))
    if ck is None:
        ck = driver.compile_cached(resolve(kernel), specs_of(specs), meta, arch=arch, shape=shape, cache=cache)
        if key is not None:
            store.save(cache, key, ck)
    if not hooked:
        _memo[memo_key] = ck
    return ck


def record_key(kernel: str, specs: tuple, meta: dict, arch: str, shape: LaunchShape) -> str:
    return store.key_of([FORMAT, kernel, specs, sorted(meta.items()), arch, shape.pipeline(arch)])


def clear_memo() -> None:
    """Forget the in-process kernels (the records on disk stay; `driver.clear_memo` does this too)."""
    _memo.clear()
