"""Launch records on disk: what `CompiledKernel` needs to launch -- the emitted parameters and source, the launch
signature, the argument declarations, the pipeline text and the cubin's cache key -- so a process with a warm
cache skips lowering and emission (and, through `tessera.compiler.records`, tracing and xDSL).

A key (`key_of`) covers the request plus the Tessera build (`build_id`: every package source file's path and
contents) and the toolchain (`toolchain_id`), so an edit to a pass or the emitter, or another NVRTC, is a miss. A
record that does not parse, names another key, or points at a cubin that is gone or has another sha256 is a miss
too, never a wrong kernel. Records live beside the cubins: `<cache dir>/records/<key[:2]>/<key>.json`.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from functools import lru_cache

FORMAT = "tessera-record-store-1"


def key_of(request: list) -> str:
    """The record key of a JSON-able `request`, with the build and the toolchain."""
    payload = [FORMAT, build_id(), toolchain_id(), request]
    return hashlib.sha256(json.dumps(payload, default=repr).encode()).hexdigest()


@lru_cache(maxsize=1)
def build_id() -> str:
    """The Tessera build: every package source file's path (from the package root) and contents (an edit, or a
    new version's __init__.py, is a new build; a copy of the same tree elsewhere, with other mtimes, is the same
    build, so a cache warmed on one machine serves another; about 4 ms for the tree). A package whose sources
    cannot be listed (a zip import) gets an id of this process alone: its records are never read by another
    process."""
    root = _package_root()
    if not os.path.isfile(os.path.join(root, "__init__.py")):
        return f"unlisted-{os.getpid()}-{os.urandom(8).hex()}"
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), "rb") as f:
                    body = f.read()
                h.update(f"{os.path.relpath(dirpath, root)}/{name}:{len(body)}:".encode())
                h.update(hashlib.sha256(body).digest())
    return h.hexdigest()


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../tessera (this is compiler/record_store.py)


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
        if not cache.has(ck.cache_key):  # compiled through another cache: keep its cubin here too
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
