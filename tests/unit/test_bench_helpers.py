"""tessera.testing (issue 17, item 5): do_bench and perf_report, on the CPU.

do_bench's CPU timer against calls of known length; the statistics against
hand-computed quantiles; perf_report sweeping the reference interpreter's
vector add against numpy, writing a CSV and a real PNG; every malformed
argument and a missing matplotlib as coded errors. GPU timing (CUDA events,
the L2 flush) is checked in tests/gpu/test_bench_helpers_gpu.py.
"""

from __future__ import annotations

import csv
import sys
import time

import numpy as np
import pytest

import tessera
from tessera import testing as TT
from tessera import tl
from tessera.ir import diagnostics as D


def test_cpu_timing_measures_the_call():
    ms = TT.do_bench(lambda: time.sleep(0.003), warmup=5, rep=40, device="cpu")
    assert 2.9 <= ms < 30  # sleep sleeps at least as long as asked
    fast = TT.do_bench(lambda: None, warmup=1, rep=5, device="cpu")
    assert fast < 0.1


def test_repetitions_follow_the_estimate_and_quantiles_are_numpys():
    calls = []
    TT.do_bench(lambda: (calls.append(1), time.sleep(0.002)), warmup=10, rep=20, device="cpu")
    assert 3 <= len(calls) <= 20  # 1 estimate + ~5 warm-up + ~10 timed at >= 2 ms each (fewer if sleep runs long)
    xs = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert [TT._quantile(xs, q) for q in (0, 0.25, 0.5, 0.8, 1)] == list(np.quantile(xs, [0, 0.25, 0.5, 0.8, 1]))
    times = TT.do_bench(lambda: None, warmup=1, rep=2, device="cpu", return_mode="all")
    assert isinstance(times, list) and len(times) >= 1
    q = TT.do_bench(lambda: None, warmup=1, rep=2, device="cpu", quantiles=(0.5, 0.2, 0.8))
    assert len(q) == 3 and q[1] <= q[0] <= q[2]


@pytest.mark.parametrize("kw, text", [
    ({"fn": 3}, "not a callable"),
    ({"rep": 0}, "rep=0"),
    ({"warmup": -1}, "warmup=-1"),
    ({"rep": float("inf")}, "rep=inf"),
    ({"rep": True}, "rep=True"),
    ({"return_mode": "p50"}, "return_mode='p50'"),
    ({"quantiles": (0.5, 2)}, "quantiles"),
    ({"quantiles": ()}, "quantiles"),
    ({"device": "tpu"}, "device='tpu'"),
    ({"flush_l2": "read"}, "flush_l2='read'"),
])
def test_bad_timing_arguments_are_coded(kw, text):
    args = {"fn": lambda: None, "device": "cpu", **kw}
    fn = args.pop("fn")
    with pytest.raises(D.TesseraError) as err:
        TT.do_bench(fn, **args)
    assert err.value.code is D.BENCH_ARG_INVALID and text in err.value.message


@tessera.kernel
def add(X, Y, Z, *, BLOCK=512):
    i = tl.program_id(0) * BLOCK
    tl.store(Z, [i], tl.load(X, [i], (BLOCK,)) + tl.load(Y, [i], (BLOCK,)))


def vector_add_report():
    @TT.perf_report(TT.Benchmark(x_names=["N"], x_vals=[512, 2048, 8192], line_arg="provider",
                                 line_vals=["tessera-reference", "numpy"], line_names=["Tessera (interpreter)",
                                                                                       "numpy"],
                                 ylabel="GB/s", plot_name="vector-add-cpu", x_log=True))
    def bench(N, provider):
        rng = np.random.default_rng(N)
        x, y = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
        z = np.empty_like(x)
        if provider == "numpy":
            fn = lambda: np.add(x, y, out=z)  # noqa: E731
        else:
            fn = lambda: add[(tessera.cdiv(N, 512),)](x, y, z, lane="reference")  # noqa: E731
        lo, mid, hi = TT.do_bench(fn, warmup=1, rep=5, device="cpu", quantiles=(0.2, 0.5, 0.8))
        np.testing.assert_array_equal(z, x + y)
        gbps = lambda ms: 3 * x.nbytes / (ms * 1e-3) / 1e9  # noqa: E731
        return gbps(mid), gbps(hi), gbps(lo)
    return bench


