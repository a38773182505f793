"""Bugs the issue-13 fuzzers found (test_fuzz_dsl.py, test_fuzz_parser.py), each pinned by its smallest cases."""

from __future__ import annotations

import io
import itertools
import linecache

import numpy as np
import pytest

import tessera
from tessera import cli, tl
from tessera.ir import diagnostics as D
from tessera.reference import run

T = tessera.tensor
_names = itertools.count()
HEAD = """@tessera.kernel
def k(X, Out, s, *, BM=4, BN=4):
    m0 = tl.program_id(0) * BM
    x = tl.load(X, [m0, 0], (BM, BN))
    m = x > 0.5
    i = tl.arange((BM, BN), 0)
    for j in tl.range(2):
        inner = x + 1.0
"""


def trace(body: str):
    """Trace a kernel whose body is HEAD then `body` then a store of `out` (default x)."""
    source = HEAD + "".join(f"    {line}\n" for line in body.split("; ")) + "    tl.store(Out, [m0, 0], out)\n"
    filename = f"<regression-{next(_names)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"tessera": tessera, "tl": tl}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["k"].trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"), tessera.scalar("f32"))


def trace_error(body: str) -> D.TesseraError:
    with pytest.raises(D.TesseraError) as info:
        trace(body)
    return info.value


def run_out(body: str) -> np.ndarray:
    x = np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4)
    out = np.zeros((4, 4), np.float32)
    run(trace(body), (1, 1), [x, out, 2.0])
    return out


# Arithmetic on i1 (mask) tiles traced and verified, then ran with numpy's boolean rules: tile.neg failed at run
# time, tl.sum was a logical or, tile.max an or (MLIR's signed reading would be an and).
@pytest.mark.parametrize("body", ["out = (-m).to(tl.f32)", "out = abs(m).to(tl.f32)",
                                  "out = tl.sum(m, 0).to(tl.f32)", "out = tl.max(m, 1).to(tl.f32)"])
def test_arithmetic_on_mask_tiles_is_refused_at_the_line(body):
    err = trace_error(body)
    assert err.code is D.DSL_UNSUPPORTED and "i1 (mask)" in err.message and err.location.split(":")[1] == "9"


def test_mask_operators_still_work():
    out = run_out("out = tl.where(~m & (x > 0.2), 1.0, x) + (m | m).to(tl.f32) + tl.sum(m.to(tl.i32), 1).to(tl.f32)")
    x = np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4)
    want = np.where(~(x > 0.5) & (x > 0.2), 1.0, x) + (x > 0.5) + (x > 0.5).sum(1, keepdims=True)
    np.testing.assert_allclose(out, want, rtol=1e-6)


@pytest.mark.parametrize("op", ["tile.neg %m", "tile.abs %m", "tile.add %m, %m", "tile.max %m, %m"])
def test_the_verifier_refuses_elementwise_arithmetic_on_i1(op):
    text = (f"func.func @f(%m: !tile.tile<4x4xi1>) {{\n  %r = {op} : !tile.tile<4x4xi1>\n  func.return\n}}\n")
    err = io.StringIO()
    assert cli.opt_main(["-"], stdin=io.BytesIO(text.encode()), stdout=io.StringIO(), stderr=err) == 1
    assert "<stdin>:2:3: error: TILE_ELEMENT_TYPE_INVALID" in err.getvalue() and "i1 (mask)" in err.getvalue()


def test_the_verifier_refuses_reducing_i1():
    text = ("func.func @f(%m: !tile.tile<4x4xi1>) {\n  %r = tile.reduce sum 1 %m : !tile.tile<4x4xi1> -> "
            "!tile.tile<4x1xi1>\n  func.return\n}\n")
    err = io.StringIO()
    assert cli.opt_main(["-"], stdin=io.BytesIO(text.encode()), stdout=io.StringIO(), stderr=err) == 1
    assert "error: TILE_ELEMENT_TYPE_INVALID: tile.reduce is not defined on i1" in err.getvalue()


