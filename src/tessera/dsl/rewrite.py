"""Source rewriting for `@tessera.kernel`: each `for x in tl.range(...)` becomes a body function.

A traced loop must run its body once, inside a new scf.for block, with the
induction variable and the loop-carried values as block arguments; Python's
for statement cannot do that, so (as Triton does) the decorator rewrites the
kernel's source. A loop

    for k in tl.range(lo, hi, step):      # line L
        BODY                              # assigns a, acc

becomes

    def __tl_body_L_0(k, a, acc):
        BODY
        return (a, acc)
    (k, a, acc) = __tl_rt.for_range(tl.range(lo, hi, step), __tl_body_L_0, 'k', ('a', 'acc'),
                                    ((line_a, col_a), (line_acc, col_acc)), ('acc',), L, locals())

('acc',) lists the names the body reads before assigning them: their values
flow from one iteration to the next.

Inner loops are rewritten first, so their results count as assignments of
the outer body. The rewritten tree keeps the original file, lines and
columns, so tracebacks, op locations and errors name the user's source.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types

from tessera.dsl import loops
from tessera.dsl.errors import KernelError
from tessera.ir import diagnostics as D

_RT = "__tl_rt"
_TYPE_PARAMS = {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(nodes, skip_loops: bool = False):
    """Nodes of these statements in the same Python scope (optionally not entering nested loops)."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield node  # its name is bound here; its body is another scope
            continue
        if skip_loops and isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            continue
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _assigned(body) -> dict[str, tuple[int, int]]:
    """Names the statements bind, in order of first binding, with the (line, col) of the last binding."""
    out: dict[str, tuple[int, int]] = {}
    for node in _walk_scope(body):
        name = None
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            name = node.id
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = node.name
        if name is not None and not name.startswith("__tl_"):
            out[name] = (node.lineno, node.col_offset + 1)
    return out


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in _walk_scope([node]) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _exposed(stmts, assigned: frozenset = frozenset()) -> set[str]:
    """Names some statement reads before the statements have surely assigned them (upward-exposed uses).

    A loop body that reads a name before assigning it carries that name's
    value from one iteration to the next. Conservative where it must be: an
    assignment inside an if counts only when both branches make it.
    """
    assigned = set(assigned)
    exposed: set[str] = set()
    for st in stmts:
        if isinstance(st, ast.AugAssign):
            exposed |= (_loads(st) | ({st.target.id} if isinstance(st.target, ast.Name) else set())) - assigned
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            exposed |= _loads(st.iter) - assigned
            inner = assigned | set(_assigned([st.target]))
            exposed |= _exposed(st.body, frozenset(inner)) | _exposed(st.orelse, frozenset(inner))
        elif isinstance(st, ast.While):
            exposed |= (_loads(st.test) - assigned) | _exposed(st.body, frozenset(assigned))
        elif isinstance(st, ast.If):
            exposed |= _loads(st.test) - assigned
            exposed |= _exposed(st.body, frozenset(assigned)) | _exposed(st.orelse, frozenset(assigned))
            both = set(_assigned(st.body)) & set(_assigned(st.orelse))
            assigned |= both
            continue
        else:
            exposed |= _loads(st) - assigned
        assigned |= set(_assigned([st]))
    return exposed


