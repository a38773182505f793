"""Issue 15 item 5: the sm_90a GEMM runs on the general loop body (ws_body), the road attention takes.

warp-specialize lowers a GEMM-shaped K-loop with the general body unless it asks for what only the GEMM builder
(ws_builder) has so far: whole-tile ping-pong, a consumer of two 64-row blocks (BM = 256).
For the configs that moved, the general body must emit the very kernel the builder did: the SASS text here is
compared line for line between the two lowerings of the same traced GEMM (NVRTC, no GPU), so the speed measured
for the builder's kernels holds for the body's. Numerics on the host emulator: test_hopper_ring_sweep (every
config the autotuner may pick, every ring depth).
"""

from __future__ import annotations

import re

import pytest

from tessera.compiler import compile
from tessera.ops._hopper import HOPPER_CANDIDATES, HopperConfig
from tessera.runtime import CompileCache
from tessera.target.nvidia.passes import warp_specialize as WS
from test_hopper_layouts import trace


def _sass(layout: str, cfg: HopperConfig, builder: bool, monkeypatch) -> str:
    with monkeypatch.context() as m:
        if builder:
            m.setattr(WS.WarpSpecialize, "_needs_kloop_builder", lambda self, mma: True)
        else:
            m.setattr(WS, "lower_kernel", lambda *a, **k: pytest.fail("the GEMM builder ran"))
        ck = compile(trace(layout, cfg.BM, cfg.BN, cfg.BK), "sm_90a", shape=cfg.shape, cache=CompileCache(disk=False))
    return "\n".join(m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4,5}\*/\s+([^;]*);", ck.sass()))


def _moved(cfg: dict) -> bool:
    return cfg["schedule"] == "cooperative" and cfg["BM"] in (64, 128, 192)


MOVED = [c for c in HOPPER_CANDIDATES if _moved(c)]
CASES = ([("NT", MOVED[0]), ("NN", MOVED[0])]
         + [("NT", next(c for c in MOVED if pick(c))) for pick in (lambda c: c.get("cluster") == 2,
                                                                    lambda c: c.get("swap_ab"),
                                                                    lambda c: c.get("splitk", 1) > 1,
                                                                    lambda c: c.get("streamk"))])


@pytest.mark.parametrize("layout, config", CASES, ids=[f"{lay}-{c['BM']}x{c['BN']}-c{c['cluster']}-k{c['splitk']}{'-sk' * bool(c.get('streamk'))}-{c.get('store', 'tma')}"
                                                      for lay, c in CASES])
def test_a_cooperative_gemm_config_gets_the_builders_kernel_from_the_general_body(layout, config, monkeypatch):
    cfg = HopperConfig.from_config(config)
    body, builder = _sass(layout, cfg, False, monkeypatch), _sass(layout, cfg, True, monkeypatch)
    assert "HGMMA" in body and body == builder


def test_what_still_takes_the_gemm_builder(monkeypatch):
    """Whole-tile ping-pong and BM = 256 are the builder's (to move next); each candidate that asks for one of them
    is lowered by it, every other one by the general body."""
    used = []
    monkeypatch.setattr(WS, "lower_kernel", lambda *a, **k: used.append("builder"))
    monkeypatch.setattr(WS, "lower_body_kernel", lambda *a, **k: used.append("body"))
    from tessera.compiler.driver import lower

    for config in HOPPER_CANDIDATES:
        cfg = HopperConfig.from_config(config)
        used.clear()
        try:
            lower(trace("NT", cfg.BM, cfg.BN, cfg.BK), cfg.shape.pipeline("sm_90a"), "sm_90a")
        except Exception:  # noqa: BLE001 - the stubs leave the kernel unlowered; only the choice matters here
            pass
        assert used == ["body" if _moved(config) else "builder"], config
