"""Parsing with locations: every op gets `file:line:col`, and errors become coded diagnostics."""

from __future__ import annotations

import bisect
import re

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from tessera.ir import diagnostics as D
from tessera.ir.dialect import make_context


# A parametrized type written without nested brackets or quotes that could hide a '>':
# `!tile.fragment<m=64, ..., family="mma_sync">`, `!tile.tile<128x32xbf16, smem>`, `memref<?x?xbf16>`.
# One line at most, so a failed match costs no more than the rest of the line.
_CACHEABLE_TYPE = re.compile(r'(?:![A-Za-z_][\w.]*|memref|vector|tensor)<[^<>(){}\[\]"\n]*(?:"[^"<>\n]*"[^<>(){}\[\]"\n]*)*>')


def _blank(text: str) -> bool:
    """Only whitespace and `//` comments (line by line: a regex alternation here backtracks exponentially)."""
    return all(not line.strip() or line.lstrip().startswith("//") for line in text.split("\n"))


class LinearLexer(MLIRLexer):
    r"""xDSL's MLIR lexer with a string-literal regex that runs in time linear in the input.

    xDSL 0.74 matches a literal with `"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"`: a `+`
    run inside a `*` loop, so on a literal with no closing quote (the line
    ends first) the backtracking engine tries every way of cutting the rest of
    the line into runs, 2^n of them; a 40-character line took minutes. Here
    each loop turn starts with a backslash and each run stops at one (the
    "unrolled loop"), so there is one way to read any prefix, and the
    possessive quantifiers tell the engine so. It accepts the same literals,
    with the same end, as the old one (tests/unit/test_regex_linear_time.py
    compares them). A literal it rejects gets a message that says why.
    """

    _unescaped_characters_regex = re.compile(
        r'"[^"\\\n\v\f]*+(?:\\(?:["nt\\]|[0-9A-Fa-f]{2})[^"\\\n\v\f]*+)*+"')

    def _lex_string_literal(self, start_pos):
        try:
            return super()._lex_string_literal(start_pos)
        except ParseError as err:  # xDSL says "End of file reached" for a literal cut by a newline or bad escape
            if "closing string literal" not in err.msg:
                raise
            raise ParseError(err.span, "string literal is not closed on its line (or has an escape other than "
                                       '\\n \\t \\\\ \\" or two hex digits)') from None


class LocatedParser(Parser):
    """A Parser that attaches a FileLineColLoc to each op it parses (xDSL leaves them unknown).

    It also memoizes parametrized types by their exact source text: parsing a
    long `!tile.fragment<...>` costs about a millisecond and a kernel repeats a
    handful of types thousands of times (DESIGN section 8). A type is cached
    only after it parsed successfully and consumed exactly the matched text, so
    a hit returns what a fresh parse would (types are immutable and, without
    aliases in the text, context-free within one parser).
    """

    def __init__(self, ctx, input: str | bytes, name: str = "<unknown>") -> None:
        """Parse `input` with a LinearLexer.

        xDSL's Parser.__init__ builds its MLIRLexer inline and lexes the first
        token at once (which may be the runaway string literal), so there is
        no lexer for a subclass to pass in. The narrowest override: let it set
        up over an empty text, then replace the parser state (the lexer and
        its current token) before anything is parsed. xDSL's own MLIRLexer
        class is left as it is.
        """
        super().__init__(ctx, "", name)
        text = input.decode("utf-8") if isinstance(input, bytes) else input
        self._parser_state = ParserState(LinearLexer(Input(text, name)))
        self._type_cache: dict[str, Attribute] = {}
        self._newlines: list[int] | None = None
        self._filename_attr = StringAttr("")

    def parse_optional_type(self):
        tok = self._current_token
        if tok.kind not in (MLIRTokenKind.EXCLAMATION_IDENT, MLIRTokenKind.BARE_IDENT):
            return super().parse_optional_type()
        content = self.lexer.input.content
        match = _CACHEABLE_TYPE.match(content, tok.span.start)
        if match is None or tok.text in self.attribute_aliases:
            return self._parse_type_anchored(tok)
        key = match.group()
        hit = self._type_cache.get(key)
        if hit is not None:
            self.lexer.pos = match.end()
            self._parser_state.current_token = self.lexer.lex()
            return hit
        parsed = self._parse_type_anchored(tok)
        if parsed is not None and content[match.end():self._current_token.span.start].strip() == "":
            self._type_cache[key] = parsed
        return parsed

    def _parse_type_anchored(self, tok):
        """Parse a type; an error found only on a later line (a bare `!tile.fragment` at the
        end of a line makes the parser look for its `<` there) is reported at the type name."""
        try:
            return super().parse_optional_type()
        except ParseError as err:
            content = self.lexer.input.content
            gap = content[tok.span.end:err.span.start]
            if "\n" in gap and _blank(gap):
                err.span = tok.span
            raise

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            line, col = self._line_col(start)
            op.location = FileLineColLoc(self._filename_attr, IntAttr(line), IntAttr(col))
        return op

    def _line_col(self, pos: int) -> tuple[int, int]:
        """1-based line and column of `pos`, as xDSL's Span.get_location computes them.

        Span.get_location counts newlines from the start of the input for every
        call, which makes locating every op quadratic in the file size; a
        table of newline offsets and a bisection keep it logarithmic.
        """
        if self._newlines is None:
            content = self.lexer.input.content
            self._newlines = [m.start() for m in re.finditer("\n", content)]
            self._filename_attr = StringAttr(self.lexer.input.name)
        line = bisect.bisect_left(self._newlines, pos)
        line_start = self._newlines[line - 1] + 1 if line else 0
        return line + 1, pos - line_start + 1


