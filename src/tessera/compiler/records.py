"""Launch records: what a launch needs of a compiled kernel, kept on disk so a new process skips the compiler.

A warm disk cache used to save only NVRTC: a fresh process still imported xDSL, traced, lowered and emitted each
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

import hashlib
import importlib
import json
import os
from dataclasses import asdict
from functools import lru_cache

from tessera.compiler import driver, testing
from tessera.compiler.launch_shape import LaunchShape

FORMAT = "tessera-launch-record-1"
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
    ck = None if key is None else load(cache, key, lambda: resolve(kernel).trace(*specs_of(specs), **meta))
    if ck is None:
        ck = driver.compile_cached(resolve(kernel), specs_of(specs), meta, arch=arch, shape=shape, cache=cache)
        if key is not None:
            save(cache, key, ck)
    if not hooked:
        _memo[memo_key] = ck
    return ck


def record_key(kernel: str, specs: tuple, meta: dict, arch: str, shape: LaunchShape) -> str:
    payload = [FORMAT, build_id(), toolchain_id(), kernel, specs, sorted(meta.items()), arch, shape.pipeline(arch)]
    return hashlib.sha256(json.dumps(payload, default=repr).encode()).hexdigest()


@lru_cache(maxsize=1)
def build_id() -> str:
    """The Tessera build: every package source file's path, size and mtime (an edit, or a new version's
    __init__.py, is a new build; about 2 ms for the tree)."""
    root = _package_root()
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{os.path.relpath(dirpath, root)}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../tessera (this is compiler/records.py)


def toolchain_id() -> str:
    """The toolchain that builds the cubin (`toolchain_versions`: no NVRTC import with the pip NVRTC)."""
    from tessera.target.nvidia.toolchain.nvrtc import toolchain_versions

    return repr(toolchain_versions())


def _path(cache, key: str):
    return cache.directory / "records" / key[:2] / f"{key}.json"


def save(cache, key: str, ck) -> None:
    """Write `ck`'s launch record under `key` (a write error only costs the next process a compile)."""
    record = {"format": FORMAT, "key": key, "cache_key": ck.cache_key, "sha256": ck.artifact.sha256,
              "pipeline": ck.pipeline, "emitted": asdict(ck.emitted), "signature": [asdict(p) for p in ck.signature],
              "decl": [[type(a).__name__, *a] for a in ck._decl]}
    try:
        if cache.get(ck.cache_key) is None:  # compiled through another cache (compile_cached's memo): keep it here
            cache.put(ck.cache_key, ck.artifact)
        cache._write_atomic(_path(cache, key), json.dumps(record).encode())
    except OSError:
        cache.stats.write_errors += 1


def load(cache, key: str, retrace):
    """The CompiledKernel of the record under `key`, or None (no record, a damaged one, or its cubin gone)."""
    from tessera.compiler.kernel import CompiledKernel
    from tessera.ir.argcheck import ArrayArg, ScalarArg
    from tessera.runtime.args import Param
    from tessera.target.nvidia.emit.abi import EmittedKernel, KernelParam

    try:
        record = json.loads(_path(cache, key).read_bytes())
        if record["format"] != FORMAT or record["key"] != key:
            return None
        artifact = cache.get(record["cache_key"])
        if artifact is None or artifact.sha256 != record["sha256"]:
            return None
        emitted = dict(record["emitted"])
        emitted["params"] = tuple(KernelParam(**_tuples(p)) for p in emitted["params"])
        emitted = EmittedKernel(**emitted)
        signature = tuple(Param(**_tuples(p)) for p in record["signature"])
        kinds = {"ArrayArg": ArrayArg, "ScalarArg": ScalarArg}
        decl = tuple(kinds[k](*_tuples(rest)) for k, *rest in record["decl"])
        return CompiledKernel.restore(emitted, artifact, record["pipeline"], record["cache_key"], signature, decl,
                                      retrace)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _tuples(value):
    """JSON lists back into the tuples the records were made of."""
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def clear_memo() -> None:
    """Forget the in-process kernels (the records on disk stay; `driver.clear_memo` does this too)."""
    _memo.clear()