def test_perf_report_tabulates_writes_csv_and_plots(tmp_path, capsys):
    (table,) = vector_add_report().run(print_data=True, save_path=str(tmp_path))
    assert [r["N"] for r in table.rows] == [512, 2048, 8192]
    for r in table.rows:
        for name in ("Tessera (interpreter)", "numpy"):
            assert 0 < r[f"{name}_low"] <= r[name] <= r[f"{name}_high"]
    out = capsys.readouterr().out
    assert "vector-add-cpu (GB/s):" in out and "Tessera (interpreter)" in out
    with open(tmp_path / "vector-add-cpu.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["N"]) for r in rows] == [512, 2048, 8192] and float(rows[0]["numpy"]) == table.rows[0]["numpy"]
    png = (tmp_path / "vector-add-cpu.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_a_plot_without_matplotlib_fails_before_measuring(monkeypatch, tmp_path):
    measured = []
    report = TT.perf_report(TT.Benchmark(x_names=["n"], x_vals=[1], line_arg="p", line_vals=["a"]))(
        lambda n, p: measured.append(n) or 1.0)
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(D.TesseraError) as err:
        report.run(save_path=str(tmp_path))
    assert err.value.code is D.BENCH_UNAVAILABLE and "matplotlib" in err.value.message and not measured
    assert report.run()[0].rows == [{"n": 1, "a": 1.0, "a_low": 1.0, "a_high": 1.0}]  # the table needs no plot


@pytest.mark.parametrize("kw, text", [
    ({"x_vals": []}, "non-empty"),
    ({"line_names": ["one", "two"]}, "2 line_names for 1 line_vals"),
    ({"args": {"n": 3}}, "both swept and fixed"),
    ({"line_arg": "n"}, "both swept and fixed"),
])
def test_bad_benchmarks_are_coded(kw, text):
    spec = {"x_names": ["n"], "x_vals": [1], "line_arg": "p", "line_vals": ["a"], **kw}
    with pytest.raises(D.TesseraError) as err:
        TT.perf_report(TT.Benchmark(**spec))(lambda **k: 1.0)
    assert err.value.code is D.BENCH_ARG_INVALID and text in err.value.message


def test_cuda_timing_without_a_device_says_so():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(D.TesseraError) as err:
        TT.do_bench(lambda: None, device="cuda")
    assert err.value.code is D.BENCH_UNAVAILABLE and "no CUDA device" in err.value.message


def test_the_readme_plots_draw_from_the_committed_results(tmp_path):
    import importlib.util
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("plot_results", root / "benchmarks" / "plot_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for path in mod.draw(root / "benchmarks" / "results", tmp_path):
        assert path.read_bytes()[:4] == b"\x89PNG" and (root / "docs" / "img" / path.name).exists()


def _recording_torch(log: list, sleeps: bool = True):
    """A torch stand-in whose CUDA work is a log of what was queued, in order (every event pair reads 1 ms)."""
    import types

    class Event:
        def __init__(self, enable_timing):
            pass

        def record(self):
            log.append("record")

        def elapsed_time(self, end):
            return 1.0

    buf = types.SimpleNamespace(zero_=lambda: log.append("evict"))
    cuda = types.SimpleNamespace(Event=Event, synchronize=lambda: None, is_available=lambda: True)
    if sleeps:
        cuda._sleep = lambda cycles: log.append(("sleep", cycles))
    return types.SimpleNamespace(cuda=cuda, uint8="u8", empty=lambda *a, **k: buf)


@pytest.mark.parametrize("flush, evicts", [(False, False), ("write", True)], ids=["hot", "write-flush"])
def test_each_cuda_repetition_gets_a_head_start_so_its_time_is_the_gpus(monkeypatch, flush, evicts):
    """A GPU sleep is queued before each timed repetition (and its eviction): the host then queues fn() before the
    start event fires, so a small kernel is not timed at the host's launch rate (an 8 MB sum on an H100: 18 us hot
    without it, 12 us after a flush that happened to give the same head start)."""
    log = []
    monkeypatch.setattr(TT, "_torch", lambda: _recording_torch(log))
    times = TT.do_bench(lambda: log.append("fn"), warmup=1, rep=3, flush_l2=flush, device="cuda",
                        return_mode="all")
    timed = log[log.index(("sleep", TT.HEAD_START_CYCLES)):]
    one = [("sleep", TT.HEAD_START_CYCLES)] + ["evict"] * evicts + ["record", "fn", "record"]
    assert len(times) == 15 and timed == one * 15  # 5 calls took 1 ms: 0.2 ms each, 3 ms of repetitions


def test_a_torch_without_a_sleep_still_times(monkeypatch):
    log = []
    monkeypatch.setattr(TT, "_torch", lambda: _recording_torch(log, sleeps=False))
    assert TT.do_bench(lambda: log.append("fn"), warmup=1, rep=3, flush_l2=False, device="cuda") == 1.0
    assert not any(isinstance(x, tuple) for x in log)