def parse_error_to_diagnostic(err: ParseError) -> D.TesseraError:
    """Map xDSL's ParseError (with its span) to a coded TesseraError with a location."""
    msg = err.msg if hasattr(err, "msg") else str(err)
    code = D.IR_PARSE
    for name, c in D.all_codes().items():
        if msg.startswith(name + ":"):
            code, msg = c, msg[len(name) + 1:].strip()
            break
    hint = None
    if "; " in msg and code is not D.IR_PARSE:
        msg, hint = msg.split("; ", 1)
    diag = D.TesseraError(code, msg, hint=hint)
    span = getattr(err, "span", None)
    if span is not None:
        loc = span.get_location()
        diag.with_location(str(loc))
    return diag


def _check_no_forward_references(module: ModuleOp) -> None:
    """xDSL can leave a forward reference unresolved when a nested region later defines a value of the
    same name (e.g. `%n` used at top level, then a `func.func(%n: index)`); its verifiers then crash on it."""
    for op in module.walk():
        for i, value in enumerate(op.operands):
            if isinstance(value, ForwardDeclaredValue):
                name = f"%{value.name_hint}" if value.name_hint else f"operand #{i}"
                raise D.TesseraError(D.IR_PARSE, f"{op.name}: {name} is used but never defined in its scope",
                                     op=op)


def parse_module(text: str, filename: str = "<stdin>", line_offset: int = 0) -> ModuleOp:
    """Parse IR text into a module; raises TesseraError (never a bare traceback)."""
    from tessera.ir.verify import wrap_unexpected

    ctx = make_context()
    try:
        module = LocatedParser(ctx, text, filename).parse_module()
    except ParseError as err:
        if line_offset:
            import dataclasses
            err.span = dataclasses.replace(err.span, line_offset=line_offset)
        raise parse_error_to_diagnostic(err) from None
    except D.TesseraError:
        raise
    except Exception as err:  # xDSL raises assorted errors on malformed input
        raise wrap_unexpected(err, D.IR_PARSE, f"{filename}:{line_offset + 1}:1") from None
    if isinstance(module.location, UnknownLoc):  # the implicit module around top-level ops
        module.location = FileLineColLoc(StringAttr(filename), IntAttr(1), IntAttr(1))
    if line_offset:
        for op in module.walk():
            loc = op.location
            if isinstance(loc, FileLineColLoc):
                op.location = FileLineColLoc(loc.filename, IntAttr(loc.line.data + line_offset), loc.column)
    _check_no_forward_references(module)
    return module
