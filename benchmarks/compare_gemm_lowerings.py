#!/usr/bin/env python
"""Compare the SASS of the sm_90a GEMM's two lowerings, for every autotuning candidate.

    python benchmarks/compare_gemm_lowerings.py > out.txt

For each layout (NT, NN, TN, TT) and each HOPPER_CANDIDATE, the traced GEMM is compiled with NVRTC twice, once
through the general body and once through the GEMM builder (forced), and the SASS instruction text (registers and
operands included) is compared line for line; where it differs, the registers, local memory and the instructions
from the first HGMMA to the last (the K-loop) are printed for both. CPU only. Issue 15 item 5 (one road, speed
unchanged).
"""

from __future__ import annotations

import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests", "unit"), os.path.join(ROOT, "tests")]

import pytest  # noqa: E402

from tessera.ops._hopper import HopperConfig  # noqa: E402
from tessera.ops._hopper import HOPPER_CANDIDATES  # noqa: E402
from test_gemm_on_general_body import _compiled, _sass_lines  # noqa: E402


class _Patch:
    def context(self):
        return pytest.MonkeyPatch.context()


def _shape(ck) -> str:
    lines = _sass_lines(ck)
    at = [i for i, line in enumerate(lines) if "HGMMA" in line]
    return (f"{len(lines)} instructions, {ck.report.registers} registers, local {ck.report.local_bytes} B, "
            f"first to last HGMMA {at[-1] - at[0]}")


def main() -> int:
    warnings.simplefilter("ignore")
    differ = 0
    for layout in ("NT", "NN", "TN", "TT"):
        for config in HOPPER_CANDIDATES:
            cfg = HopperConfig.from_config(config)
            body, builder = _compiled(layout, cfg, False, _Patch()), _compiled(layout, cfg, True, _Patch())
            same = _sass_lines(body) == _sass_lines(builder)
            differ += not same
            print(f"{layout} {config} " + (f"identical ({len(_sass_lines(body))} instructions)" if same else
                                           f"DIFFERENT: body {_shape(body)}; builder {_shape(builder)}"))
    print(f"# {4 * len(HOPPER_CANDIDATES)} pairs, {differ} different")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
