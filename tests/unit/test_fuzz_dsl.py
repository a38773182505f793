"""Fuzz the Python tile-program surface: random @tessera.kernel programs trace, run and match numpy, or fail coded.

Hypothesis writes small tile programs (loads with padding, elementwise
arithmetic and math, constants and the f32 scalar argument, comparisons and
masks, tl.where, reductions, broadcasts, transposes, conversions, tl.dot,
tl.arange/full/zeros, program ids, a tl.range loop with a carried
accumulator, a meta-parameter branch, a Python loop unrolled at trace time,
and now and then a deliberate misuse). Next to the source the generator
runs a numpy model of each statement (`_dsl_model.py`): it encodes the DSL's
rules (equal dtypes, numpy broadcasting, integer constants in range, ...)
and Tessera's numerics (float ops in float64, rounded to the tile's type
after every op, narrow floats via f32; C integer division), so it knows
whether the program is legal and, if it is, what `Out` must hold.

Each program is traced, run on the reference interpreter over its whole grid
and, when it ran, lowered for sm_80 and emitted as CUDA (no NVRTC). It must:
trace, run and match the model; or fail with a coded TesseraError whose code
is one the model expected (a model that is unsure of a code accepts any
coded error); never a foreign exception, never a hang. Each program runs
under a wall-clock limit; a failure saves its source to $TESSERA_FUZZ_SAVE_DIR
(default `.fuzz-failures/`), named in the message.

A CI run makes 1,000 programs (about half a minute on two cores). Environment:
  TESSERA_FUZZ_SCALE=10    ten times as many (any positive int)
  TESSERA_FUZZ_LIMIT_S=10  the per-program wall-clock limit in seconds
  TESSERA_FUZZ_SAVE_DIR=d  where failing programs are saved
"""

from __future__ import annotations

import itertools
import linecache
import os
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tessera
from _dsl_model import (CMP, F64, FLOATS, NP, POISON, Bad, Grid, V, expand, m_bin, m_broadcast, m_convert, m_dot,
                        m_invert, m_math, m_neg_abs, m_reduce, m_transpose, m_where, rnd)
from _time_limit import time_limit
from tessera import tl
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.compiler.driver import default_pipeline, lower
from tessera.ir import diagnostics as D
from tessera.reference import run

SCALE = int(os.environ.get("TESSERA_FUZZ_SCALE") or 1)
LIMIT_S = float(os.environ.get("TESSERA_FUZZ_LIMIT_S") or 10)
# --- the program generator ------------------------------------------------------------------------------------

CONSTANTS = ["0.5", "2.5", "-3.0", "0.25", "1.0", "2", "-1", "0", "1"] * 3 + ["2 ** 31", "-2 ** 31", "10 ** 400"]
# f32 scalar expressions for tl.full, with their value from s (per program) and the grid.
SCALAR_EXPRESSIONS = [
    ("s", lambda s, g: s),
    ("s * 2.0 + 1.0", lambda s, g: s * 2.0 + 1.0),
    ("tl.maximum(s, 1.0)", lambda s, g: np.maximum(s, 1.0)),
    ("tl.where(s > 1.0, s, 0.5)", lambda s, g: np.where(s > 1.0, s, 0.5)),
    ("tl.dim(X, 1).to(tl.f32)", lambda s, g: float(g.N)),
    ("(tl.program_id(0) * 3 + tl.num_programs(0)).to(tl.f32)",
     lambda s, g: (g.program_ids(0).arr * 3 + g.gm).astype(np.float32)),
]
UNARY_SRC = {  # bounded math, so that no program overflows by accident
    "neg": ("-{a}", lambda a: m_neg_abs(a, "neg")),
    "abs": ("abs({a})", lambda a: m_neg_abs(a, "abs")),
    "tl.abs": ("tl.abs({a})", lambda a: m_neg_abs(a, "abs")),
    "exp": ("tl.exp(-tl.abs({a}))", lambda a: m_math(m_neg_abs(m_neg_abs(a, "abs"), "neg"), "exp")),
    "exp2": ("tl.exp2(-tl.abs({a}))", lambda a: m_math(m_neg_abs(m_neg_abs(a, "abs"), "neg"), "exp2")),
    "sqrt": ("tl.sqrt(tl.abs({a}))", lambda a: m_math(m_neg_abs(a, "abs"), "sqrt")),
    "log": ("tl.log(tl.abs({a}) + 1.0)", lambda a: m_math(m_bin(m_neg_abs(a, "abs"), 1.0, "+"), "log")),
    "rsqrt": ("tl.rsqrt(tl.abs({a}) + 1.0)", lambda a: m_math(m_bin(m_neg_abs(a, "abs"), 1.0, "+"), "rsqrt")),
    "tanh": ("tl.tanh({a})", lambda a: m_math(a, "tanh")),
    "erf": ("tl.erf({a})", lambda a: m_math(a, "erf")),
}


