"""The tutorials on a GPU: each checks its kernel on the cuda lane, then benchmarks it against torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted(p.name for p in (ROOT / "tutorials").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_runs_and_benchmarks_on_the_gpu(name, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_INTERPRET"}
    proc = subprocess.run([sys.executable, str(ROOT / "tutorials" / name)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ran on lane 'cuda'" in proc.stdout and "FAIL" not in proc.stdout
    assert list((tmp_path / "tutorial-plots").glob("*.csv")), proc.stdout
