#!/usr/bin/env python
"""Compare the SASS of the sm_90a GEMM's two lowerings, for every autotuning candidate that moved to the general body.

    python benchmarks/compare_gemm_lowerings.py > out.txt

For each layout (NT, NN, TN, TT) and each HOPPER_CANDIDATE the general loop body takes (cooperative, BM 64/128/192:
tests/unit/test_gemm_on_general_body._moved), the traced GEMM is compiled with NVRTC twice, once through the general
body and once through the GEMM builder (forced), and the SASS instruction text (registers and operands included)
is compared line for line. CPU only. Prints one line per pair and a count; issue 15 item 5 (one road, speed
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
from test_gemm_on_general_body import MOVED, _sass  # noqa: E402


class _Patch:
    def context(self):
        return pytest.MonkeyPatch.context()


def main() -> int:
    warnings.simplefilter("ignore")
    differ = 0
    for layout in ("NT", "NN", "TN", "TT"):
        for config in MOVED:
            cfg = HopperConfig.from_config(config)
            body, builder = _sass(layout, cfg, False, _Patch()), _sass(layout, cfg, True, _Patch())
            same = body == builder
            differ += not same
            print(f"{layout} {config} {'identical' if same else 'DIFFERENT'} ({len(body.splitlines())} instructions)")
    print(f"# {4 * len(MOVED)} pairs, {differ} different")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
