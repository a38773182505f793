"""Fuzz tessera-opt with mutated lit fixtures: IR or coded diagnostics, exit 0 or 1, no hang, no traceback.

Mutations (truncation, token deletion, swap and duplication, random and
non-UTF-8 bytes) start from every fixture under tests/lit, positive and
negative. Runs are in-process through `opt_main` with captured streams, so
a few thousand examples fit in well under a minute on two cores.

Beyond the output format, a spy on `wrap_unexpected` (the place where parse
and verify turn a foreign exception into a diagnostic) records which
exception types the IR code let escape: an AttributeError, TypeError,
IndexError, KeyError, ... there is a bug in an op's parser or verifier that
the catch-all merely hides, so the test fails on it.
"""

from __future__ import annotations

import io
import re
import traceback

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _lit_fixtures import fixtures
from tessera import cli
from tessera.ir import diagnostics as D
from tessera.ir import verify

SEEDS = [p.read_bytes() for p in fixtures()]
TOKEN = re.compile(rb"%[\w.$-]+|![\w.]+|[A-Za-z_][\w.$-]*|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\"[^\"\n]*\"|\S")
LINE = re.compile(r"^(\S.*:\d+:\d+: error: [A-Z][A-Z0-9_]*: .*|  hint: .*)$")
# Exceptions xDSL raises by design on malformed IR (its verifiers and attribute constructors).
EXPECTED = ("VerifyException",)


def _tokens(data: bytes) -> list[tuple[int, int]]:
    return [m.span() for m in TOKEN.finditer(data)]


@st.composite
def mutated(draw) -> bytes:
    data = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "delete", "swap", "duplicate", "bytes", "non_utf8", "line"]))
        spans = _tokens(data) or [(0, 0)]
        if kind == "truncate":
            data = data[:draw(st.integers(0, len(data)))]
        elif kind == "delete":
            a, b = spans[draw(st.integers(0, len(spans) - 1))]
            data = data[:a] + data[b:]
        elif kind == "swap":
            (a1, b1), (a2, b2) = sorted(spans[draw(st.integers(0, len(spans) - 1))] for _ in range(2))
            if b1 <= a2:
                data = data[:a1] + data[a2:b2] + data[b1:a2] + data[a1:b1] + data[b2:]
        elif kind == "duplicate":
            a, _ = spans[draw(st.integers(0, len(spans) - 1))]
            _, b = spans[draw(st.integers(0, len(spans) - 1))]
            a, b = min(a, b), max(a, b)
            data = data[:b] + data[a:b] + data[b:]
        elif kind == "line":  # move a whole line elsewhere (definitions after uses, ops out of regions)
            lines = data.split(b"\n")
            line = lines.pop(draw(st.integers(0, len(lines) - 1)))
            lines.insert(draw(st.integers(0, len(lines))), line)
            data = b"\n".join(lines)
        else:
            pos = draw(st.integers(0, len(data)))
            noise = draw(st.binary(min_size=1, max_size=8)) if kind == "bytes" else \
                draw(st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x80\x80", b"\xf8\x88\x80"]))
            data = data[:pos] + noise + data[pos:]
    return data


def _coded_in_chain(err: BaseException | None) -> bool:
    while err is not None:
        if isinstance(err, D.TesseraError):
            return True
        err = err.__cause__ or err.__context__
    return False


@pytest.fixture(scope="module")
def escaped():
    """Collects the exceptions that reach wrap_unexpected while one input runs."""
    seen: list[BaseException] = []
    original = verify.wrap_unexpected

    def spy(err, *args, **kwargs):
        diag = original(err, *args, **kwargs)
        if diag is not err and not _coded_in_chain(err):
            seen.append(err)
        return diag

    verify.wrap_unexpected = cli.wrap_unexpected = spy
    yield seen
    verify.wrap_unexpected = cli.wrap_unexpected = original


def _check(escaped: list, data: bytes, args: list[str]) -> None:
    escaped.clear()
    out, err = io.StringIO(), io.StringIO()
    rc = cli.opt_main(args, stdin=io.BytesIO(data), stdout=out, stderr=err)
    text = err.getvalue()
    assert rc in (0, 1), (rc, data)
    # a pass crash is reported with the code OPT_PASS_FAILED; the mutated input may itself contain that word
    assert "Traceback" not in text and "error: OPT_PASS_FAILED" not in text, (text, data)
    if rc == 0 and "--verify-diagnostics" not in args:
        assert text == "" and out.getvalue().startswith("builtin.module {"), (text, data)
    else:
        for line in text.splitlines():
            assert LINE.match(line), (line, data)
    if rc == 1:
        assert text, data
    foreign = ["".join(traceback.format_exception(e)[-4:]) for e in escaped if type(e).__name__ not in EXPECTED]
    assert not foreign, (foreign, data)


_SETTINGS = dict(deadline=2000, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=1500, **_SETTINGS)
@given(mutated())
def test_mutated_fixtures(escaped, data):
    _check(escaped, data, ["--split-input-file"])


@settings(max_examples=600, **_SETTINGS)
@given(mutated())
def test_mutated_fixtures_whole_file_with_passes(escaped, data):
    _check(escaped, data, ["-p", "builtin.module(tile-verify-target{arch=sm_90a},cse,canonicalize,dce)"])


@settings(max_examples=600, **_SETTINGS)
@given(mutated())
def test_mutated_fixtures_verify_diagnostics(escaped, data):
    _check(escaped, data, ["--split-input-file", "--verify-diagnostics"])


@settings(max_examples=300, **_SETTINGS)
@given(st.binary(max_size=400))
def test_random_bytes(escaped, data):
    _check(escaped, data, [])

