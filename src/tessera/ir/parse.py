"""Parsing with locations: every op gets `file:line:col`, and errors become coded diagnostics."""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError

from tessera.ir import diagnostics as D
from tessera.ir.dialect import make_context


class LocatedParser(Parser):
    """A Parser that attaches a FileLineColLoc to each op it parses (xDSL leaves them unknown)."""

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            loc = span.get_location()
            op.location = FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line),
                                         IntAttr(loc.col))
        return op


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
    if line_offset:
        for op in module.walk():
            loc = op.location
            if isinstance(loc, FileLineColLoc):
                op.location = FileLineColLoc(loc.filename, IntAttr(loc.line.data + line_offset), loc.column)
    return module
