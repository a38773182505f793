"""Imports flow one way, checked by an ecosystem linter too (issue 14).

The contracts in .importlinter (import-linter, pinned in the `test` extra) say
what tests/unit/test_layers.py says, read transitively. These tests run
`lint-imports` on the tree and on a copy with one bad import injected, so a
contract that stopped catching anything would fail here too.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".importlinter"
TIMEOUT_S = 120  # a hang is a failure
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def _contract_names() -> dict[str, str]:
    parser = configparser.ConfigParser()
    parser.read(CONFIG)
    prefix = "importlinter:contract:"
    return {s.removeprefix(prefix): parser[s]["name"] for s in parser.sections() if s.startswith(prefix)}


def _lint(src: Path) -> subprocess.CompletedProcess:
    """Run lint-imports with the repo's contracts on the `tessera` package under `src`."""
    env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "400", "NO_COLOR": "1"}
    try:
        return subprocess.run([sys.executable, "-c", LINT, "--no-cache", "--no-logo", str(CONFIG)],
                              cwd=src.parent, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"lint-imports ran past {TIMEOUT_S} s: {e}")


def _broken(out: str) -> set[str]:
    """Ids of the contracts the report lists as BROKEN."""
    names = _contract_names()
    return {cid for cid, name in names.items() if re.search(re.escape(name) + r"\s+BROKEN", out)}


def test_the_config_holds_the_contracts():
    import importlinter  # noqa: F401  (in the `test` extra: CI has it; a missing one fails, never skips)

    names = _contract_names()
    assert {"backend-layers", "frontend-layers", "nvidia-layers", "tile-dialect-imports-no-target",
            "nv-dialect-imports-no-nv-pass"} <= names.keys(), sorted(names)


def test_every_contract_is_kept():
    run = _lint(ROOT / "src")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    n = len(_contract_names())
    assert f"Contracts: {n} kept, 0 broken." in out, out


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "tessera", src / "tessera", ignore=shutil.ignore_patterns("__pycache__"))
    path = src / Path(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text() + f"\n{line}  # injected\n")
    return src


@pytest.mark.parametrize("module, injected, contracts", [
    # a tile-dialect module importing a target: the headline rule, and both pipeline layerings
    ("tessera.ir.types", "import tessera.target.nvidia.ir.ops",
     {"tile-dialect-imports-no-target", "backend-layers"}),
    # the nv dialect importing its emitter (which imports the nv passes)
    ("tessera.target.nvidia.ir.types", "from tessera.target.nvidia.emit import cuda",
     {"nv-dialect-imports-no-nv-pass", "nvidia-layers"}),
])
def test_an_injected_import_breaks_its_contract(tmp_path, module, injected, contracts):
    run = _lint(_copy_with(tmp_path, module, injected))
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert contracts <= _broken(out), out
    target = injected.split()[1]
    assert re.search(rf"{re.escape(module)} -> {re.escape(target)}", out), out  # it read the copy
