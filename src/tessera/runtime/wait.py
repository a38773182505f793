"""A bounded wait for a stream: a synchronised launch that does not finish in time is RUNTIME_LAUNCH_TIMEOUT.

A kernel that waits forever (a deadlocked mbarrier ring, a barrier a thread
never reaches) would otherwise leave `launch(..., sync=True)` inside
cuStreamSynchronize for good: a stuck process, not an error. Every wait the
runtime does for a launch polls the stream instead, up to a bound:

* `TESSERA_LAUNCH_TIMEOUT_S` seconds (default DEFAULT_TIMEOUT_S = 60); `0`,
  `none` or `inf` waits without a bound (cuStreamSynchronize).
* The first milliseconds are a busy poll (as fast as a blocking sync for short
  kernels), then the poll backs off to one query per millisecond.

The driver cannot stop one running kernel: only destroying the context does,
and that frees every allocation of the process (torch's too), so the runtime
does not. After a timeout the kernel keeps running; the error says so, the
staging buffers it may still read are kept alive rather than freed, and work
queued behind it on the same stream waits for it. A kernel that ends late
(a slow kernel, or a test's released spin) leaves the process usable.
"""

from __future__ import annotations

import math
import os
import time

from tessera.ir.diagnostics import RUNTIME_LAUNCH_TIMEOUT, TesseraError

ENV = "TESSERA_LAUNCH_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 60.0
SPIN_S = 2e-3  # busy-poll this long before sleeping between queries
MAX_PAUSE_S = 1e-3


class LaunchTimeout(Exception):
    """The stream was still busy at the deadline (the caller turns it into its coded error)."""

    def __init__(self, bound: float):
        super().__init__(bound)
        self.bound = bound


def timeout_s() -> float | None:
    """The bound in seconds from TESSERA_LAUNCH_TIMEOUT_S, or None for no bound."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    if raw.lower() in ("none", "inf", "0"):
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise TesseraError(RUNTIME_LAUNCH_TIMEOUT, f"{ENV}={raw!r} is not a positive number of seconds",
                           hint=f"set {ENV} to seconds (e.g. 120), or to 0 or none for no bound")
    return None if math.isinf(value) else value


def wait(query, handle, not_ready, bound: float, *, clock=time.monotonic, sleep=time.sleep):
    """Poll `query(handle)` (cuStreamQuery) until it stops answering `not_ready`; return that answer.

    Raises LaunchTimeout once `bound` seconds have passed with the stream still busy.
    """
    start = clock()
    deadline, spin_until = start + bound, start + SPIN_S
    pause = 0.0
    while True:
        (err,) = query(handle)
        if err != not_ready:
            return err
        now = clock()
        if now >= deadline:
            raise LaunchTimeout(bound)
        if now >= spin_until:
            pause = min(MAX_PAUSE_S, pause * 2 or 20e-6, deadline - now)
            sleep(pause)
