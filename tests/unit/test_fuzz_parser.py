"""Fuzz tessera-opt with mutated lit fixtures and mutated pass pipelines: IR or coded diagnostics, exit 0 or
1, no hang, no traceback.

Mutations (truncation, token deletion, swap and duplication, random and
non-UTF-8 bytes) start from every fixture under tests/lit, positive and
negative. Pass pipelines are built from the registered passes, their options
and plausible and implausible values, then mutated character by character
(braces, quotes, escapes, commas, NULs), and run through `--pass-pipeline`
on a small fixture. Runs are in-process through `opt_main` with captured
streams.

Beyond the output format, a spy on `wrap_unexpected` (the place where parse
and verify turn a foreign exception into a diagnostic) records which
exception types the IR code let escape: an AttributeError, TypeError,
IndexError, KeyError, ... there is a bug in an op's parser or verifier that
the catch-all merely hides, so the test fails on it.

Time is part of correctness (issue 13): every input runs under a wall-clock
limit (`_time_limit.time_limit`, SIGALRM); one over it fails the test, and
the input is saved to $TESSERA_FUZZ_SAVE_DIR (default `.fuzz-failures/` at the
repository root, git-ignored) under a name the failure message gives.
Shrinking is off: one hang would cost the limit for every shrink step, and
the saved file is the exact input.

Scale: a CI run makes 5,000 IR mutations (3,000 split, 1,000 through passes,
1,000 with --verify-diagnostics), 300 random byte strings and 1,000 pass
pipelines: about 70 s on two cores (with tests/unit/test_fuzz_dsl.py's 1,000
tile programs, about 95 s). Environment:
  TESSERA_FUZZ_SCALE=10    ten times as many examples of every kind (any positive int)
  TESSERA_FUZZ_LIMIT_S=10  the per-input wall-clock limit in seconds (default 10: the largest
                           fixture takes under a second; a hang takes minutes)
  TESSERA_FUZZ_SAVE_DIR=d  where inputs that fail are saved
"""

from __future__ import annotations

import io
import os
import re
import traceback

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from _lit_fixtures import fixtures, positive_fixtures
from _time_limit import time_limit
from tessera import cli
from tessera.ir import diagnostics as D
from tessera.ir import verify
from tessera.target.arch import ARCH_NAMES
from tessera.passes.pipeline import available_passes, named_pipelines

SCALE = int(os.environ.get("TESSERA_FUZZ_SCALE") or 1)
LIMIT_S = float(os.environ.get("TESSERA_FUZZ_LIMIT_S") or 10)

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


def _check(escaped: list, data: bytes, args: list[str], label: str, saved: bytes | str | None = None) -> None:
    """Run tessera-opt on `data` under the time limit; `saved` (default `data`) is what a failure saves."""
    escaped.clear()
    out, err = io.StringIO(), io.StringIO()
    with time_limit(LIMIT_S, data if saved is None else saved, label, ".mlir" if saved is None else ".txt"):
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


_SETTINGS = dict(deadline=None, derandomize=True, database=None, phases=(Phase.explicit, Phase.generate),
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=3000 * SCALE, **_SETTINGS)
@given(mutated())
def test_mutated_fixtures(escaped, data):
    _check(escaped, data, ["--split-input-file"], "mutated-split")


@settings(max_examples=1000 * SCALE, **_SETTINGS)
@given(mutated())
def test_mutated_fixtures_whole_file_with_passes(escaped, data):
    _check(escaped, data, ["-p", "builtin.module(tile-verify-target{arch=sm_90a},cse,canonicalize,dce)"],
           "mutated-passes")


@settings(max_examples=1000 * SCALE, **_SETTINGS)
@given(mutated())
def test_mutated_fixtures_verify_diagnostics(escaped, data):
    _check(escaped, data, ["--split-input-file", "--verify-diagnostics"], "mutated-verify")


@settings(max_examples=300 * SCALE, **_SETTINGS)
@given(st.binary(max_size=400))
def test_random_bytes(escaped, data):
    _check(escaped, data, [], "random-bytes")


# --- pass pipelines -----------------------------------------------------------------------------------------

