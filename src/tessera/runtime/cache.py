"""Compile cache: an in-process dict in front of a directory of verified entries.

The key is a sha256 over everything that decides the cubin bytes: the program
text (CUDA C++, or the IR it is emitted from), the arch, the compile options,
the name expressions, the program name and the toolchain versions (DESIGN.md
section 3, lesson 6). An entry file carries a sha256 of its own contents and
the artifact a sha256 of its cubin; an entry that fails either check is
deleted and recompiled, never loaded. Writes go to a temp file in the same
directory and are renamed into place, so a reader never sees half an entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from tessera.target.nvidia.toolchain.nvrtc import (DEFAULT_PROGRAM_NAME, CompiledArtifact, compile_cuda, normalize_options,
                                   toolchain_versions)

FORMAT = "tessera-cubin-cache-1"
ENV_DIR = "TESSERA_CACHE_DIR"


def default_cache_dir() -> Path:
    """$TESSERA_CACHE_DIR, else ~/.cache/tessera."""
    return Path(os.environ.get(ENV_DIR) or Path.home() / ".cache" / "tessera")


def cache_key(text: str, arch: str, options=None, name_expressions=(), *, toolchain=None,
              program_name: str = DEFAULT_PROGRAM_NAME) -> str:
    """Hex sha256 naming one compile: text, arch, canonical options, names, program name, toolchain."""
    payload = [FORMAT, text, arch, [list(kv) for kv in normalize_options(options)], list(name_expressions),
               program_name, [list(kv) for kv in (toolchain if toolchain is not None else toolchain_versions())]]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=repr).encode()).hexdigest()


def _encode(key: str, art: CompiledArtifact) -> bytes:
    meta = asdict(art)
    meta.pop("cubin")
    header = json.dumps({"format": FORMAT, "key": key, "cubin_len": len(art.cubin), **meta},
                        sort_keys=True).encode()
    body = header + b"\n" + art.cubin
    return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _decode(key: str, blob: bytes) -> CompiledArtifact | None:
    """The artifact in an entry file, or None if any check fails (corrupt, truncated, other key)."""
    digest, sep, body = blob.partition(b"\n")
    if not sep or hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    header, sep, cubin = body.partition(b"\n")
    try:
        meta = json.loads(header)
    except ValueError:
        return None
    if not sep or meta.pop("format", None) != FORMAT or meta.pop("key", None) != key \
            or meta.pop("cubin_len", None) != len(cubin):
        return None
    try:
        art = CompiledArtifact(cubin=cubin, **{k: _tuples(v) for k, v in meta.items()})
    except TypeError:
        return None
    return art if art.verify() else None


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    corrupt: int = 0        # entries found on disk that failed verification (deleted, recompiled)
    write_errors: int = 0   # entries that could not be written (the compile result is still returned)


class CompileCache:
    """`get_or_compile` returns a verified artifact from memory, from disk, or from a fresh compile."""

    def __init__(self, directory: str | os.PathLike | None = None, *, disk: bool = True):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.disk = disk
        self.stats = CacheStats()
        self._memory: dict[str, CompiledArtifact] = {}

    def path_for(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.cubin-entry"

    def get(self, key: str) -> CompiledArtifact | None:
        art = self._memory.get(key)
        if art is not None:
            self.stats.memory_hits += 1
            return art
        if not self.disk:
            return None
        path = self.path_for(key)
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        art = _decode(key, blob)
        if art is None:
            self.stats.corrupt += 1
            path.unlink(missing_ok=True)
            return None
        self.stats.disk_hits += 1
        self._memory[key] = art
        return art

    def has(self, key: str) -> bool:
        """Whether an entry for `key` is in memory or on disk (not read or verified, not counted in `stats`)."""
        return key in self._memory or (self.disk and self.path_for(key).is_file())

    def put(self, key: str, art: CompiledArtifact) -> None:
        if not art.verify():
            raise ValueError("refusing to cache an artifact whose cubin does not match its sha256")
        self._memory[key] = art
        if self.disk:
            try:
                self._write_atomic(self.path_for(key), _encode(key, art))
            except OSError:
                self.stats.write_errors += 1

    @staticmethod
    def _write_atomic(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_or_compile(self, source: str | Callable[[], str], arch: str, *, options=None, name_expressions=(),
                       key_text: str | None = None, program_name: str = DEFAULT_PROGRAM_NAME) -> CompiledArtifact:
        """Look up, else compile and store.

        `source` is CUDA C++ text, or a zero-argument callable producing it when
        `key_text` (e.g. the IR the source is emitted from) keys the entry, so a
        hit skips emission too. Compile errors propagate as CodegenError.
        """
        if key_text is None and not isinstance(source, str):
            raise TypeError("pass the CUDA C++ source as str, or give key_text when source is a callable")
        key = cache_key(source if key_text is None else key_text, arch, options, name_expressions,
                        program_name=program_name)
        art = self.get(key)
        if art is not None:
            return art
        self.stats.misses += 1
        text = source if isinstance(source, str) else source()
        art = compile_cuda(text, arch, name_expressions=name_expressions, options=options,
                           program_name=program_name)
        self.put(key, art)
        return art

    def clear_memory(self) -> None:
        self._memory.clear()


_default: CompileCache | None = None


def default_cache() -> CompileCache:
    """The process-wide cache over `default_cache_dir()` (read when first asked for)."""
    global _default
    if _default is None:
        _default = CompileCache()
    return _default
