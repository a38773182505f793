"""A tensor argument of the kernel while it is traced: the memref tiles are loaded from and stored into.

Its `.shape` gives static dims as Python ints and symbolic dims as index
scalars (one memref.dim per symbol, hoisted). It sits above scalar.py, since
reading a dim makes a Scalar, and below tl.py, whose load/store take it.
"""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.ir import SSAValue

from tessera.dsl import builder as B
from tessera.dsl import dtypes as T
from tessera.dsl.errors import KernelError
from tessera.dsl.scalar import Scalar, const_index
from tessera.ir import diagnostics as D


class Tensor:
    """A tensor (memref) argument of the kernel: load tiles from it, store tiles into it."""

    def __init__(self, value: SSAValue, spec, name: str, state: B.TraceState):
        self._value = value
        self.spec = spec
        self.name = name
        self._state = state

    @property
    def dtype(self) -> T.DType:
        return self.spec.dtype

    @property
    def rank(self) -> int:
        return self.spec.rank

    ndim = rank

    def ssa(self, state: B.TraceState) -> SSAValue:
        return self._value

    @property
    def shape(self) -> tuple:
        """Static dims as Python ints; symbolic dims as index Scalars (memref.dim, read once per symbol)."""
        return tuple(self._dim(i) for i in range(self.rank))

    def _dim(self, i: int):
        d = self.spec.shape[i]
        return d if isinstance(d, int) else self.dim(i)

    def dim(self, i: int) -> Scalar:
        """Dim `i` as an index Scalar read with memref.dim (also for static dims); one read per symbol."""
        if isinstance(i, bool) or not isinstance(i, int) or not -self.rank <= i < self.rank:
            raise KernelError(D.DSL_AXIS_INVALID, f"dim {i!r} is out of range for rank-{self.rank} tensor '{self.name}'")
        i %= self.rank
        d = self.spec.shape[i]
        key = ("dim", d) if isinstance(d, str) else ("static_dim", self.name, i)
        state = self._state
        idx = const_index(state, i)
        op = state.hoisted(key, lambda: memref.DimOp(self._value, idx))
        return Scalar(op.results[0], state.root)

    def __repr__(self) -> str:
        return f"<tensor '{self.name}' {self.spec}>"

    def __bool__(self):
        raise KernelError(D.DSL_TRACED_BOOL, f"tensor '{self.name}' has no truth value; to test an optional "
                                             "argument write `if X is not None:`")

    def _not_a_tile(self, *args):
        raise KernelError(D.DSL_OPERAND_INVALID, f"'{self.name}' is a tensor in global memory, not a tile; "
                                                 f"load a tile from it first with tl.load({self.name}, offsets, shape)")

    __getitem__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _not_a_tile
    __truediv__ = __rtruediv__ = __neg__ = __matmul__ = __lt__ = __gt__ = __le__ = __ge__ = _not_a_tile
    __iter__ = _not_a_tile
