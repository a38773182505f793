"""`tessera demo`, the README's main job, passes on a machine without a GPU and shows the sm_90a GEMM.

Without a GPU every kernel runs on the reference interpreter, and the
warp-specialised sm_90a GEMM (clusters, TMA store) runs on the g++ host
emulator of its emitted CUDA; the demo exits 0 only if every check passed.
"""

from __future__ import annotations

import shutil

import pytest

from tessera import demo
from tessera.runtime import has_gpu


@pytest.mark.skipif(has_gpu(), reason="the GPU lane is exercised on the device (benchmarks/results/*-demo-*.txt)")
@pytest.mark.skipif(shutil.which("g++") is None, reason="the host emulator needs g++")
def test_demo_passes_and_runs_the_sm90a_gemm_on_the_host_emulator(capsys):
    assert demo.main([]) == 0
    out = capsys.readouterr().out
    assert "all checks passed" in out and "FAIL" not in out
    hopper = [line for line in out.splitlines() if "sm_90a" in line]
    assert len(hopper) == 2, out
    assert "HGMMA" in hopper[0] and "UTMASTG" in hopper[0] and "local 0 B" in hopper[0]
    assert "host emulator" in hopper[1] and "[ok]" in hopper[1]
