"""Regexes that read user input or tool output match in linear time, and match what they matched before.

Issue 13: xDSL 0.74's string-literal regex backtracks exponentially on an
unterminated literal (`tessera-opt` hung for minutes on a 40-character line);
Tessera lexes with `LinearLexer` (tessera.ir.parse). The SASS readers had two
quadratic regexes. Each fix is checked twice: the new regex agrees with the
old one on many generated strings (short enough for the old one to finish),
and an adversarial input runs under a wall-clock limit that the old regex
overshoots by orders of magnitude. The regexes found linear in the audit
(xDSL's MLIR whitespace/identifier/number rules, its pass-pipeline lexer)
get the wall-clock guard only.
"""

from __future__ import annotations

import io
import itertools
import random
import re

import pytest
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from _lit_fixtures import fixtures
from _time_limit import time_limit
from tessera import cli
from tessera.target.nvidia.toolchain import sass
from tessera.ir import diagnostics as D
from tessera.ir.parse import LinearLexer, parse_module
from tessera.passes import parse_pipeline

OLD_STRING = MLIRLexer._unescaped_characters_regex
NEW_STRING = LinearLexer._unescaped_characters_regex
# Every character class the literal regex tells apart: quote, backslash, the escape letters, hex digits
# (both cases), a non-hex letter, the excluded controls, a carriage return (allowed), and non-ASCII.
ALPHABET = ['"', "\\", "n", "t", "a", "F", "9", "g", " ", "\n", "\v", "\f", "\r", "é"]
LIMIT_S = 2.0  # the linear versions take milliseconds; the old ones minutes to years


def _end(regex: re.Pattern[str], text: str) -> int | None:
    m = regex.match(text)
    return None if m is None else m.end()


def test_string_regex_matches_what_xdsl_matched_on_every_short_string():
    for n in range(6):
        for chars in itertools.product(ALPHABET, repeat=n):
            text = '"' + "".join(chars)
            assert _end(NEW_STRING, text) == _end(OLD_STRING, text), text


def test_string_regex_matches_what_xdsl_matched_on_random_strings():
    rng = random.Random(13)
    weights = [6, 4, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1]
    accepted = 0
    for _ in range(20000):
        body = "".join(rng.choices(ALPHABET, weights, k=rng.randint(0, 14)))
        text = '"' + body + rng.choice(['"', '"x', "", "\n"])
        new = _end(NEW_STRING, text)
        assert new == _end(OLD_STRING, text), text
        accepted += new is not None
    assert accepted > 5000  # the comparison covers accepted literals, escapes and all, not only failures


def _tokens(lexer: MLIRLexer) -> list:
    out = []
    while True:
        try:
            tok = lexer.lex()
        except ParseError as err:
            return out + [("error", err.span.start, err.span.end)]  # the message is Tessera's own
        out.append((tok.kind, tok.span.start, tok.span.end))
        if tok.kind is MLIRTokenKind.EOF:
            return out


def test_linear_lexer_lexes_every_fixture_as_xdsl_does():
    for path in fixtures():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        assert _tokens(LinearLexer(Input(text, "f"))) == _tokens(MLIRLexer(Input(text, "f"))), path


RUNAWAY = "abcdefghij " * 20
UNTERMINATED = {
    "op-name": f'module {{\n  %0 = "tile.constant {RUNAWAY}\n}}\n',
    "first-token": f'"{RUNAWAY}\n',
    "symbol": f'func.func @"{RUNAWAY}\n',
    "attribute": f'module attributes {{a = "{RUNAWAY}}} {{\n}}\n',
    "bad-escape": f'module attributes {{a = "{RUNAWAY}\\q"}} {{\n}}\n',
    "hex-escape-cut": f'module attributes {{a = "{RUNAWAY}\\a"}} {{\n}}\n',
    "func-attribute": f'func.func @f() attributes {{a = "{RUNAWAY}\n',
}


@pytest.mark.parametrize("name", sorted(UNTERMINATED))
def test_an_unterminated_string_literal_fails_fast_with_a_coded_error(name):
    # Issue 13's reproducer and its relatives: with xDSL's regex each of these runs for minutes or more.
    text = UNTERMINATED[name]
    err = io.StringIO()
    with time_limit(LIMIT_S, text, f"unterminated-string-{name}", ".mlir"):
        rc = cli.opt_main(["-"], stdin=io.BytesIO(text.encode()), stdout=io.StringIO(), stderr=err)
    assert rc == 1 and "error: IR_PARSE: string literal is not closed on its line" in err.getvalue()


def test_the_issue_reproducer_is_located_at_its_string():
    text = UNTERMINATED["op-name"]
    with time_limit(LIMIT_S, text, "unterminated-string-location", ".mlir"):
        with pytest.raises(D.TesseraError) as info:
            parse_module(text, "r.mlir")
    assert info.value.code is D.IR_PARSE and info.value.location == "r.mlir:2:8"


