"""Run time of rewritten `for x in tl.range(...)` loops: one scf.for with iter_args per loop.

The decorator (rewrite.py) turns a tl.range loop into a body function and a
call to `for_range`. At trace time `for_range` decides which names are
loop-carried: the names the body assigns that hold a traced tile or scalar
before the loop. It runs the body once inside a fresh scf.for block, with
the induction variable and the carried values as block arguments, yields
what the body left in the carried names, and rebinds them to the loop's
results. Traced values the body defines in other names become `Poison`
after the loop, so using them there is an error at the user's line.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Region

from tessera.dsl import builder as B
from tessera.dsl import dtypes as T
from tessera.dsl.errors import KernelError
from tessera.dsl.scalar import NUMBER, Scalar, const_index, convert
from tessera.dsl.tile import Tile
from tessera.dsl.values import Poison, Traced, reject_poison
from tessera.ir import diagnostics as D

_UNBOUND = object()


class RangeSpec:
    """The bounds of a `for i in tl.range(...)` loop; only a rewritten for statement can consume it."""

    def __init__(self, lo, hi, step):
        self.lo, self.hi, self.step = lo, hi, step

    def __iter__(self):
        raise KernelError(D.DSL_LOOP_SYNTAX, "tl.range can only be iterated by a for statement written directly in "
                                             "a @tessera.kernel function",
                          hint="decorate the helper that holds the loop with @tessera.kernel too (a kernel called "
                               "from a kernel body is inlined), or use Python's range for a loop unrolled at trace time")


def range_(*args) -> RangeSpec:
    """`tl.range(hi)`, `tl.range(lo, hi)`, `tl.range(lo, hi, step)`: a loop that becomes scf.for.

    Bounds are Python ints or traced index/i32 scalars; a constant step must
    be positive. The loop body is traced once; names it assigns that hold a
    tile or scalar before the loop are loop-carried (scf.for iter_args).
    """
    if not 1 <= len(args) <= 3:
        raise KernelError(D.DSL_LOOP_BOUNDS, f"tl.range takes 1 to 3 arguments, got {len(args)}")
    lo, hi, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    for what, v in (("start", lo), ("stop", hi), ("step", step)):
        reject_poison(v)
        ok = (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, Scalar) and v.dtype in (T.index, T.i32))
        if not ok:
            raise KernelError(D.DSL_LOOP_BOUNDS, f"tl.range {what} is {v!r}: loop bounds are Python ints or "
                                                 "index/i32 scalars")
    if isinstance(step, int) and step <= 0:
        raise KernelError(D.DSL_LOOP_BOUNDS, f"tl.range step is {step}: scf.for needs a positive step")
    return RangeSpec(lo, hi, step)


def _as_index(state: B.TraceState, v):
    if isinstance(v, int):
        return const_index(state, v)
    return convert(v, T.index).ssa(state)


def _describe(v) -> str:
    if isinstance(v, Traced):
        return f"{v!r} ({v.ir_type})"
    return f"{type(v).__name__} {v!r}"


def for_range(rng: RangeSpec, body, target: str, names: tuple[str, ...], lines: tuple, exposed: tuple,
              line: int, before: dict) -> tuple:
    """Emit one scf.for for a rewritten loop; returns the new values of (target, *names) for after the loop.

    `body(iv, *names)` runs the loop body once and returns the final values of
    `names`; `lines` holds the (line, col) of each name's last assignment in
    the body; `exposed` the names the body reads before assigning them (their
    values cross iterations); `before` is the enclosing function's locals().
    """
    lines = dict(zip(names, lines))
    if not isinstance(rng, RangeSpec):
        raise KernelError(D.DSL_LOOP_SYNTAX, f"expected tl.range(...) as the loop iterable, got {rng!r}")
    state = B.current("tl.range")
    lb, ub, step = (_as_index(state, v) for v in (rng.lo, rng.hi, rng.step))
    prior = [before.get(n, _UNBOUND) for n in names]
    carried = [i for i, p in enumerate(prior) if isinstance(p, (Tile, Scalar))]
    init_values = [prior[i].ssa(state) for i in carried]
    block = Block(arg_types=[IndexType(), *(v.type for v in init_values)])
    block.args[0].name_hint = target
    args = list(prior)
    with state.loop_body(block, line) as scope:
        for arg, i in zip(block.args[1:], carried):
            arg.name_hint = names[i]
            args[i] = type(prior[i])(arg, scope)
        for i, p in enumerate(args):
            if p is _UNBOUND:
                args[i] = Poison(names[i], lines[names[i]][0], f"read in the tl.range loop at line {line} before "
                                                                "the loop body assigns it")
        unbound = list(args)
        out = body(Scalar(block.args[0], scope), *args)
        yielded = [_carried_value(state, names[i], prior[i], out[i], lines) for i in carried]
        for i, p in enumerate(prior):
            if i not in carried and names[i] in exposed:
                _check_not_carried(names[i], p, out[i], lines)
        y = scf.YieldOp(*yielded)
        y.location = B.location()
        block.add_op(y)
    loop = state.emit(scf.ForOp(lb, ub, step, init_values, Region(block)))
    results = list(out)
    for result, i in zip(loop.results, carried):
        result.name_hint = names[i]
        results[i] = type(prior[i])(result, state.scope)
    for i in range(len(names)):
        if i not in carried and isinstance(results[i], (Tile, Scalar)):
            results[i] = Poison(names[i], lines[names[i]][0])
        elif results[i] is unbound[i] and prior[i] is _UNBOUND:
            results[i] = Poison(names[i], line, f"not defined: the tl.range loop at line {line} did not assign it")
    return (Poison(target, line), *results)


def _carried_value(state: B.TraceState, name: str, before, after, lines: dict):
    """The SSA value to yield for a loop-carried name: what the body left in it, of the type it entered with."""
    reject_poison(after)
    if not isinstance(after, type(before)) or after.ir_type != before.ir_type:
        raise KernelError(D.DSL_LOOP_CARRIED, f"loop-carried '{name}' enters the loop as {_describe(before)} but "
                                              f"the body assigns {_describe(after)}", where=_where(lines, name))
    return after.ssa(state)


def _check_not_carried(name: str, before, after, lines: dict) -> None:
    """A name the body reads before assigning must be traced if its value changes across iterations."""
    if before is _UNBOUND or isinstance(before, Poison):
        return
    if isinstance(after, (Tile, Scalar)) or (isinstance(before, NUMBER) and not _same_number(before, after)):
        raise KernelError(D.DSL_LOOP_CARRIED,
                          f"'{name}' is {_describe(before)} before the loop and the body computes {_describe(after)} "
                          "from it: a value carried from one iteration to the next must be traced (the body is "
                          "traced once)",
                          hint=f"initialise it before the loop as a traced value of its final type, e.g. "
                               f"{name} = tl.index(0), tl.f32(0.0) or tl.zeros(shape, dtype)",
                          where=_where(lines, name))


def _same_number(a, b) -> bool:
    return isinstance(b, NUMBER) and type(a) is type(b) and (a == b or (a != a and b != b))


def _where(lines: dict, name: str) -> tuple[str, int, int]:
    """The user's file and the (line, col) of the body's last assignment to `name`."""
    return B.location().filename.data, *lines[name]

