"""The bounded stream wait behind sync=True launches (tessera.runtime.wait): answers, deadlines, the env knob."""

from __future__ import annotations

import pytest

from tessera.ir import diagnostics as D
from tessera.runtime import wait

BUSY, DONE, FAULT = "NOT_READY", "SUCCESS", "ILLEGAL_ADDRESS"


class FakeStream:
    """cuStreamQuery's answers for a kernel that ends after `busy_s` seconds of a fake clock (None: never)."""

    def __init__(self, busy_s, answer=DONE):
        self.now, self.busy_s, self.answer, self.queries, self.sleeps = 0.0, busy_s, answer, 0, []

    def query(self, handle):
        self.queries += 1
        done = self.busy_s is not None and self.now >= self.busy_s
        return (self.answer if done else BUSY,)

    def clock(self):
        self.now += 1e-6  # each look at the clock costs a microsecond
        return self.now

    def sleep(self, s):
        assert 0 < s <= wait.MAX_PAUSE_S
        self.sleeps.append(s)
        self.now += s


def _wait(stream, bound):
    return wait.wait(stream.query, 0, BUSY, bound, clock=stream.clock, sleep=stream.sleep)


@pytest.mark.parametrize("answer", [DONE, FAULT])
def test_the_first_answer_that_is_not_busy_is_returned(answer):
    s = FakeStream(0.5, answer)
    assert _wait(s, 10.0) == answer
    assert 0.5 <= s.now < 0.5 + 2 * wait.MAX_PAUSE_S  # woke within a pause of the end


def test_a_short_kernel_is_polled_without_sleeping():
    s = FakeStream(1e-4)
    assert _wait(s, 10.0) == DONE and not s.sleeps


def test_a_kernel_that_never_ends_times_out_at_the_bound():
    s = FakeStream(None)
    with pytest.raises(wait.LaunchTimeout) as err:
        _wait(s, 2.0)
    assert err.value.bound == 2.0 and 2.0 <= s.now < 2.0 + 2 * wait.MAX_PAUSE_S
    assert s.queries < 2.0 / wait.MAX_PAUSE_S + 10_000  # backed off: not a million busy queries


@pytest.mark.parametrize("raw, want", [(None, wait.DEFAULT_TIMEOUT_S), ("", wait.DEFAULT_TIMEOUT_S), ("2.5", 2.5),
                                       ("0", None), ("none", None), ("inf", None)])
def test_the_bound_comes_from_the_environment(monkeypatch, raw, want):
    if raw is None:
        monkeypatch.delenv(wait.ENV, raising=False)
    else:
        monkeypatch.setenv(wait.ENV, raw)
    assert wait.timeout_s() == want


@pytest.mark.parametrize("raw", ["soon", "-1", "nan"])
def test_a_malformed_bound_is_a_coded_error(monkeypatch, raw):
    monkeypatch.setenv(wait.ENV, raw)
    with pytest.raises(D.TesseraError) as err:
        wait.timeout_s()
    assert err.value.code is D.RUNTIME_LAUNCH_TIMEOUT and wait.ENV in str(err.value) and err.value.hint