FLOAT_KINDS = ["bin"] * 4 + ["unary"] * 4 + ["const", "scalar", "div", "reduce", "reduce", "transpose", "broadcast",
                              "where", "where", "cmp", "convert", "dot", "dot", "make", "load"]
INT_KINDS = ["bin"] * 3 + ["const", "reduce", "transpose", "broadcast", "cmp", "convert", "convert", "make"]
MASK_KINDS = ["mask"] * 3 + ["where"] * 3 + ["convert"] * 2 + ["transpose", "broadcast", "unary", "reduce", "cmp"]
ALL_KINDS = sorted(set(FLOAT_KINDS + INT_KINDS + MASK_KINDS)) + ["misuse"] * 2


@dataclass
class Program:
    source: str
    grid: Grid
    specs: tuple
    meta: dict
    inputs: dict
    expected: np.ndarray | None  # Out after the run, or None when tracing must fail
    codes: frozenset = frozenset()  # with expected None: the acceptable codes (empty: any)
    narrow: bool = False  # bf16/f16 values took part (looser comparison)
    scale: float = 1.0  # the largest finite magnitude the model saw


@dataclass
class _Gen:
    draw: object
    grid: Grid
    env: dict = field(default_factory=dict)
    lines: list = field(default_factory=list)
    inputs: dict = field(default_factory=dict)
    count: int = 0
    narrow: bool = False
    scale: float = 1.0

    def shapes(self) -> list:
        g = self.grid
        return [(g.BM, g.BN), (g.BM, g.BN), (g.BM, 1), (1, g.BN), (g.BN, g.BM), (1, 1)]

    def shape_src(self, shape) -> str:
        g = self.grid
        names = {g.BM: "BM", g.BN: "BN", 1: "1"}
        return f"({names.get(shape[0], shape[0])}, {names.get(shape[1], shape[1])})"

    def tiles(self) -> list[str]:
        return [n for n, v in self.env.items() if isinstance(v, V) and not v.scalar]

    def pick(self, like: str | None = None) -> str:
        names = self.tiles()
        if like is not None and self.draw(st.integers(0, 9)) < 8 and isinstance(self.env[like], V):
            same = [n for n in names if self.env[n].dtype == self.env[like].dtype]
            fits = [n for n in same if all(1 in (p, q) or p == q for p, q in zip(self.env[n].shape,
                                                                               self.env[like].shape))]
            names = fits or same or names
        elif like is None and self.draw(st.integers(0, 3)):  # mostly a float tile first
            floats = [n for n in names if self.env[n].dtype in FLOATS]
            names = floats or names
        poisoned = [n for n, v in self.env.items() if v is POISON]
        if poisoned and self.draw(st.integers(0, 30)) == 0:
            names = poisoned
        return self.draw(st.sampled_from(sorted(names)))

    def value(self, name: str) -> V:
        v = self.env[name]
        if v is POISON:
            raise Bad(D.DSL_LOOP_ESCAPE)
        return v

    def expression(self, in_loop: bool) -> tuple[str, object]:
        """(source, model thunk) of one random expression over the names defined so far."""
        d, g = self.draw, self.grid
        a = self.pick()
        dt = self.env[a].dtype if isinstance(self.env[a], V) else "f32"
        fits = {"f32": FLOAT_KINDS, "bf16": FLOAT_KINDS, "f16": FLOAT_KINDS, "i32": INT_KINDS, "i1": MASK_KINDS}[dt]
        kinds = fits if d(st.integers(0, 9)) else ALL_KINDS  # mostly what suits a's dtype; now and then anything
        kind = d(st.sampled_from(kinds + ["loopvar"] * (3 if in_loop else 0)))
        A = lambda: self.value(a)  # noqa: E731
        if kind == "bin":
            syms = ["+", "-", "*", "max", "min"] + (["//"] if dt == "i32" or not d(st.integers(0, 9)) else [])
            b, sym = self.pick(a), d(st.sampled_from(syms))
            src = f"tl.{'maximum' if sym == 'max' else 'minimum'}({a}, {b})" if sym in ("max", "min") else \
                f"{a} {sym} {b}"
            return src, lambda: m_bin(A(), self.value(b), sym)
        if kind == "unary":
            src, fn = UNARY_SRC[d(st.sampled_from(sorted(UNARY_SRC) if dt in FLOATS else ["neg", "abs"]))]
            return src.format(a=a), lambda: fn(A())
        if kind == "const":
            c, form = d(st.sampled_from(CONSTANTS)), d(st.integers(0, 2))
            value = eval(c)  # noqa: S307 - one of CONSTANTS
            if form == 0:
                return f"{a} + {c}", lambda: m_bin(A(), value, "+")
            if form == 1:
                return f"{c} - {a}", lambda: m_bin(value, A(), "-")
            return f"{a} * {c}", lambda: m_bin(A(), value, "*")
        if kind == "scalar":
            return f"{a} * s", lambda: m_bin(A(), self.env["s"], "*")
        if kind == "div":
            b = self.pick(a)
            return f"{a} / (tl.abs({b}) + 1.0)", lambda: m_bin(A(), m_bin(m_neg_abs(self.value(b), "abs"), 1.0, "+"),
                                                                "/")
        if kind == "reduce":
            red, axis = d(st.sampled_from(["sum", "max", "min"])), d(st.sampled_from([0, 1, 1, 0, -1, 2]))
            return f"tl.{red}({a}, {axis})", lambda: m_reduce(A(), red, axis)
        if kind == "transpose":
            return f"{a}.T", lambda: m_transpose(A())
        if kind == "broadcast":
            shape = d(st.sampled_from(self.shapes()))
            return f"tl.broadcast_to({a}, {self.shape_src(shape)})", lambda: m_broadcast(A(), shape)
        if kind == "where":
            b, c = self.pick(a), self.pick(a)
            if dt == "i1":  # a mask picks between two tiles of one dtype
                c = self.pick(b)
            if dt != "i1" or not d(st.integers(0, 4)):
                return f"tl.where({a} > {b}, {a}, {c})", lambda: m_where(m_bin(A(), self.value(b), ">"), A(),
                                                                         self.value(c))
            k = d(st.sampled_from(CONSTANTS))
            value = eval(k)  # noqa: S307 - one of CONSTANTS
            return f"tl.where({a}, {b}, {k})", lambda: m_where(A(), self.value(b), value)
        if kind == "cmp":
            b, sym = self.pick(a), d(st.sampled_from(sorted(CMP)))
            return f"{a} {sym} {b}", lambda: m_bin(A(), self.value(b), sym)
        if kind == "mask":
            b, sym = self.pick(a), d(st.sampled_from(["&", "|", "~"]))
            if sym == "~":
                return f"~{a}", lambda: m_invert(A())
            return f"{a} {sym} {b}", lambda: m_bin(A(), self.value(b), sym)
        if kind == "convert":
            to = d(st.sampled_from(["f32", "f32", "bf16", "f16", "i32", "i1"]))
            return f"{a}.to(tl.{to})", lambda: m_convert(A(), to)
        if kind == "dot":
            b = self.pick(a)
            tb, acc = d(st.booleans()), d(st.sampled_from([None, None, self.pick()]))
            B = (lambda: m_transpose(self.value(b))) if tb else (lambda: self.value(b))
            src = f"tl.dot({a}, {b}{'.T' if tb else ''}{'' if acc is None else ', ' + acc})"
            return src, lambda: m_dot(A(), B(), None if acc is None else lambda: self.value(acc))
        if kind == "make":
            shape = d(st.sampled_from(self.shapes()))
            form = d(st.integers(0, 5))
            if form == 0:
                return f"tl.zeros({self.shape_src(shape)}, tl.f32)", lambda: g.tile(0.0, shape, "f32")
            if form == 1:
                axis = d(st.integers(0, 1))
                return f"tl.arange({self.shape_src(shape)}, {axis})", lambda: g.iota(shape, axis)
            if form == 2:
                axis = d(st.integers(0, 1))
                return f"tl.full({self.shape_src(shape)}, tl.program_id({axis}))", \
                    lambda: V("i32", expand(rnd(g.program_ids(axis).arr, "i32"), shape))
            if form == 3:
                scalar, fn = d(st.sampled_from(SCALAR_EXPRESSIONS))
                return f"tl.full({self.shape_src(shape)}, {scalar})", lambda: V("f32", expand(
                    np.full((g.gm, 1, g.gn, 1), fn(self.env["s"].arr, g), np.float32), shape))
            if form == 4:
                return f"tl.full({self.shape_src(shape)}, tl.num_programs(1)).to(tl.f32)", \
                    lambda: g.tile(float(g.gn), shape, "f32")
            return f"tl.full({self.shape_src(shape)}, 1.5)", lambda: g.tile(1.5, shape, "f32")
        if kind == "load":
            shape = d(st.sampled_from(self.shapes()))
            dr, dc, pad = d(st.sampled_from([0, 0, 1, -1])), d(st.sampled_from([0, 0, 2, -3])), \
                d(st.sampled_from(["0.0", "1.0", "-2.5"]))
            rows = "m0" + (f" + {dr}" if dr > 0 else f" - {-dr}" if dr < 0 else "")
            cols = "n0" + (f" + {dc}" if dc > 0 else f" - {-dc}" if dc < 0 else "")
            tensor = d(st.sampled_from(["X", "Y"]))

            def load():
                r0 = V("index", self.env["m0"].arr + dr, scalar=True)
                c0 = V("index", self.env["n0"].arr + dc, scalar=True)
                arr, dt = self.inputs[tensor]
                return g.load(arr, dt, r0, c0, shape, float(pad))
            return f"tl.load({tensor}, [{rows}, {cols}], {self.shape_src(shape)}, padding={pad})", load
        if kind == "loopvar":
            if d(st.booleans()):
                return f"{a} * k", lambda: m_bin(A(), self.env["k"], "*")
            k_tile = lambda: V("i32", expand(rnd(self.env["k"].arr, "i32"), (1, 1)))  # noqa: E731
            return f"{a} + tl.full((1, 1), k).to(tl.f32)", lambda: m_bin(A(), m_convert(k_tile(), "f32"), "+")
        return self.misuse(a)

    def misuse(self, a: str) -> tuple[str, object]:
        """A statement the DSL must refuse with a coded error (a poisoned `a` may be refused first)."""
        def refused(*codes):
            def thunk():
                raise Bad(*codes, D.DSL_LOOP_ESCAPE)
            return thunk
        return self.draw(st.sampled_from([
            ("tl.exp(s)", refused(D.DSL_UNSUPPORTED)),
            (f"{a}[0]", refused(D.DSL_UNSUPPORTED)),
            (f"tl.sum({a}, s)", refused(D.DSL_AXIS_INVALID)),
            ("tl.load(X, [m0], (BM, BN))", refused(D.DSL_OFFSETS_INVALID)),
            (f"tl.where(1.0, {a}, {a})", refused(D.DSL_OPERAND_INVALID, D.DSL_DTYPE_MISMATCH)),  # not a mask
            (f"{a} @ {a}", refused(D.DSL_UNSUPPORTED)),
            ("tl.program_id(3)", refused(D.DSL_AXIS_INVALID)),
            (f"tl.load({a}, [m0, n0], (BM, BN))", refused(D.DSL_OPERAND_INVALID)),
            (f"tl.zeros((BM, 0))", refused(D.DSL_SHAPE_INVALID)),
            (f"tl.broadcast_to({a}, (BM, BN, 1))", refused(D.DSL_SHAPE_MISMATCH)),
            (f"{a} ** 2", refused(D.DSL_UNSUPPORTED)),
            (f"{a} % 2", refused(D.DSL_UNSUPPORTED)),
            (f"round({a})", refused(D.DSL_UNSUPPORTED)),
            (f"{a} << 1", refused(D.DSL_UNSUPPORTED)),
            ("tl.full((1, 1), abs(s))", refused(D.DSL_UNSUPPORTED)),
            ("tl.full((1, 1), s ** 2)", refused(D.DSL_UNSUPPORTED)),
            ("tl.full((1, 1), tl.program_id(0) + 2 ** 70)", refused(D.DSL_DTYPE_MISMATCH)),
        ]))

    def statement(self, indent: str, in_loop: bool = False, target: str | None = None) -> None:
        """Append `target = <expression>` and evaluate its model now (raises Bad for an illegal statement)."""
        src, thunk = self.expression(in_loop)
        name = target or f"v{self.count}"
        self.count += 1
        self.lines.append(f"{indent}{name} = {src}")
        self.run_thunk(name, thunk)

    def run_thunk(self, name: str, thunk) -> None:
        value = thunk()
        self.env[name] = value
        self.note(value)

    def note(self, value: V) -> None:
        if value.dtype in ("bf16", "f16"):
            self.narrow = True
        if value.dtype in FLOATS:
            finite = np.abs(value.arr.astype(F64))
            finite = finite[np.isfinite(finite)]
            if finite.size:
                self.scale = max(self.scale, float(finite.max()))


