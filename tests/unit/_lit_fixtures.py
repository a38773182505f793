"""The lit fixtures under tests/lit, classified by their RUN lines (shared by several unit tests).

A fixture is *negative* if one of its RUN lines expects failure (`not tessera-opt`)
or checks annotated errors (`--verify-diagnostics`); otherwise it is positive:
tessera-opt must accept it as is.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

LIT_DIR = Path(__file__).resolve().parents[1] / "lit"


def run_lines(path: Path) -> list[str]:
    return [line.split("RUN:", 1)[1].strip() for line in path.read_text(errors="replace").splitlines()
            if line.lstrip().startswith("// RUN:")]


def fixtures() -> list[Path]:
    return sorted(p for p in LIT_DIR.rglob("*.mlir") if "Inputs" not in p.parts and "Output" not in p.parts)


def is_negative(path: Path) -> bool:
    return any(line.startswith("not ") or " not tessera-opt" in line or "--verify-diagnostics" in line
               for line in run_lines(path))


def uses_split(path: Path) -> bool:
    return any("--split-input-file" in line for line in run_lines(path))


def positive_fixtures() -> list[Path]:
    return [p for p in fixtures() if not is_negative(p)]


def negative_fixtures() -> list[Path]:
    return [p for p in fixtures() if is_negative(p)]


def tessera_opt() -> list[str]:
    """The console script of this environment (as lit.cfg.py finds it)."""
    found = shutil.which("tessera-opt", path=os.path.dirname(sys.executable))
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from tessera.cli import opt_main; sys.exit(opt_main())"]
