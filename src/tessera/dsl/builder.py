"""The trace state: where the next op goes, which values are visible, and where each op came from.

A trace builds one func.func directly with xDSL builders. Ops are appended to
the innermost open block (a `Scope`: the function body or a tl.range loop
body); each gets a FileLineColLoc naming the user line that asked for it.
Operand-free scalar ops (arith.constant, memref.dim, tile.program_id) are
hoisted to the top of the function and cached, so a kernel that reads `K` in
three loops gets one memref.dim. Each traced value remembers its scope; using
it where that scope is not open is reported at the user's line instead of
surfacing later as a dominance error.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region
from xdsl.traits import Pure, is_side_effect_free

from tessera.dsl.errors import KernelError, frame_position, user_frame
from tessera.ir import diagnostics as D

_CURRENT: contextvars.ContextVar["TraceState | None"] = contextvars.ContextVar("tessera_trace", default=None)
_FILENAMES: dict[str, StringAttr] = {}


class Scope:
    """An open block: the function body (loop_line None) or a tl.range loop body."""

    def __init__(self, block: Block, parent: "Scope | None", loop_line: int | None = None):
        self.block = block
        self.parent = parent
        self.loop_line = loop_line
        self.cache: dict[object, object] = {}

    def encloses(self, other: "Scope") -> bool:
        """True when `self` is `other` or one of its ancestors (values of `self` are visible in `other`)."""
        s: Scope | None = other
        while s is not None:
            if s is self:
                return True
            s = s.parent
        return False

    def lookup(self, key: object) -> object | None:
        s: Scope | None = self
        while s is not None:
            if key in s.cache:
                return s.cache[key]
            s = s.parent
        return None


def location() -> FileLineColLoc:
    """The FileLineColLoc of the user line currently being traced."""
    file, line, col = frame_position(user_frame())
    attr = _FILENAMES.get(file)
    if attr is None:
        attr = _FILENAMES[file] = StringAttr(file)
    return FileLineColLoc(attr, IntAttr(line), IntAttr(col))


class TraceState:
    """Builds one `builtin.module { func.func @name(...) }` while a kernel body runs."""

    def __init__(self, name: str, arg_names: list[str], arg_types: list):
        self.entry = Block(arg_types=arg_types)
        for arg, n in zip(self.entry.args, arg_names):
            arg.name_hint = n
        self.root = Scope(self.entry, None)
        self.scope = self.root
        self._last_hoisted: Operation | None = None
        self.func = func.FuncOp(name, (arg_types, []), Region(self.entry))
        self.module = ModuleOp([self.func])

    # --- emission -----------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        """Append `op` to the open block, located at the user's line.

        A pure op equal to one already visible here (same name, operands,
        result types and properties) is dropped and the earlier op returned:
        tracing repeats broadcasts, splats and constants that CSE would fold.
        """
        key = _cse_key(op)
        if key is not None:
            hit = self.scope.lookup(key)
            if hit is not None:
                op.erase()
                return hit  # type: ignore[return-value]
        op.location = location()
        self.scope.block.add_op(op)
        if key is not None:
            self.scope.cache[key] = op
        return op

    def hoisted(self, key: object, make) -> Operation:
        """An op at the top of the function (its operands are arguments or earlier hoisted ops), built once per key."""
        op = self.root.cache.get(key)
        if op is None:
            op = make()
            op.location = location()
            if self._last_hoisted is not None:
                self.entry.insert_op_after(op, self._last_hoisted)
            elif self.entry.first_op is not None:
                self.entry.insert_op_before(op, self.entry.first_op)
            else:
                self.entry.add_op(op)
            self._last_hoisted = op
            self.root.cache[key] = op
        return op  # type: ignore[return-value]

    def check_visible(self, scope: Scope, what: str = "value") -> None:
        if scope.encloses(self.scope):
            return
        raise KernelError(D.DSL_LOOP_ESCAPE, f"a {what} defined inside the tl.range loop at line {scope.loop_line} "
                                             "is used outside that loop")

    @contextmanager
    def loop_body(self, block: Block, line: int) -> Iterator[Scope]:
        scope = Scope(block, self.scope, loop_line=line)
        outer, self.scope = self.scope, scope
        try:
            yield scope
        finally:
            self.scope = outer

    # --- lifetime -----------------------------------------------------------------

    @contextmanager
    def active(self) -> Iterator["TraceState"]:
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    def finish(self, def_loc: FileLineColLoc) -> ModuleOp:
        """Close the function: return, drop dead side-effect-free ops, locate func and module."""
        ret = func.ReturnOp()
        ret.location = def_loc
        self.entry.add_op(ret)
        _erase_dead(self.entry)
        self.func.location = def_loc
        self.module.location = def_loc
        return self.module


def _erase_dead(block: Block) -> None:
    """Remove ops without side effects whose results are unused (e.g. unread shape dims)."""
    for op in reversed(list(block.ops)):
        for region in op.regions:
            for b in region.blocks:
                _erase_dead(b)
        if op.results and all(not r.uses for r in op.results) and is_side_effect_free(op) and not op.regions:
            op.detach()
            op.erase()


def _cse_key(op: Operation) -> tuple | None:
    if op.regions or not op.has_trait(Pure):
        return None
    return (op.name, tuple(op.operands), tuple(r.type for r in op.results),
            tuple(sorted(op.properties.items())), tuple(sorted(op.attributes.items())))


def current(what: str) -> TraceState:
    """The active trace, or an error saying `what` needs one."""
    state = _CURRENT.get()
    if state is None:
        raise KernelError(D.DSL_OUTSIDE_TRACE, f"{what} can only be used inside a @tessera.kernel body while it is "
                                               "traced")
    return state


def active() -> TraceState | None:
    return _CURRENT.get()

