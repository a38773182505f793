"""The tutorials (issue 17, item 6) run as a newcomer runs them: `python tutorials/NN_*.py`.

With TESSERA_INTERPRET=1 each one launches its kernel on the reference
interpreter, checks it against float64 (exit 1 when over its bound), and
compiles it with NVRTC to print its compile report; each runs in a fresh
process under a time limit. On a GPU (tests/gpu) the same files also benchmark.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted(p.name for p in (ROOT / "tutorials").glob("[0-9][0-9]_*.py"))


def test_the_five_tutorials_are_there():
    assert [t.split("_", 1)[1] for t in TUTORIALS] == ["vector_add.py", "row_softmax.py", "layernorm.py",
                                                      "fused_mlp.py", "flash_attention.py"]


@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_runs_on_the_interpreter_and_checks_itself(name):
    env = {**os.environ, "TESSERA_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "tutorials" / name)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "ran on lane 'reference'" in out and "FAIL" not in out
    assert out.count(" ok") >= 1 and "registers/thread" in out  # checked, and compiled by NVRTC
    doc = (ROOT / "tutorials" / name).read_text().split('"""')[1]
    assert len(doc.split()) >= 40, "a tutorial explains itself in its docstring"