PASSES = {name: info for name, info in available_passes().items() if not name.startswith("test-")}
PIPELINES = sorted(named_pipelines())
OPTIONS = sorted({o.name for info in PASSES.values() for o in info.options}) + ["bogus", "arch_", "Stages"]
VALUES = ["sm_80", "sm_86", "sm_90", "sm_90a", "sm_7", "sm_100", "1", "2", "0", "-3", "4", "64",
          "99999999999999999999", "1.5", "1e3", "1,2", "2,2", "4,1,", "true", "false", "cooperative", "pingpong",
          "b", "a", "tma", "direct", '"quoted"', '"a\\"b"', '""', "x", "-", ""]
NOISE = ["{", "}", "(", ")", "[", "]", ",", "=", " ", '"', "\\", "'", "-", "a", "1", "\n", "\r", "\t", "\x00",
         "\u00e9", "builtin.module("]
# Small inputs with tile ops for the lowering passes to work on (a pipeline runs on the whole file).
PIPELINE_INPUTS = sorted((p for p in positive_fixtures() if p.stat().st_size < 6000),
                         key=lambda p: p.name)


def _options(name: str) -> list:
    """The options of a pass, or those a named pipeline forwards to its passes."""
    if name in PASSES:
        return list(PASSES[name].options)
    text = named_pipelines()[name][0]
    return list({o.name: o for n, info in PASSES.items() if re.search(rf"\b{re.escape(n)}\b", text)
                 for o in info.options}.values())


def _good_value(draw, opt) -> str:
    if opt.field == "arch":
        return draw(st.sampled_from(ARCH_NAMES))
    if opt.choices is not None:
        one = st.sampled_from([str(c) for c in opt.choices])
    elif opt.scalar is bool:
        one = st.sampled_from(["true", "false", "1", "0"])
    elif opt.scalar in (int, float):
        one = st.sampled_from(["1", "2", "3", "4", "8"])
    else:
        one = st.sampled_from(["x", '"a b"', "cooperative"])
    return ",".join(draw(st.lists(one, min_size=1, max_size=3))) if opt.is_list else draw(one)


@st.composite
def pipeline_text(draw) -> str:
    """Half well-formed (each pass with its required options and values of the right type), half anything."""
    well_formed = draw(st.booleans())
    elements = []
    for _ in range(draw(st.integers(0 if not well_formed else 1, 4))):
        name = draw(st.sampled_from(sorted(PASSES) + PIPELINES))
        own = _options(name)
        if well_formed:
            chosen = [o for o in own if o.required or draw(st.integers(0, 3)) == 0]
            pairs = [f"{o.name}={_good_value(draw, o)}" for o in chosen]
        else:
            keys = draw(st.lists(st.sampled_from([o.name for o in own] + OPTIONS), max_size=3))
            pairs = [k if draw(st.integers(0, 5)) == 0 else f"{k}={draw(st.sampled_from(VALUES))}" for k in keys]
        elements.append(name + ("{" + " ".join(pairs) + "}" if pairs or draw(st.integers(0, 5)) == 0 else ""))
    text = ",".join(elements)
    if draw(st.booleans()):
        text = f"builtin.module({text})"
    for _ in range(0 if well_formed else draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["delete", "insert", "truncate", "duplicate"]))
        at = draw(st.integers(0, len(text)))
        if kind == "delete":
            text = text[:at] + text[at + 1:]
        elif kind == "insert":
            text = text[:at] + draw(st.sampled_from(NOISE)) + text[at:]
        elif kind == "truncate":
            text = text[:at]
        else:
            end = draw(st.integers(at, len(text)))
            text = text[:end] + text[at:end] + text[end:]
    return text


@settings(max_examples=1000 * SCALE, **_SETTINGS)
@given(pipeline_text(), st.sampled_from(PIPELINE_INPUTS), st.booleans())
def test_mutated_pass_pipelines(escaped, pipeline, path, joined):
    args = [f"--pass-pipeline={pipeline}"] if joined else ["-p", pipeline]
    _check(escaped, path.read_bytes(), args, "mutated-pipeline", saved=f"{args}\n{path.name}\n")
