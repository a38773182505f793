"""Issue 15 item 5: the sm_90a GEMM runs on the general loop body (ws_body), the road attention takes.

warp-specialize lowers every GEMM config with the general body (whole-tile ping-pong and BM = 256, a consumer of
two 64-row blocks, moved last). The general body must emit the very kernel the GEMM builder (ws_builder) did, which
is still there to compare against: the SASS text here is
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


def _compiled(layout: str, cfg: HopperConfig, builder: bool, monkeypatch):
    with monkeypatch.context() as m:
        if builder:
            m.setattr(WS.WarpSpecialize, "_needs_kloop_builder", lambda self, mma: True)
        else:
            m.setattr(WS, "lower_kernel", lambda *a, **k: pytest.fail("the GEMM builder ran"))
        return compile(trace(layout, cfg.BM, cfg.BN, cfg.BK), "sm_90a", shape=cfg.shape, cache=CompileCache(disk=False))


def _sass_lines(ck) -> list[str]:
    return [m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4,5}\*/\s+([^;]*);", ck.sass())]


def _sass(layout: str, cfg: HopperConfig, builder: bool, monkeypatch) -> str:
    return "\n".join(_sass_lines(_compiled(layout, cfg, builder, monkeypatch)))


def _pick(test) -> dict:
    return next(c for c in HOPPER_CANDIDATES if test(c))


CASES = ([("NT", HOPPER_CANDIDATES[0]), ("NN", HOPPER_CANDIDATES[0])]
         + [("NT", _pick(t)) for t in (lambda c: c.get("cluster") == 2 and c["schedule"] == "cooperative",
                                       lambda c: c.get("swap_ab"),
                                       lambda c: c.get("splitk", 1) > 1 and c["schedule"] == "cooperative",
                                       lambda c: c.get("streamk") and c["schedule"] == "cooperative",
                                       lambda c: c["schedule"] == "pingpong" and c.get("cluster") == 2,
                                       lambda c: c["schedule"] == "pingpong" and c.get("streamk"))]
         + [("TN", _pick(lambda c: c["schedule"] == "pingpong"))])


@pytest.mark.parametrize("layout, config", CASES, ids=[f"{lay}-{c['schedule']}-{c['BM']}x{c['BN']}-c{c['cluster']}-k{c['splitk']}{'-sk' * bool(c.get('streamk'))}-{c.get('store', 'tma')}"
                                                      for lay, c in CASES])
def test_a_gemm_config_gets_the_builders_kernel_from_the_general_body(layout, config, monkeypatch):
    cfg = HopperConfig.from_config(config)
    body, builder = _sass(layout, cfg, False, monkeypatch), _sass(layout, cfg, True, monkeypatch)
    assert "HGMMA" in body and body == builder


def test_a_256_row_gemm_on_the_general_body_is_no_longer_than_the_builders(monkeypatch):
    """BM = 256: each consumer holds two 64-row blocks. The body computes their row offsets once per tile, the
    builder in every K step, so the SASS differs; same registers, no local memory, a K-loop no longer."""
    cfg = HopperConfig.from_config(_pick(lambda c: c["BM"] == 256))
    body, builder = _compiled("NT", cfg, False, monkeypatch), _compiled("NT", cfg, True, monkeypatch)

    def loop(ck) -> int:
        at = [i for i, line in enumerate(_sass_lines(ck)) if "HGMMA" in line]
        return at[-1] - at[0]

    assert body.report.hgmma == builder.report.hgmma > 0
    assert body.report.local_bytes == 0 and body.report.registers <= builder.report.registers
    assert loop(body) <= loop(builder)


def test_every_candidate_takes_the_general_body(monkeypatch):
    """One road: whole-tile ping-pong and BM = 256 moved last; no autotuning candidate reaches the GEMM builder."""
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
        assert used == ["body"], config
