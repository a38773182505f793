"""A wall-clock limit on one test input: over the limit fails the test and saves the input to a file.

    with time_limit(5.0, data, "mutated-ir", ".mlir"):
        cli.opt_main(...)

The limit is an interval timer (SIGALRM), so it interrupts pure Python and
the regex engine alike, in-process and without a subprocess; it needs the
main thread of a Unix process, which is where pytest runs tests. The signal
raises `TimeLimitExceeded`, a BaseException, so the `except Exception`
catch-alls that turn foreign errors into diagnostics cannot swallow it; and
in case some `except BaseException` does, the handler also sets a flag that
is checked when the block ends.

Inputs go to $TESSERA_FUZZ_SAVE_DIR, by default `.fuzz-failures/` at the
repository root (git-ignored), named by test label and content hash, and the
failure message names the file. Any other failure inside the block saves the
input too and gets a note naming the file. Limits do not nest.
"""

from __future__ import annotations

import hashlib
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

SAVE_DIR_ENV = "TESSERA_FUZZ_SAVE_DIR"
DEFAULT_SAVE_DIR = Path(__file__).resolve().parents[2] / ".fuzz-failures"


# pytest's and hypothesis's own control-flow exceptions: not a failure of the input, nothing to save.
_CONTROL_FLOW = ("Skipped", "XFailed", "UnsatisfiedAssumption", "StopTest", "KeyboardInterrupt")


class TimeLimitExceeded(BaseException):
    """Raised inside the code under test when its time is up (not an Exception: catch-alls miss it)."""


def save_input(data: bytes | str, label: str, suffix: str = ".txt") -> Path:
    """Write `data` to the save directory as `<label>-<sha1 prefix><suffix>` and return the path."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    folder = Path(os.environ.get(SAVE_DIR_ENV) or DEFAULT_SAVE_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{label}-{hashlib.sha1(raw).hexdigest()[:12]}{suffix}"
    path.write_bytes(raw)
    return path


@contextmanager
def time_limit(seconds: float, data: bytes | str, label: str, suffix: str = ".txt"):
    """Run the block under a `seconds` wall-clock limit; `data` is the input saved if it fails.

    `label` names the saved file (letters, digits, `-`); `suffix` is its extension (`.mlir`, `.py`).
    """
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("time_limit needs the main thread (SIGALRM is delivered there)")
    if signal.getitimer(signal.ITIMER_REAL)[0]:
        raise RuntimeError("time_limit does not nest: an interval timer is already running")
    fired = False

    def on_alarm(signum, frame):
        nonlocal fired
        fired = True
        raise TimeLimitExceeded(f"over the {seconds:g} s limit")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except BaseException as err:
        if not fired:
            if type(err).__name__ not in _CONTROL_FLOW:
                err.add_note(f"input saved to {save_input(data, label, suffix)}")
            raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if fired:
        path = save_input(data, label, suffix)
        pytest.fail(f"{label}: one input ran over its {seconds:g} s wall-clock limit (a hang or a super-linear "
                    f"path); the input is saved to {path}", pytrace=False)
