"""The autotuner's disk cache: one JSON file of winners, written whole through a rename (see tessera.ops.autotune).

A reader never sees half a file; a corrupt file or entry is a warning (OPS_AUTOTUNE_CACHE_CORRUPT) and a
re-measure, never a wrong config; an unwritable cache is a warning and the result still comes back.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path

from tessera import __version__
from tessera.ir import diagnostics as D
from tessera.ops._common import OpsError

FORMAT = "tessera-autotune-1"
FILE_NAME = "autotune.json"


# --- the file ----------------------------------------------------------------------------------------

class TuneCache:
    """The JSON file of winners: `path` (default $TESSERA_CACHE_DIR/autotune.json, else ~/.cache/tessera/...)."""

    def __init__(self, path: str | os.PathLike | None = None):
        root = Path(os.environ.get("TESSERA_CACHE_DIR") or Path.home() / ".cache" / "tessera")
        self.path = Path(path) if path is not None else root / FILE_NAME

    def entries(self, report: bool = True) -> dict:
        """Every entry, or {} (with an OPS_AUTOTUNE_CACHE_CORRUPT warning if `report`) when the file is unusable."""
        problem = None
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as err:
            problem = f"cannot read {self.path} ({err})"
        except ValueError as err:
            problem = f"{self.path} is not JSON ({err})"
        else:
            if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("entries"), dict):
                return data["entries"]
            problem = f"{self.path} is not a {FORMAT} file"
        if report:
            _warn(f"{problem}; ignoring it (the next tune rewrites it)")
        return {}

    def put(self, name: str, entry: dict) -> None:
        """Add or replace one entry: read, update, write a temp file in the same directory, rename into place."""
        entries = self.entries(report=False)  # re-read: keep what other processes wrote meanwhile
        entries[name] = entry
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".autotune-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump({"format": FORMAT, "entries": entries}, f, indent=1)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as err:
            warnings.warn(f"{D.OPS_AUTOTUNE_CACHE_CORRUPT.name}: cannot write {self.path} ({err}); "
                          "the result is not cached", RuntimeWarning, stacklevel=3)


def _warn(message: str) -> None:
    warnings.warn(f"{D.OPS_AUTOTUNE_CACHE_CORRUPT.name}: {message}", RuntimeWarning, stacklevel=4)


def entry_name(op: str, key: dict) -> str:
    """The cache entry's name: op, the canonical key (sorted JSON) and the tessera version."""
    return json.dumps([op, key, __version__], sort_keys=True, separators=(",", ":"))


def _candidates_sha(candidates: list) -> str:
    return hashlib.sha256(json.dumps(candidates, sort_keys=True).encode()).hexdigest()


def _store(cache) -> TuneCache | None:
    if cache is False:
        return None
    if cache is None or cache is True:
        return TuneCache()
    if isinstance(cache, TuneCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return TuneCache(cache)
    raise OpsError(D.OPS_AUTOTUNE_INPUT, "autotune.tune", f"cache={cache!r:.80}: pass None or True (the default file), "
                                                          "False (none), a TuneCache or a file path")