class _LoopRewriter(ast.NodeTransformer):
    def __init__(self, filename: str, is_range):
        self.filename = filename
        self.is_range = is_range
        self.count = 0

    def _fail(self, node: ast.AST, message: str) -> KernelError:
        return KernelError(D.DSL_LOOP_SYNTAX, message, where=(self.filename, node.lineno, node.col_offset + 1))

    def _check_syntax(self, node: ast.For) -> None:
        if node.orelse:
            raise self._fail(node.orelse[0], "a tl.range loop cannot have an else clause")
        if not isinstance(node.target, ast.Name):
            raise self._fail(node.target, "a tl.range loop's target must be a single name")
        for inner in _walk_scope(node.body):
            if isinstance(inner, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
                raise self._fail(inner, f"'{type(inner).__name__.lower()}' inside a tl.range loop cannot be traced")
        for inner in _walk_scope(node.body, skip_loops=True):
            if isinstance(inner, (ast.Break, ast.Continue)):
                raise self._fail(inner, f"'{type(inner).__name__.lower()}' inside a tl.range loop cannot be traced: "
                                        "the body runs once per iteration, always to its end")

    def visit_For(self, node: ast.For):
        if not self.is_range(node.iter):
            self.generic_visit(node)
            return node
        self._check_syntax(node)
        target = node.target.id
        exposed = _exposed(node.body, frozenset([target]))
        self.generic_visit(node)  # inner loops first
        assigned = _assigned(node.body)
        assigned.pop(target, None)
        names = list(assigned)
        body_name = f"__tl_body_{node.lineno}_{self.count}"
        self.count += 1
        load = [ast.Name(n, ast.Load()) for n in names]
        fdef = ast.FunctionDef(
            name=body_name,
            args=ast.arguments(posonlyargs=[], args=[ast.arg(target), *(ast.arg(n) for n in names)], vararg=None,
                               kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
            body=[*node.body, ast.Return(ast.Tuple(load, ast.Load()))],
            decorator_list=[], returns=None, **_TYPE_PARAMS)
        call = ast.Call(
            func=ast.Attribute(ast.Name(_RT, ast.Load()), "for_range", ast.Load()),
            args=[node.iter, ast.Name(body_name, ast.Load()), ast.Constant(target), ast.Constant(tuple(names)),
                  ast.Constant(tuple(assigned[n] for n in names)),
                  ast.Constant(tuple(n for n in names if n in exposed)), ast.Constant(node.lineno),
                  ast.Call(ast.Name("locals", ast.Load()), [], [])],
            keywords=[])
        stores = [ast.Name(n, ast.Store()) for n in (target, *names)]
        assign = ast.Assign(targets=[ast.Tuple(stores, ast.Store())], value=call)
        for new in (fdef, assign):
            for sub in ast.walk(new):
                if not hasattr(sub, "lineno"):  # nodes made here; the user's body and iterable keep theirs
                    ast.copy_location(sub, node)  # the `for` keyword, not the whole statement: CPython
                    sub.end_lineno, sub.end_col_offset = node.lineno, node.col_offset + 3  # locates calls by ends
        return [fdef, assign]


def _syntactic_range(expr: ast.AST) -> bool:
    """`tl.range(...)` or `<anything>.tl.range(...)` when the name cannot be resolved."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "range"):
        return False
    base = expr.func.value
    return (isinstance(base, ast.Name) and base.id == "tl") or (isinstance(base, ast.Attribute) and base.attr == "tl")


def _range_detector(env: dict):
    """Recognise calls of tessera's tl.range: resolve the callee through the kernel's globals and closure."""
    def resolve(expr):
        if isinstance(expr, ast.Name):
            if expr.id in env:
                return env[expr.id]
            return getattr(builtins, expr.id, None)
        if isinstance(expr, ast.Attribute):
            base = resolve(expr.value)
            return getattr(base, expr.attr, None) if isinstance(base, types.ModuleType) else None
        return None

    def is_range(expr) -> bool:
        if not isinstance(expr, ast.Call):
            return False
        fn = resolve(expr.func)
        if fn is not None:
            return fn is loops.range_
        return _syntactic_range(expr)

    return is_range


def _shift(tree: ast.AST, lines: int, cols: int) -> None:
    for node in ast.walk(tree):
        if hasattr(node, "lineno"):
            node.lineno += lines
            node.end_lineno = (node.end_lineno or node.lineno - lines) + lines
            if cols:
                node.col_offset += cols
                if node.end_col_offset is not None:
                    node.end_col_offset += cols


def rewrite(fn) -> tuple[types.FunctionType, int, int]:
    """The kernel function with its tl.range loops rewritten, and its def line and column."""
    code = fn.__code__
    where = (code.co_filename, code.co_firstlineno, 1)
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as err:
        raise KernelError(D.DSL_SOURCE, f"cannot read the source of {fn.__qualname__}: {err}", where=where) from None
    first = lines[0]
    dedented = textwrap.dedent("".join(lines))
    indent = len(first) - len(dedented.splitlines(True)[0])
    tree = ast.parse(dedented)
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef):
        raise KernelError(D.DSL_SOURCE, f"{fn.__qualname__} is not a plain def function (lambdas and async "
                                        "functions cannot be kernels)", where=where)
    _shift(tree, start - 1, indent)
    fdef.decorator_list = []
    env = dict(fn.__globals__)
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            env[name] = cell.cell_contents
        except ValueError:
            pass
    _LoopRewriter(code.co_filename, _range_detector(env)).visit(fdef)
    free = list(code.co_freevars)
    factory = ast.FunctionDef(
        name="__tessera_factory__",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(_RT), *(ast.arg(n) for n in free)], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[], returns=None, **_TYPE_PARAMS)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.copy_location(factory, fdef)
    ast.fix_missing_locations(module)
    namespace: dict = {}
    exec(compile(module, code.co_filename, "exec"), fn.__globals__, namespace)
    cells = [env.get(n) for n in free]
    return namespace["__tessera_factory__"](loops, *cells), fdef.lineno, fdef.col_offset + 1