_names = itertools.count()


@st.composite
def programs(draw) -> Program:
    BM, BN = draw(st.sampled_from([1, 2, 4, 8, 16])), draw(st.sampled_from([1, 2, 4, 8, 16]))
    grid = Grid(draw(st.integers(1, 3 * BM)), draw(st.integers(1, 3 * BN)), BM, BN)
    xdt = draw(st.sampled_from(["f32", "f32", "bf16", "f16"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    X = rng.uniform(-2, 2, (grid.M, grid.N)).astype(np.float32).astype(NP[xdt])
    Y = rng.uniform(-2, 2, (grid.M, grid.N)).astype(np.float32)
    s = float(np.float32(draw(st.sampled_from([0.5, -1.25, 3.0, 0.0]))))
    pad = draw(st.sampled_from(["0.0", "1.0", "-2.5"]))
    g = _Gen(draw, grid)
    g.inputs = {"X": (X, xdt), "Y": (Y, "f32")}
    g.env.update(s=grid.scalar(s, "f32"), m0=V("index", grid.program_ids(0).arr * BM, scalar=True),
                 n0=V("index", grid.program_ids(1).arr * BN, scalar=True))
    g.env["x"] = grid.load(X, xdt, g.env["m0"], g.env["n0"], (BM, BN), 0.0)
    g.env["y"] = grid.load(Y, "f32", g.env["m0"], g.env["n0"], (BM, BN), float(pad))
    flag = draw(st.booleans())
    head = ["@tessera.kernel", "def fuzz_kernel(X, Y, Out, s, *, BM=16, BN=16, FLAG=False, STEPS=1):",
            "    m0 = tl.program_id(0) * BM", "    n0 = tl.program_id(1) * BN",
            "    x = tl.load(X, [m0, n0], (BM, BN))", f"    y = tl.load(Y, [m0, n0], (BM, BN), padding={pad})"]
    steps = draw(st.integers(1, 3))
    codes = None
    try:
        for _ in range(draw(st.integers(1, 4))):
            g.statement("    ")
        block = draw(st.sampled_from(["none", "loop", "loop", "branch", "unrolled"]))
        if block == "loop":
            _loop(draw, g, steps)
        elif block == "branch":
            _branch(draw, g, flag)
        elif block == "unrolled":
            _unrolled(draw, g)
        for _ in range(draw(st.integers(0, 3))):
            g.statement("    ")
        result = draw(st.sampled_from(sorted(n for n in g.tiles() if n not in ("x",)) or ["x"]))
        value = g.value(result)
        if value.dtype != "f32" and draw(st.integers(0, 9)):
            g.lines.append(f"    {result} = {result}.to(tl.f32)")
            value = m_convert(value, "f32")
        g.lines.append(f"    tl.store(Out, [m0, n0], {result})")
        if value.dtype != "f32":
            raise Bad(D.DSL_DTYPE_MISMATCH)
        out = np.full((grid.M, grid.N), -7.0, np.float32)
        grid.store(out, value)
    except Bad as bad:
        codes, out = bad.codes, None
        g.lines.append("    tl.store(Out, [m0, n0], x.to(tl.f32))")
    shape = draw(st.sampled_from([("M", "N"), (grid.M, grid.N)]))
    specs = (tessera.tensor(shape, xdt), tessera.tensor(shape, "f32"), tessera.tensor(shape, "f32"),
             tessera.scalar("f32"))
    meta = {"BM": BM, "BN": BN, "FLAG": flag, "STEPS": steps}
    return Program("\n".join(head + g.lines) + "\n", grid, specs, meta, {"X": X, "Y": Y, "s": s}, out,
                   codes or frozenset(), g.narrow, g.scale)


def _loop(draw, g: _Gen, steps: int) -> None:
    """`acc = tl.zeros(...)`, then `for k in tl.range(STEPS)` with 1-3 statements and `acc = acc * 0.5 + v`."""
    shape = (g.grid.BM, g.grid.BN)
    g.lines.append("    acc = tl.zeros((BM, BN), tl.f32)")
    g.env["acc"] = g.grid.tile(0.0, shape, "f32")
    bound = draw(st.sampled_from(["STEPS", "0, STEPS", "0, tl.cdiv(tl.dim(Y, 1), BN)"]))
    if "cdiv" in bound:  # a K-loop over the column tiles of Y: the trip count is known only at run time
        steps = g.grid.gn
    g.lines.append(f"    for k in tl.range({bound}):")
    start = len(g.lines)
    body = []
    before = dict(g.env)
    if "cdiv" in bound or draw(st.booleans()):
        pad = draw(st.sampled_from(["0.0", "1.0"]))
        name = f"v{g.count}"
        g.count += 1
        g.lines.append(f"        {name} = tl.load(Y, [m0, k * BN], (BM, BN), padding={pad})")
        body.append((name, lambda: g.grid.load(g.inputs["Y"][0], "f32", g.env["m0"],
                                               V("index", g.env["k"].arr * g.grid.BN, scalar=True), shape, float(pad))))
    for i in range(steps):
        g.env["k"] = g.grid.scalar(i, "index")
        for name, thunk in body[:1] if i == 0 else []:
            g.run_thunk(name, thunk)
        if i == 0:
            for _ in range(draw(st.integers(1, 3))):
                src, thunk = g.expression(in_loop=True)
                name = f"v{g.count}"
                g.count += 1
                g.lines.append(f"        {name} = {src}")
                body.append((name, thunk))
                g.run_thunk(name, thunk)
            last = body[-1][0]
            g.lines.append(f"        acc = acc * 0.5 + {last}")
            update = lambda: m_bin(m_bin(g.value("acc"), 0.5, "*"), g.value(last), "+")  # noqa: E731
            new = update()
            if new.dtype != "f32" or new.shape != shape:
                raise Bad(D.DSL_LOOP_CARRIED)
            g.env["acc"] = new
            g.note(new)
        else:
            for name, thunk in body:
                g.run_thunk(name, thunk)
            g.env["acc"] = update()
            g.note(g.env["acc"])
    assert len(g.lines) > start
    for name, _ in body:  # defined in the body, not carried: poison after the loop
        g.env[name] = POISON if name not in before else before[name]
    g.env.pop("k")


def _branch(draw, g: _Gen, flag: bool) -> None:
    """`if FLAG:` one statement `else:` another, both assigning one name; only the taken one must be legal."""
    name = f"v{g.count}"
    g.count += 1
    taken_first = flag
    g.lines.append("    if FLAG:")
    src1, thunk1 = g.expression(in_loop=False)
    g.lines.append(f"        {name} = {src1}")
    g.lines.append("    else:")
    src2, thunk2 = g.expression(in_loop=False)
    g.lines.append(f"        {name} = {src2}")
    g.run_thunk(name, thunk1 if taken_first else thunk2)


def _unrolled(draw, g: _Gen) -> None:
    """A Python loop over a literal range: unrolled at trace time."""
    reps, a = draw(st.integers(1, 3)), g.pick()
    name = f"v{g.count}"
    g.count += 1
    g.lines.append(f"    {name} = {a}")
    g.run_thunk(name, lambda: g.value(a))
    g.lines.append(f"    for i in range({reps}):")
    g.lines.append(f"        {name} = {name} * 0.5 + i")
    for i in range(reps):
        g.run_thunk(name, lambda: m_bin(m_bin(g.value(name), 0.5, "*"), i, "+"))


# --- the test ---------------------------------------------------------------------------------------------------


def _kernel(source: str):
    filename = f"<fuzz-kernel-{next(_names)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # the decorator reads it
    namespace = {"tessera": tessera, "tl": tl}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["fuzz_kernel"]


def _matches(got: np.ndarray, want: np.ndarray, prog: Program) -> bool:
    tol = 2e-2 if prog.narrow else 1e-5
    with np.errstate(invalid="ignore"):
        close = np.isclose(got, want, rtol=tol, atol=tol * prog.scale, equal_nan=True)
    return bool(close.all())


def _check(prog: Program) -> None:
    kernel = _kernel(prog.source)
    try:
        traced = kernel.trace(*prog.specs, **prog.meta)
    except D.TesseraError as err:
        assert prog.expected is None, f"the model says this program is legal, but tracing failed: {err}"
        assert not prog.codes or err.code.name in prog.codes, \
            f"expected one of {sorted(prog.codes)}, got {err.code.name}: {err}"
        return
    assert prog.expected is not None, f"the model expects one of {sorted(prog.codes) or 'any code'}; it traced"
    out = np.zeros_like(prog.expected)
    out[...] = -7.0
    run(traced, (prog.grid.gm, prog.grid.gn), [prog.inputs["X"], prog.inputs["Y"], out, prog.inputs["s"]])
    if not _matches(out, prog.expected, prog):
        bad = np.argwhere(~np.isclose(out, prog.expected, rtol=1e-2, equal_nan=True))[:3].tolist()
        raise AssertionError(f"the reference run differs from the model at {bad}:\n"
                             f"{out[tuple(np.array(bad).T)] if bad else ''} vs "
                             f"{prog.expected[tuple(np.array(bad).T)] if bad else ''}")
    try:
        module, _ = lower(traced, default_pipeline("sm_80"), "sm_80")
        emit_cuda(module, traced.name)
    except D.TesseraError:
        pass  # a coded refusal (an op or shape the sm_80 lowering does not take) is an answer


@settings(max_examples=1000 * SCALE, deadline=None, derandomize=True, database=None,
          phases=(Phase.explicit, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(programs())
def test_random_tile_programs(prog):
    with time_limit(LIMIT_S, prog.source, "tile-program", ".py"):
        _check(prog)
