"""The GEMM table's timer (benchmarks/bench_gemm_layouts.Bench) on a stand-in torch: the L2 is evicted by a read
(or a write, when asked) before each call, a set spoiled by host stalls is timed again, and what the final set
saw is kept beside the medians."""

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

    def read(buf, dim, dtype, out):
        state["reads"] += 1

    def write(v):
        state["writes"] += 1

    state.update(reads=0, writes=0)
    cuda = types.SimpleNamespace(Event=Event, _sleep=sleep, synchronize=lambda: None)
    buf = types.SimpleNamespace(fill_=write)
    return types.SimpleNamespace(cuda=cuda, uint8="u8", int64="i64", empty=lambda *a, **k: buf,
                                 ones=lambda *a, **k: buf, zeros=lambda *a, **k: buf, sum=read), state


def test_a_steady_set_is_timed_once_with_a_sleep_and_a_read_flush_ahead_of_each_call():
    torch, state = fake_torch([10.0, 11.0, 10.5, 10.2, 10.1])
    b = BG.Bench(torch)
    assert b.time({"x": lambda: None}, 5) == {"x": 10.2}
    assert b.last["retimed"] is False and b.last["min"] == {"x": 10.0}
    assert state["slept"] == 5 and state["reads"] == 5 and state["writes"] == 0


def test_the_write_flush_rewrites_the_buffer_instead():
    torch, state = fake_torch([10.0] * 4)
    BG.Bench(torch, flush="write").time({"x": lambda: None, "y": lambda: None}, 2)
    assert state["writes"] == 4 and state["reads"] == 0


def test_a_set_spoiled_by_stalls_is_timed_again():
    torch, _ = fake_torch([10.0, 90.0, 80.0, 85.0, 11.0] + [10.0, 10.4, 10.2, 10.3, 10.1])
    b = BG.Bench(torch)
    assert b.time({"x": lambda: None}, 5) == {"x": 10.2}
    assert b.last["retimed"] is True and b.last["spread"] < b.SPREAD