# Inputs for the xDSL rules found linear: long runs of what each rule loops over, ending in a mismatch.
BIG = 200_000
LINEAR_MLIR = {
    "blank-lines-and-comments": ("  \n// c  \n\t" * (BIG // 10)) + "$",
    "identifier": "a" + "b.$_1" * (BIG // 5) + "$",
    "percent-ident": "%" + "x-._$" * (BIG // 5) + " $",
    "number": "1" * BIG + ".5e+" + "7" * BIG + " $",
    "hex": "0x" + "f" * BIG + " $",
    "many-short-strings": '"a" ' * (BIG // 4) + '"',
    "nested-types": "!tile.tile<" * (BIG // 11),
}


@pytest.mark.parametrize("name", sorted(LINEAR_MLIR))
def test_xdsl_mlir_lexer_rules_are_linear(name):
    text = LINEAR_MLIR[name]
    with time_limit(LIMIT_S, text, f"linear-mlir-{name}", ".mlir"):
        with pytest.raises(D.TesseraError):
            parse_module(text)


LINEAR_PIPELINE = {
    "unterminated-string": 'cse{x="' + "a b\\n" * (BIG // 4),
    "unterminated-bracket": "[" + "a,b\\]" * (BIG // 5),
    "digits-then-letter": "1" * BIG + "a{",
    "digits-then-dot": ("1" * 1000 + ".") * (BIG // 1000),
    "long-unknown-name": "c" * BIG,
    "many-options": "cse{" + "a=1 " * (BIG // 4),
    "blanks": "cse{" + " " * BIG + "x",
}


@pytest.mark.parametrize("name", sorted(LINEAR_PIPELINE))
def test_pass_pipeline_lexing_is_linear(name):
    text = LINEAR_PIPELINE[name]
    with time_limit(LIMIT_S, text, f"linear-pipeline-{name}", ".txt"):
        with pytest.raises(D.TesseraError) as info:
            parse_pipeline(text)
    assert info.value.code.name.startswith("OPT_")


# SASS: the old regexes, as they were, to compare against.
OLD_INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)\s*([^;]*);")
OLD_RES_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
SASS_PIECES = ["/*", "*/", "0a1f", "0", "f", " ", "  ", "@", "!", "U", "P", "T", "7", "HMMA", "R", ".F32",
               "_", ",", "[", "]", ";", "c", ":", "x", "/* 0x0000 */"]
SASS_PARTS = [["/*", ""], ["0310", "00a", "0010f", "g1"], ["*/", "*", ""], [" ", "  ", ""],
              ["", "", "@P0 ", "@!UPT  ", "@P ", "@!P0"], ["HMMA.16816.F32", "R", "MOV", "x", "_A", ""],
              [" ", "", "   "], ["R4, R8", "c[0x0][0x28]", "", "R1 , RZ"], [" ;", ";", "", " "],
              ["", "  /* 0x00000a0000017a02 */", " ;"]]


def _sass_line(rng: random.Random) -> str:
    parts = [options[0] if rng.random() < 0.8 else rng.choice(options) for options in SASS_PARTS]
    for _ in range(rng.choice([0, 0, 1, 2])):  # corrupt it a little
        parts.insert(rng.randint(0, len(parts)), rng.choice(SASS_PIECES))
    return "".join(parts)


def _groups(m: re.Match | None):
    return None if m is None else (m.start(), m.end(), m.groups())


def test_sass_instruction_regex_finds_what_it_found_before():
    rng = random.Random(13)
    found = 0
    for _ in range(20000):
        line = _sass_line(rng)
        new = sass._INSTR_RE.search(line, 0, line.rfind(";") + 1)
        assert _groups(new) == _groups(OLD_INSTR.search(line)), line
        found += new is not None
    assert 2000 < found < 18000  # both matches and misses are compared
    real = "        /*0310*/              @!P0 HMMA.16816.F32.BF16 R4, R8, R14, R4 ;   /* 0x000000000e0479c3 */"
    (ins,) = sass.instructions(real)
    assert (ins.offset, ins.predicate, ins.opcode, ins.operands) == (0x310, "@!P0", "HMMA.16816.F32.BF16",
                                                                      "R4, R8, R14, R4")


def test_sass_resource_field_regex_finds_what_it_found_before():
    rng = random.Random(13)
    pieces = ["REG", "A", "B", ":", "4", "0", "[", "]", "CONSTANT", " ", "x", "_"]
    for _ in range(20000):
        line = "".join(rng.choices(pieces, k=rng.randint(1, 16)))
        assert sass._RES_FIELD_RE.findall(line) == OLD_RES_FIELD.findall(line), line
    line = "        REG:40 STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:380 TEXTURE:0 SURFACE:0 SAMPLER:0"
    assert dict(sass._RES_FIELD_RE.findall(line))["CONSTANT[0]"] == "380"


SASS_ADVERSARIAL = {
    "opcode-without-semicolon": "/*0000*/ " + "A" * BIG,
    "blanks-without-semicolon": "/*0000*/ A" + " " * BIG + "x",
    "many-starts-one-semicolon-first": ";" + "/*0000*/ A " * (BIG // 11),
}


@pytest.mark.parametrize("name", sorted(SASS_ADVERSARIAL))
def test_sass_instruction_reading_is_linear(name):
    text = SASS_ADVERSARIAL[name]
    with time_limit(LIMIT_S, text, f"linear-sass-{name}", ".sass"):
        assert sass.instructions(text) == []


def test_sass_resource_reading_is_linear():
    text = "A" * BIG + "\n"
    with time_limit(LIMIT_S, text, "linear-sass-res", ".txt"):
        assert sass._RES_FIELD_RE.findall(text) == []
