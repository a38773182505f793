"""Kernel-body errors that point at the user's line, not at Tessera's internals.

Every op the tracer emits and every error it raises is attributed to the
innermost Python frame outside this package: the line of the kernel body (or
of a helper it called) that asked for it. `KernelError` carries that frame so
the trace entry point can re-raise it with a traceback that ends in user code.
"""

from __future__ import annotations

import linecache
import os
import sys
import types

from tessera.ir import diagnostics as D

_DSL_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_POSITIONS: dict[types.CodeType, list] = {}


_INTERNAL: dict[str, bool] = {}


def is_internal(filename: str) -> bool:
    """Whether code from `filename` is tessera.dsl's own (normalised once per name: tessera imported through a
    path with '..' in it names its files that way)."""
    hit = _INTERNAL.get(filename)
    if hit is None:
        hit = _INTERNAL[filename] = os.path.abspath(filename).startswith(_DSL_DIR)
    return hit


def user_frame() -> types.FrameType | None:
    """The innermost frame whose code is not part of tessera.dsl."""
    frame = sys._getframe(1)
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def frame_position(frame: types.FrameType | None) -> tuple[str, int, int]:
    """(file, line, 1-based column) of the instruction a frame is executing."""
    if frame is None:
        return "<unknown>", 0, 0
    code = frame.f_code
    positions = _POSITIONS.get(code)
    if positions is None:
        positions = _POSITIONS[code] = list(code.co_positions())
    line, col = frame.f_lineno, 0
    i = frame.f_lasti // 2
    if 0 <= i < len(positions):
        pline, _, pcol, _ = positions[i]
        if pline is not None:
            line = pline
        if pcol is not None:
            col = pcol
    return code.co_filename, line or 0, col + 1


class KernelError(D.TesseraError):
    """A coded error in a kernel body, located at the user's `file:line:col` and showing that line.

    `where` overrides the location (for errors found in the kernel's source
    text rather than while it runs); otherwise the innermost user frame is used.
    """

    def __init__(self, code: D.Code, message: str, hint: str | None = None,
                 where: tuple[str, int, int] | None = None):
        super().__init__(code, message, hint=hint)
        self._frame = None
        if where is None:
            self._frame = user_frame()
            where = frame_position(self._frame)
        self.filename, self.line, self.col = where
        self.with_location(f"{self.filename}:{self.line}:{self.col}")
        self.source_line = linecache.getline(self.filename, self.line).rstrip() if self.line else ""

    def __str__(self) -> str:
        text = f"{self.location}: error: {self.code.name}: {self.message}"
        if self.source_line:
            stripped = self.source_line.lstrip()
            indent = len(self.source_line) - len(stripped)
            caret = max(self.col - 1 - indent, 0)
            text += f"\n    {stripped}\n    {' ' * caret}^"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def user_traceback(self) -> "KernelError":
        """This error with its traceback replaced by one entry: the user's frame.

        Raised `from None` at the trace entry point, the traceback then reads
        caller -> trace() -> the kernel line, with no tracer internals.
        """
        tb = None
        if self._frame is not None:
            tb = types.TracebackType(None, self._frame, self._frame.f_lasti, self.line)
        self._frame = None
        return self.with_traceback(tb)


def from_ir_error(err: D.TesseraError) -> KernelError:
    """An IR verifier error on a traced op, re-located at the user line stored in the op."""
    where = D.op_location(err.op) if err.op is not None else (err.location or "<unknown>:0:0")
    file, line, col = where.rsplit(":", 2)
    return KernelError(err.code, err.message, hint=err.hint, where=(file, int(line), int(col)))
