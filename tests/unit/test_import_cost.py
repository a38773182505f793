"""`import tessera` and `import tessera.ops` load no interpreter until one is used (issue 14).

The CPU reference interpreter (`tessera.reference`) and xDSL's interpreters
(`xdsl.interpreters`, which imports every dialect's interpreter, RISC-V
included) cost about 0.25 s of a 1 s `import tessera.ops`; they load when the
reference lane or an oracle is first used. Each check runs in a fresh
interpreter, since this test process has long since imported both.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

_LOADED = "sorted(m for m in sys.modules if m.startswith(('tessera.reference', 'xdsl.interpreters')))"


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("module", ["tessera", "tessera.ops", "tessera.kernels", "tessera.compiler"])
def test_importing_loads_no_interpreter(module):
    assert _python(f"import {module}, sys; print({_LOADED})") == "[]"


def test_the_reference_lane_still_runs_after_a_lazy_import():
    code = f"""
import sys
import numpy as np
import tessera.ops as ops
assert {_LOADED} == [], {_LOADED}
a = np.arange(64, dtype=np.float32).reshape(8, 8) / 64
b = np.eye(8, dtype=np.float32)
d = ops.gemm(a, b, lane="reference")
assert ops.last_run().lane == "reference"
assert np.allclose(d, a, atol=1e-2), d
from tessera.kernels import gemm
assert np.allclose(gemm.reference_gemm(a, b), a)
loaded = {_LOADED}
assert "tessera.reference.interpreter" in loaded and "xdsl.interpreters.func" in loaded, loaded
print("ok")
"""
    assert _python(code) == "ok"
