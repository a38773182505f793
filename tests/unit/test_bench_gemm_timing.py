"""The GEMM table's timer (benchmarks/bench_gemm_layouts.Bench) on a stand-in torch: a set spoiled by host
stalls is timed again, and what the final set saw is kept beside the medians."""

import importlib.util
import types
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    "bench_gemm_layouts", Path(__file__).resolve().parents[2] / "benchmarks" / "bench_gemm_layouts.py")
BG = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(BG)


def fake_torch(times):
    """A torch whose CUDA events read the next of `times` at each end event (every second one made)."""
    times, made, state = iter(times), [0], {"slept": 0}

    class Event:
        def __init__(self, enable_timing):
            made[0] += 1
            self.end, self.t = made[0] % 2 == 0, None

        def record(self):
            if self.end:
                self.t = next(times)

        def elapsed_time(self, end):
            return end.t

    def sleep(cycles):
        state["slept"] += 1

    cuda = types.SimpleNamespace(Event=Event, _sleep=sleep, synchronize=lambda: None)
    flush = types.SimpleNamespace(fill_=lambda v: None)
    return types.SimpleNamespace(cuda=cuda, uint8="u8", empty=lambda *a, **k: flush), state


def test_a_steady_set_is_timed_once_with_a_sleep_ahead_of_each_call():
    torch, state = fake_torch([10.0, 11.0, 10.5, 10.2, 10.1])
    b = BG.Bench(torch)
    assert b.time({"x": lambda: None}, 5) == {"x": 10.2}
    assert b.last["retimed"] is False and b.last["min"] == {"x": 10.0} and state["slept"] == 5


def test_a_set_spoiled_by_stalls_is_timed_again():
    torch, _ = fake_torch([10.0, 90.0, 80.0, 85.0, 11.0] + [10.0, 10.4, 10.2, 10.3, 10.1])
    b = BG.Bench(torch)
    assert b.time({"x": lambda: None}, 5) == {"x": 10.2}
    assert b.last["retimed"] is True and b.last["spread"] < b.SPREAD
