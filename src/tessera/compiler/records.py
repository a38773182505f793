"""Launch records: what a launch needs of a compiled kernel, kept on disk so a new process skips the compiler.

The records themselves (what they hold, how they are written and checked) are `record_store`'s; this module
makes their trace-free keys for the ops. A warm disk cache used to save only NVRTC: a fresh process still imported xDSL, traced, lowered and emitted each
kernel before the cubin lookup (0.35-0.48 s to a first GEMM). A launch record holds the rest of what
`CompiledKernel` needs to launch -- the emitted parameters and source, the launch signature, the argument
declarations, the pipeline text and the cubin's cache key -- under a key made without tracing:

    the kernel's import path, its specialisation (`tensor` / `scalar` descriptions), meta-parameters, arch and
    launch shape, plus the Tessera build (every package source file's size and mtime) and the toolchain
    packages' versions.

So `compiled("tessera.kernels.gemm:gemm", specs, meta, arch=..., shape=...)` in a process with a warm cache
reads one JSON file and one cubin entry and imports neither the kernel nor xDSL; `ck.traced` re-traces on first
use. Any change to Tessera's sources, the toolchain, or the request is another key (a miss compiles as before
and writes a record). A record that does not parse, names another key, or points at a cubin whose sha256
differs is a miss, never a wrong kernel. The compile-time performance warnings are raised when a kernel is
compiled, not again when its record is read.
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