# Python operators the tracer does not define (`**`, `%`, `round`, `abs` of a scalar, ...), also on a name that
# escaped a tl.range loop, ended in a bare TypeError.
@pytest.mark.parametrize("expr", ["x ** 2", "2.0 ** x", "x % 2.0", "round(x)", "divmod(x, 2)", "x << 1", "x ^ x",
                                  "tl.full((1, 1), s ** 2)", "tl.full((1, 1), abs(s))", "tl.full((1, 1), round(s))",
                                  "tl.full((1, 1), (~m0).to(tl.f32))", "tl.full((1, 1), (m0 & m0).to(tl.f32))"])
def test_python_operators_the_tracer_lacks_are_coded(expr):
    err = trace_error(f"out = x + {expr}")
    assert err.code is D.DSL_UNSUPPORTED and "is not defined on traced" in err.message


@pytest.mark.parametrize("expr", ["inner ** 2", "inner % 2", "round(inner)", "inner << 1", "abs(inner)"])
def test_operators_on_a_loop_escaped_name_are_coded(expr):
    err = trace_error(f"out = {expr}")
    assert err.code is D.DSL_LOOP_ESCAPE and "'inner' is defined inside the loop" in err.message


# Integer constants out of their type's range: saturated in tiles (2**33 in an i32 tile read as 2**31 - 1),
# wrapped in index arithmetic, xDSL's bare VerifyException for i32 scalars; an int beyond the float range: a bare
# OverflowError.
@pytest.mark.parametrize("body", ["out = (i + 2 ** 33).to(tl.f32)", "out = tl.full((BM, BN), 2 ** 31).to(tl.f32)",
                                  "out = tl.full((BM, BN), 5, tl.i1).to(tl.f32)",
                                  "out = tl.where(m, i, -2 ** 31 - 1).to(tl.f32)",
                                  "out = x + tl.full((1, 1), s.to(tl.i32) * 2 ** 40).to(tl.f32)",
                                  "out = x + tl.full((1, 1), m0 + 2 ** 70).to(tl.f32)",
                                  "out = tl.load(X, [2 ** 63, 0], (BM, BN))",
                                  "out = x + 10 ** 400", "out = x + tl.full((1, 1), s * 10 ** 400)"])
def test_constants_out_of_range_are_refused_not_saturated(body):
    err = trace_error(body)
    assert err.code is D.DSL_DTYPE_MISMATCH and ("out of range" in err.message or "too large" in err.message)


def test_constants_at_the_edge_of_the_range_are_exact():
    out = run_out("out = (tl.full((BM, BN), -2 ** 31) + (2 ** 31 - 1)).to(tl.f32) + (tl.full((1, 1), True) == 1)"
                  ".to(tl.f32)")
    np.testing.assert_array_equal(out, np.zeros((4, 4), np.float32))


@pytest.mark.parametrize("value, width", [("2147483648.0", "i32"), ("-2147483649.0", "i32"), ("2.0", "i1"),
                                          ("-1.0", "i1")])
def test_the_verifier_refuses_tile_constants_out_of_range(value, width):
    text = f"func.func @f() {{\n  %c = tile.constant {value} : !tile.tile<4x4x{width}>\n  func.return\n}}\n"
    err = io.StringIO()
    assert cli.opt_main(["-"], stdin=io.BytesIO(text.encode()), stdout=io.StringIO(), stderr=err) == 1
    assert "error: TILE_ATTR_INVALID: tile.constant" in err.getvalue() and "does not fit" in err.getvalue()


# A pass pipeline with a newline in it (found by test_fuzz_parser.py at TESSERA_FUZZ_SCALE=10): the message
# quoted the text as it was, so the diagnostic ran over two lines.
@pytest.mark.parametrize("pipeline", ["b\nuiltin.modu", 'cse{x="a\nb"}', "cse{a\r=1}", "foo\nbar", "cse\x00"])
def test_pipeline_diagnostics_stay_on_one_line(pipeline):
    err = io.StringIO()
    rc = cli.opt_main([f"--pass-pipeline={pipeline}"], stdin=io.BytesIO(b""), stdout=io.StringIO(), stderr=err)
    first, *rest = err.getvalue().splitlines()
    assert rc == 1 and first.startswith("<pass-pipeline>:1:") and " error: OPT_" in first
    assert all(line.startswith("  hint: ") for line in rest)
