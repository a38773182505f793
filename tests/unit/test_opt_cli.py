"""tessera-opt in-process: IR or coded diagnostics for any input, exit 0/1, expected-diagnostic checking."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import pytest
from xdsl.passes import ModulePass

from tessera import cli
from tessera.ir import diagnostics as D
from tessera.passes import pipeline as P
from tessera.passes.options import option_infos

DIAG = re.compile(r"^\S.*:\d+:\d+: error: [A-Z][A-Z0-9_]*: .+$")

GOOD = """func.func @f(%a: !tile.tile<4x4xf32>, %O: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.exp %a : !tile.tile<4x4xf32>
  tile.store %x, %O[%c0, %c0] : !tile.tile<4x4xf32> -> memref<4x4xf32>
  func.return
}
"""


def run(args, data: bytes | str = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    raw = data.encode() if isinstance(data, str) else data
    rc = cli.opt_main(list(args), stdin=io.BytesIO(raw), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def assert_coded(stderr: str, code: str | None = None) -> None:
    """Every line is a located, coded diagnostic or its hint; never a traceback."""
    lines = stderr.splitlines()
    assert lines and "Traceback" not in stderr, stderr
    for line in lines:
        assert DIAG.match(line) or line.startswith("  hint: "), line
    if code is not None:
        assert f"error: {code}:" in stderr, stderr


def test_parses_verifies_and_prints():
    rc, out, err = run(["-"], GOOD)
    assert (rc, err) == (0, "")
    assert out.startswith("builtin.module {\n") and "%x = tile.exp %a : !tile.tile<4x4xf32>" in out
    assert run([], out)[1] == out


def test_file_input_and_output(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    rc, out, _ = run([str(src), "-o", str(tmp_path / "out.mlir")])
    assert rc == 0 and out == ""
    assert (tmp_path / "out.mlir").read_text() == run([str(src)])[1]


def test_output_file_is_not_written_on_failure(tmp_path):
    rc, _, err = run(["-o", str(tmp_path / "out.mlir")], "func.func @f() {\n  %a = tile.program_id 9\n  func.return\n}")
    assert rc == 1 and not (tmp_path / "out.mlir").exists()
    assert_coded(err, "TILE_ATTR_INVALID")


def test_help_lists_passes():
    rc, out, _ = run(["--help"])
    assert rc == 0 and "usage: tessera-opt" in out and "tile-verify-target" in out and "arch: one of" in out


@pytest.mark.parametrize("data, code", [
    (b"", None),
    (b"   \n// only a comment\n", None),
    (b"\xff\xfe\x00garbage", "IR_INPUT"),
    (b"func.func @f() {\n  // caf\xe9\n}", "IR_INPUT"),
    (b"\x00\x01\x02\x7f", "IR_PARSE"),
    (b"\x1b[31mred", "IR_PARSE"),
    (b"func.func @f() {" * 3000, "IR_PARSE"),
    (b"(" * 100_000, "IR_PARSE"),
    (b"func.func @f(%a: " + b"memref<" * 2000 + b"f32" + b">" * 2000 + b") { func.return }", "IR_PARSE"),
    (b"builtin.module {" * 2000 + b"}" * 2000, "IR_PARSE"),
    (b"%x = arith.constant " + b"9" * 5000 + b" : i32", "IR_PARSE"),
    (b"func.func @f() {\n  %a = tile.program_id 99999999999999999999999999999\n  func.return\n}", "TILE_ATTR_INVALID"),
    (b"func.func @f(%a: !tile.tile<99999999999999999999x4xf32>) {\n  func.return\n}", None),
    (b"func.func @f() {\n  %x = nv.mma_sync_magic : i32\n  func.return\n}", "IR_PARSE"),
    (b"func.func @f() {\n  %x = unknowndialect.op : i32\n  func.return\n}", "IR_PARSE"),
    (b'"tile.add"() : () -> ()', "IR_VERIFY"),
    (b'"scf.for"() ({}) : () -> ()', "IR_VERIFY"),
    (b'func.func @f(%a: !tile.tile<4x4xf32>) {\n  %x = "tile.exp"(%a) : (!tile.tile<4x4xf32>) -> i32\n  func.return\n}',
     None),
    (b"func.func @f() {\n  func.return\n}\nfunc.func @f() {\n  func.return\n}", "IR_VERIFY"),
    (b"!t = !tile.tile<4x4xf32>\nfunc.func @f(%a: !t) {\n  func.return\n}", None),
])
def test_hostile_input_gives_ir_or_a_coded_diagnostic(data, code):
    rc, out, err = run(["--split-input-file"], data)
    assert rc in (0, 1)
    if rc == 0:
        assert err == "" and out.startswith("builtin.module {")
    else:
        assert_coded(err, code)
        assert "\x00" not in err and "\x1b" not in err


def test_bad_command_lines_are_coded_not_argparse_exits():
    for args in (["--bogus"], ["a.mlir", "b.mlir"], ["-p", "cse", "-p", "dce"], ["-o"]):
        rc, _, err = run(args, GOOD)
        assert rc == 1
        assert_coded(err, "OPT_COMMAND_LINE")


@pytest.mark.parametrize("pipeline, code", [
    ("frob", "OPT_PASS_UNKNOWN"), ("cse{x=1}", "OPT_OPTION_UNKNOWN"), ("tile-verify-target", "OPT_OPTION_MISSING"),
    ("tile-verify-target{arch=sm_12}", "OPT_OPTION_INVALID"), ("cse{", "OPT_PIPELINE_SYNTAX"),
    ("cse{a=$}", "OPT_PIPELINE_SYNTAX"), ("test-pass-crash", "OPT_PASS_FAILED"),
])
def test_pipeline_errors(pipeline, code):
    rc, out, err = run(["--pass-pipeline", pipeline], GOOD)
    assert rc == 1 and out == ""
    assert_coded(err, code)


@dataclass(frozen=True)
class _BreakIR(ModulePass):
    """Erase every tile.exp, leaving its uses dangling (a buggy rewrite)."""

    name = "test-break-ir"

    def apply(self, ctx, op) -> None:
        for o in list(op.walk()):
            if o.name == "tile.exp":
                o.detach()


def test_ir_is_verified_after_every_pass(monkeypatch):
    P.available_passes()
    monkeypatch.setitem(P._PASSES, _BreakIR.name, P.PassInfo(_BreakIR.name, _BreakIR, "break", option_infos(_BreakIR)))
    rc, out, err = run(["-p", "cse,test-break-ir,dce", "--print-ir-after-all"], GOOD)
    assert rc == 1 and out == ""
    assert "// -----// IR Dump After cse //----- //" in err and "IR Dump After test-break-ir" not in err
    assert "after pass 'test-break-ir'" in err


def test_print_ir_after_all_goes_to_stderr():
    rc, out, err = run(["-p", "builtin.module(cse,dce)", "--print-ir-after-all"], GOOD)
    assert rc == 0 and "IR Dump" not in out
    headers = [line for line in err.splitlines() if line.startswith("// -----// IR Dump After")]
    assert headers == ["// -----// IR Dump After cse //----- //", "// -----// IR Dump After dce //----- //"]


def test_split_chunks_keep_true_line_numbers():
    text = "func.func @a() {\n  func.return\n}\n// -----\n\nfunc.func @b() {\n  %x = tile.program_id 4\n  func.return\n}\n"
    rc, out, err = run(["--split-input-file"], text)
    assert rc == 1 and "func.func @a()" in out
    assert err.startswith("<stdin>:7:3: error: TILE_ATTR_INVALID")
    rc, _, err = run([], text)  # one chunk: the same op, the same line
    assert rc == 1 and err.startswith("<stdin>:7:3: error: TILE_ATTR_INVALID")


BAD_AXIS = "func.func @f() {{\n{before}  %a = tile.program_id 5{trailing}\n{after}  func.return\n}}\n"


@pytest.mark.parametrize("before, trailing, after, ok", [
    ("", " // expected-error {{TILE_ATTR_INVALID}}", "", True),
    ("", " // expected-error {{TILE_ATTR_INVALID: tile.program_id: axis 5 is not}}", "", True),
    ("", " // expected-error {{axis 5}}", "", True),
    ("  // expected-error@+1 {{TILE_ATTR_INVALID}}\n", "", "", True),
    ("  // expected-error@+2 {{TILE_ATTR_INVALID}}\n  // unrelated\n", "", "", True),
    ("", "", "  // expected-error@-1 {{TILE_ATTR_INVALID}}\n", True),
    ("", " // expected-error {{TILE_TYPE_INVALID}}", "", False),  # wrong code
    ("", " // expected-error {{axis 6}}", "", False),  # wrong text
    ("  // expected-error {{TILE_ATTR_INVALID}}\n", "", "", False),  # wrong line
    ("  // expected-error@+2 {{TILE_ATTR_INVALID}}\n", "", "", False),  # wrong offset
    ("", "", "", False),  # unexpected
    ("", " // expected-error {{TILE_ATTR_INVALID}}", "  // expected-error@-1 {{axis 5}}\n", False),  # one too many
    ("", " // expected-error TILE_ATTR_INVALID", "", False),  # malformed
    ("", " // expected-note {{TILE_ATTR_INVALID}}", "", False),  # not an error
])
def test_verify_diagnostics_matches_code_text_and_line(before, trailing, after, ok):
    rc, _, err = run(["--verify-diagnostics"], BAD_AXIS.format(before=before, trailing=trailing, after=after))
    assert rc == (0 if ok else 1), err
    if ok:
        assert err == ""
    else:
        assert_coded(err)
        assert re.search(r"error: OPT_DIAGNOSTIC_(MISSING|UNEXPECTED|ANNOTATION):", err)


def test_verify_diagnostics_on_clean_input_with_no_annotations_passes():
    rc, out, err = run(["--verify-diagnostics"], GOOD)
    assert (rc, err) == (0, "") and "tile.exp" in out


def test_tessera_main_placeholder():
    assert cli.main([]) == 0 and cli.main(["--help"]) == 0 and cli.main(["compile"]) == 1


def test_diagnostics_are_never_raw_python_errors():
    # a registered code on every line: the catch-all never lets a bare exception name through
    for data in (b"func.func @f(%a: i32) {\n  %x = tile.neg %a : i32\n  func.return\n}", b"}" * 5, b"%"):
        rc, _, err = run([], data)
        assert rc == 1
        assert_coded(err)
        code = re.search(r"error: ([A-Z0-9_]+):", err).group(1)
        assert code in D.all_codes()
