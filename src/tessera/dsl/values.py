"""What every traced value shares, and the poison that stands for one a loop hid.

`Traced` is the base of `Tile` and `Scalar`: an SSA value plus the scope
(function body or loop body) it was defined in, and coded errors for the
Python operators neither defines. `Poison` stands for a name that a tl.range
loop body defined and that is not loop-carried: any use of it after the loop
is an error naming the line that defined it.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from tessera.dsl import builder as B
from tessera.dsl import dtypes as T
from tessera.dsl.errors import KernelError
from tessera.ir import diagnostics as D


class Traced:
    """An SSA value produced during tracing and the scope that defines it."""

    __slots__ = ("_value", "scope")

    def __init__(self, value: SSAValue, scope: B.Scope):
        self._value = value
        self.scope = scope

    def ssa(self, state: B.TraceState) -> SSAValue:
        """The SSA value for use as an operand in the open scope (checked for loop escapes)."""
        state.check_visible(self.scope)
        return self._value

    @property
    def ir_type(self):
        return self._value.type

    @property
    def dtype(self) -> T.DType:
        raise NotImplementedError

    def _no_python_value(self, what: str, hint: str | None = None):
        raise KernelError(D.DSL_TRACED_BOOL, f"{what} of a traced {type(self).__name__.lower()} is not known while "
                                             "tracing (it is computed when the kernel runs)", hint=hint)

    def __bool__(self):
        self._no_python_value("the truth value (for if, while, and, or, not)")

    def __index__(self):
        self._no_python_value("the integer value", hint="loop over traced bounds with tl.range(...); tile shapes "
                                                        "are Python ints (meta-parameters or static tensor dims)")

    __int__ = __index__

    def __float__(self):
        self._no_python_value("the float value")

    __hash__ = object.__hash__


# Python operators no traced value defines (Tile and Scalar install theirs over these): without them `t ** 2`,
# `t % 3` or `round(s)` end in Python's bare TypeError instead of a coded error at the user's line.
_UNDEFINED_OPS = {"**": ("pow", "rpow"), "%": ("mod", "rmod"), "@": ("matmul", "rmatmul"), "&": ("and", "rand"),
                  "|": ("or", "ror"), "^": ("xor", "rxor"), "<<": ("lshift", "rlshift"), ">>": ("rshift", "rrshift"),
                  "divmod": ("divmod", "rdivmod"), "~": ("invert",), "abs": ("abs",), "round": ("round",),
                  "math.trunc": ("trunc",), "math.floor": ("floor",), "math.ceil": ("ceil",)}
_UNDEFINED_HINTS = {"**": "write x * x for a square; tl.exp2(y * tl.log(x) / 0.6931471805599453) for a power",
                    "%": "for integers write x - (x // y) * y", "@": "use tl.dot(a, b, acc)",
                    "abs": "tl.abs works on tiles; for a scalar write tl.maximum(s, -s)",
                    "round": "convert with .to(tl.i32) (it truncates toward zero)",
                    "math.trunc": "convert with .to(tl.i32) (it truncates toward zero)"}


def _undefined(sym: str):
    def op(self, *args):
        raise KernelError(D.DSL_UNSUPPORTED, f"'{sym}' is not defined on traced {type(self).__name__.lower()}s",
                          hint=_UNDEFINED_HINTS.get(sym))
    return op


for _sym, _names in _UNDEFINED_OPS.items():
    for _dunder in _names:
        setattr(Traced, f"__{_dunder}__", _undefined(_sym))


_FORWARD_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "&": "and",
                "|": "or"}
_COMPARE_OPS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}


def binary_operators(*symbols: str):
    """Class decorator: the Python operators for `symbols`, each calling `self._bin(other, symbol[, reflected])`.

    Forward operators also get their reflected twin (`__radd__` ...); comparisons do not.
    Defining `__eq__` would drop `__hash__`, so the Traced hash is kept.
    """
    def install(cls):
        for sym in symbols:
            if sym in _COMPARE_OPS:
                setattr(cls, f"__{_COMPARE_OPS[sym]}__", lambda self, o, s=sym: self._bin(o, s))
                continue
            name = _FORWARD_OPS[sym]
            setattr(cls, f"__{name}__", lambda self, o, s=sym: self._bin(o, s))
            setattr(cls, f"__r{name}__", lambda self, o, s=sym: self._bin(o, s, True))
        cls.__hash__ = Traced.__hash__
        return cls
    return install


class Poison:
    """A name defined inside a tl.range loop body and read after the loop."""

    __slots__ = ("_name", "_line", "_why")

    def __init__(self, name: str, line: int, why: str = "defined inside"):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_line", line)
        object.__setattr__(self, "_why", why)

    def fail(self):
        if self._why == "defined inside":
            raise KernelError(D.DSL_LOOP_ESCAPE, f"'{self._name}' is defined inside the loop at line {self._line} "
                                                 "and used outside it")
        raise KernelError(D.DSL_LOOP_ESCAPE, f"'{self._name}' is {self._why}")

    def __repr__(self) -> str:
        return f"<'{self._name}' from the tl.range loop at line {self._line}: not usable here>"

    def __getattr__(self, attr):
        self.fail()

    def __setattr__(self, attr, value):
        self.fail()

    def __call__(self, *args, **kwargs):
        self.fail()


def _poison_op(name):
    def op(self, *args):
        self.fail()
    op.__name__ = name
    return op


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__neg__", "__pos__", "__abs__", "__lt__",
              "__le__", "__gt__", "__ge__", "__and__", "__rand__", "__or__", "__ror__", "__invert__", "__bool__",
              "__index__", "__int__", "__float__", "__iter__", "__len__", "__getitem__", "__matmul__", "__eq__",
              "__ne__", *(f"__{d}__" for names in _UNDEFINED_OPS.values() for d in names)):
    setattr(Poison, _name, _poison_op(_name))
Poison.__hash__ = object.__hash__  # type: ignore[method-assign]


def reject_poison(x: object) -> None:
    if isinstance(x, Poison):
        x.fail()
