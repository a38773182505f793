"""The pure-Python parts of benchmarks/bench_hopper_gemm.py: summary maths, run planning, report schema, table.

The script must import (and its helpers run) without torch or triton; the
GPU parts are exercised on the H200 by running the script itself.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_hopper_gemm.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_hopper_gemm", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


B = _load()


def impl(ms=None, ok=True, error=None, **extra):
    e = {"ok": ok, **extra}
    if ms is not None:
        e.update(ms=float(ms), runs=30, tflops=1.0, rel_err=1e-3)
    if error:
        e["error"] = error
    return e


def row(dt, M, N, K, cublas, triton, tessera, work="gemm"):
    """A result row as the script builds it: impls with ms (None: failed), ratios from B.ratios."""
    impls = {"cublas": impl(cublas) if cublas else impl(ok=False, error="RuntimeError: cuBLAS failed"),
             "triton": impl(triton) if triton else impl(ok=False, error="triton is not installed"),
             "tessera": impl(tessera, config={"BM": 128, "BN": 256, "BK": 64, "stages": 4}) if tessera else
             impl(ok=False, error="OpsError: x.py:1:1: error: OPS_AUTOTUNE_FAILED: all failed", config=None,
                  candidates=[{"config": {"BM": 128}, "error": "TypeError: elementStrides\nmore"}])}
    return {"work": work, "dtype": dt, "M": M, "N": N, "K": K, "checked_rows": "all", "impls": impls,
            "ratios": B.ratios(impls, ("cublas", "triton"))}


def report(results, epilogue=(), skipped=()):
    r = {"format": B.FORMAT, "date": "2026-11-30T00:00:00+00:00", "command": "bench", "arch": "sm_90a",
         "budget_s": 270.0, "device": {"name": "H200"}, "versions": {"torch": "2.11"}, "method": "events",
         "results": list(results), "epilogue": list(epilogue), "skipped": list(skipped), "summary": {},
         "total_seconds": 12.5}
    r["summary"] = B.summarize(r["results"])
    return r


# --- maths ------------------------------------------------------------------------------------------------

def test_tflops_and_speed_ratio():
    assert B.tflops(8192, 8192, 8192, 1.0) == pytest.approx(1099.511627776)
    assert B.speed_ratio(2.0, 1.0) == 0.5 and B.speed_ratio(1.0, 1.6) == pytest.approx(1.6)
    assert B.speed_ratio(None, 1.0) is None and B.speed_ratio(1.0, None) is None


def test_geomean_ignores_missing_values():
    assert B.geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert B.geomean([0.5, None, 2.0]) == pytest.approx(1.0)
    assert B.geomean([]) is None and B.geomean([None]) is None


@pytest.mark.parametrize("shape, want", [((8192, 8192, 8192), 256), ((4096, 4096, 4096), None),
                                         ((8192, 8192, 1024), None), ((16384, 1024, 4096), None),
                                         ((128, 8192, 8192), None), ((256, 65536, 65536), None)])
def test_only_the_largest_shapes_check_a_row_subset(shape, want):
    assert B.check_rows(*shape) == want


@pytest.mark.parametrize("est_ms, share_s, want", [(0.03, 2.0, 30), (1.7, 2.0, 30), (80.0, 2.0, 25),
                                                   (100.0, 2.0, 20), (500.0, 2.0, 5), (1.0, 0.0, 5)])
def test_plan_runs(est_ms, share_s, want):
    assert B.plan_runs(est_ms, share_s) == want


def test_deadline_counts_from_its_start():
    now = [100.0]
    d = B.Deadline(270.0, start=90.0, clock=lambda: now[0])
    assert d.left() == 260.0
    now[0] = 400.0
    assert d.left() == -40.0


def test_ratios_use_only_checked_and_timed_entries():
    impls = {"cublas": impl(1.6), "triton": impl(2.0, ok=False, error="wrong result"), "tessera": impl(2.0)}
    assert B.ratios(impls, ("cublas", "triton")) == {"tessera/cublas": 0.8}
    impls["tessera"] = impl(ok=False, error="boom")
    assert B.ratios(impls, ("cublas", "triton")) == {}


def test_summary_per_dtype():
    rows = [row("bf16", 8192, 8192, 8192, cublas=1.6, triton=1.75, tessera=2.0),   # 0.8x cuBLAS, 0.875x Triton
            row("bf16", 4096, 4096, 4096, cublas=0.2, triton=0.25, tessera=0.2),   # 1.0x, 1.25x
            row("bf16", 2048, 2048, 2048, cublas=0.03, triton=0.04, tessera=None),  # Tessera failed
            row("f16", 4096, 4096, 4096, cublas=0.2, triton=None, tessera=0.4)]     # 0.5x; no Triton
    s = B.summarize(rows)
    bf = s["bf16"]
    assert bf["shapes"] == 3 and bf["compared_with_cublas"] == 2
    assert bf["geomean_tessera_over_cublas"] == pytest.approx(math.sqrt(0.8), abs=1e-4)
    assert (bf["min_tessera_over_cublas"], bf["min_shape"]) == (0.8, "8192x8192x8192")
    assert bf["geomean_tessera_over_triton"] == pytest.approx(math.sqrt(0.875 * 1.25), abs=1e-4)
    assert (bf["above_triton"], bf["compared_with_triton"]) == (1, 2)
    assert len(bf["failures"]) == 1 and bf["failures"][0].startswith("2048x2048x2048 tessera: OpsError")
    f16 = s["f16"]
    assert f16["geomean_tessera_over_cublas"] == 0.5 and f16["compared_with_triton"] == 0
    assert f16["geomean_tessera_over_triton"] is None and "triton is not installed" in f16["failures"][0]


def test_epilogue_summary():
    rows = []
    for M, sep, lin, ours in ((8192, 2.0, 1.8, 1.6), (4096, 0.3, 0.25, None)):
        impls = {"torch_separate": impl(sep), "torch_linear": impl(lin),
                 "tessera": impl(ours, config={"BM": 128}) if ours else impl(ok=False, error="NV_X: no", config=None)}
        rows.append({"work": "epilogue", "dtype": "bf16", "M": M, "N": M, "K": M, "impls": impls,
                     "ratios": B.ratios(impls, ("torch_separate", "torch_linear"))})
    s = B.summarize_epilogue(rows)
    assert s["geomean_tessera_over_torch_separate"] == 1.25 and s["geomean_tessera_over_torch_linear"] == 1.125
    assert s["failures"] == ["4096x4096x4096 tessera: NV_X: no"]


# --- the report -------------------------------------------------------------------------------------------

def test_a_complete_report_validates_and_is_strict_json():
    r = report([row("bf16", 4096, 4096, 4096, 0.2, 0.25, 0.2), row("f16", 4000, 4000, 4000, 0.2, None, None)],
               skipped=[{"what": "gemm f16 8192x8192x8192", "reason": "time box: 3 s left"}])
    r["results"][0]["impls"]["cublas"]["rel_err"] = float("nan")  # what a NaN output gives
    assert B.validate_report(r) == []
    text = json.dumps(B.clean_json(r), allow_nan=False)
    assert '"rel_err": "nan"' in text


@pytest.mark.parametrize("damage, problem", [
    (lambda r: r.pop("summary"), "summary"),
    (lambda r: r.__setitem__("skipped", None), "skipped"),
    (lambda r: r["results"][0].__setitem__("dtype", "f8"), "dtype"),
    (lambda r: r["results"][0]["impls"]["cublas"].pop("ms"), "cublas is ok but has no ms"),
    (lambda r: r["results"][0]["impls"]["triton"].pop("error"), "triton failed without an error"),
    (lambda r: r["results"][0]["impls"].__setitem__("cutlass", impl(1.0)), "impl 'cutlass' unknown"),
    (lambda r: r["results"][0]["impls"]["tessera"].pop("config"), "tessera entry has no config"),
    (lambda r: r["results"][0].pop("ratios"), "impls/ratios missing")])
def test_a_damaged_report_names_the_problem(damage, problem):
    r = report([row("bf16", 4096, 4096, 4096, 0.2, None, 0.2)])
    damage(r)
    assert any(problem in p for p in B.validate_report(r)), B.validate_report(r)


def test_table_shows_figures_ratios_failures_and_skips():
    epi = {"work": "epilogue", "dtype": "bf16", "M": 4096, "N": 4096, "K": 4096,
           "impls": {"torch_linear": impl(0.25), "tessera": impl(0.2, config={"BM": 128, "BN": 128})},
           "ratios": {"tessera/torch_linear": 1.25}}
    r = report([row("bf16", 8192, 8192, 8192, 1.6, 1.75, 2.0), row("f16", 2048, 2048, 2048, 0.03, 0.04, None)],
               epilogue=[epi], skipped=[{"what": "gemm f16 128x8192x8192", "reason": "time box: 3 s left"}])
    text = B.table(r)
    assert "8192x8192x8192" in text and "BM=128 BN=256 BK=64 stages=4" in text
    assert "tessera/cublas 0.80x, tessera/triton 0.88x" in text
    assert "FAILED: all 1 configs failed; first: TypeError: elementStrides" in text
    assert "4096x4096x4096 +bias+gelu" in text and "tessera/torch_linear 1.25x" in text
    assert "skipped: gemm f16 128x8192x8192: time box: 3 s left" in text
    assert "summary bf16:" in text and "geomean_tessera_over_cublas=0.8" in text


def test_failure_text_drops_the_location_prefix():
    assert B.failure_text({"error": "OpsError: /x/b.py:4:1: error: OPS_AUTOTUNE_FAILED: all\n  hint: h"}) == \
        "OPS_AUTOTUNE_FAILED: all"
    assert B.failure_text({"ok": False}) == "no error text"


def test_tessera_configs_fit_hopper_shared_memory_and_share_one_parameter_set():
    for c in B.TESSERA_CONFIGS:
        assert set(c) - {"streamk"} == {"BM", "BN", "BK", "stages", "SPLIT_K", "splitk", "schedule", "cluster",
                                        "multicast"}  # streamk only where it is 1 (older pins stay valid)
        assert c.get("streamk", 1) == 1, c
        assert [c["SPLIT_K"] > 1, c["splitk"] > 1, "streamk" in c].count(True) <= 1, c  # one K decomposition
        assert (c["BM"] + c["BN"]) * c["BK"] * 2 * c["stages"] <= 227 * 1024, c  # bf16/f16 A and W stages
    assert B.TESSERA_CONFIGS[0] == {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "SPLIT_K": 1, "splitk": 1,
                                    "schedule": "cooperative", "cluster": 1, "multicast": "b"}


def test_source_sha_is_stable():
    assert B.source_sha() == B.source_sha() and len(B.source_sha()) == 64


def test_the_script_imports_and_exits_cleanly_without_torch_or_triton(tmp_path):
    code = (f"import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
            f"import importlib.util as u\n"
            f"s = u.spec_from_file_location('b', {str(SCRIPT)!r}); m = u.module_from_spec(s); s.loader.exec_module(m)\n"
            f"assert m.triton is None and m.geomean([2.0, 8.0]) == 4.0\n"
            f"sys.exit(m.main(['--quick', '--out', {str(tmp_path / 'x.json')!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "needs torch" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.json").exists()


def test_shapes_option_parses_and_names_a_bad_shape():
    assert B.parse_shapes("1024x1024x16384, 128X8192x8192") == ((1024, 1024, 16384), (128, 8192, 8192))
    for bad in ("1024x1024", "0x1x1", "axbxc"):
        with pytest.raises(ValueError, match="MxNxK"):
            B.parse_shapes(bad)
