"""CUDA C++ for the ops around the nv ops: arith and math on scalars, scf.for with iter_args, scf.if, func.return.

Scalars are `const` locals of their compute type (index is `long long`).
An scf.for's loop-carried values become variables declared before the loop
(arrays for register vectors, pointers for shared buffers, ints for cp.async
groups); the body's yield assigns them, through temporaries when the yield
permutes them (pipeline-smem rotates its stage buffers that way).
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, VectorType
from xdsl.ir import Attribute, Operation

from tessera.target.nvidia.emit import c_types as C
from tessera.target.nvidia.emit.emitter import location
from tessera.ir import diagnostics as D
from tessera.target.nvidia.ir.ops import AsyncGroupType, SmemType

_BINARY = {
    "arith.addi": "({0} + {1})", "arith.subi": "({0} - {1})", "arith.muli": "({0} * {1})",
    "arith.divsi": "({0} / {1})", "arith.remsi": "({0} % {1})", "arith.andi": "({0} & {1})",
    "arith.ori": "({0} | {1})", "arith.xori": "({0} ^ {1})", "arith.shli": "({0} << {1})",
    "arith.shrsi": "({0} >> {1})", "arith.maxsi": "max({0}, {1})", "arith.minsi": "min({0}, {1})",
    "arith.floordivsi": "tsr_floordiv({0}, {1})", "arith.ceildivsi": "tsr_ceildiv({0}, {1})",
    "arith.addf": "({0} + {1})", "arith.subf": "({0} - {1})", "arith.mulf": "({0} * {1})",
    "arith.divf": "({0} / {1})", "arith.maxnumf": "fmax({0}, {1})", "arith.minnumf": "fmin({0}, {1})",
    "arith.maximumf": "tsr_fmax({0}, {1})", "arith.minimumf": "tsr_fmin({0}, {1})",
}
_UNARY = {
    "arith.negf": "(-{0})", "math.absf": "fabs({0})", "math.absi": "abs({0})", "math.exp": "exp({0})",
    "math.exp2": "exp2({0})", "math.log": "log({0})", "math.log2": "log2({0})", "math.sqrt": "sqrt({0})",
    "math.rsqrt": "rsqrt({0})", "math.tanh": "tanh({0})", "math.erf": "erf({0})",
}
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp",
          "arith.fptosi", "arith.fptoui", "arith.extsi", "arith.extui", "arith.trunci")
_CMPI = ["==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="]  # eq ne slt sle sgt sge ult ule ugt uge
_CMPF = {1: "==", 2: ">", 3: ">=", 4: "<", 5: "<=", 6: "!=", 13: "!="}  # oeq ogt oge olt ole one une


def c_type(t: Attribute) -> str:
    """C type of a scalar or handle value (register vectors are arrays, see `declare`)."""
    if isinstance(t, SmemType):
        return C.mem_type(t.element_type) + "*"
    if isinstance(t, AsyncGroupType):
        return "int"
    return C.compute_type(t)


def declare(e, t: Attribute, name: str) -> None:
    if isinstance(t, VectorType):
        e.line(C.array_decl(t.element_type, name, t.get_shape()[0]))
    else:
        e.line(f"{c_type(t)} {name};")


def copy(e, t: Attribute, dst: str, src: str) -> None:
    if isinstance(t, VectorType):
        n = t.get_shape()[0]
        words = (n + 1) // 2 if C.is_half(t.element_type) else n
        with e.unrolled("i_", words):
            e.line(f"{dst}[i_] = {src}[i_];")
    else:
        e.line(f"{dst} = {src};")


def _scalar(e, op: Operation, expr: str) -> None:
    t = op.results[0].type
    if isinstance(t, VectorType):
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"{op.name} on vectors: per-thread vector math is nv.map", op=op)
    e.line(f"const {c_type(t)} {e.define(op.results[0])} = {expr};  // {op.name}")


def emit_constant(e, op: arith.ConstantOp) -> None:
    v = op.value
    if not isinstance(v, (IntegerAttr, FloatAttr)):
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"arith.constant {v} is not a scalar", op=op)
    _scalar(e, op, C.literal(op.result.type, v.value.data))


def emit_binary(e, op: Operation) -> None:
    _scalar(e, op, _BINARY[op.name].format(e[op.operands[0]], e[op.operands[1]]))


def emit_unary(e, op: Operation) -> None:
    _scalar(e, op, _UNARY[op.name].format(e[op.operands[0]]))


def emit_cast(e, op: Operation) -> None:
    t = op.results[0].type
    value = f"({c_type(t)}){e[op.operands[0]]}"
    if op.name == "arith.truncf" and C.is_half(t):  # a bf16/f16 scalar is an f32 rounded to its precision
        value = C.to_compute(t, C.from_compute(t, e[op.operands[0]]))
    _scalar(e, op, value)


def emit_cmp(e, op: Operation) -> None:
    pred = op.predicate.value.data
    sym = _CMPI[pred] if op.name == "arith.cmpi" else _CMPF.get(pred)
    if sym is None:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"arith.cmpf predicate #{pred} has no C operator here", op=op)
    _scalar(e, op, f"({e[op.operands[0]]} {sym} {e[op.operands[1]]})")


def emit_select(e, op: arith.SelectOp) -> None:
    _scalar(e, op, f"({e[op.cond]} ? {e[op.lhs]} : {e[op.rhs]})")


def emit_for(e, op: scf.ForOp) -> None:
    body = op.body.block
    e.comment(op, f"{len(op.iter_args)} loop-carried value(s)")
    carried = []
    for res, arg, init in zip(op.results, body.args[1:], op.iter_args):
        name = e.fresh(res.name_hint or arg.name_hint)
        declare(e, arg.type, name)
        copy(e, arg.type, name, e[init])
        e.define(res, name)
        e.define(arg, name)
        carried.append((name, arg))
    iv = e.define(body.args[0])
    lo, hi, step = e[op.lb], e[op.ub], e[op.step]
    with e.block(f"for (int {iv} = {lo}; {iv} < {hi}; {iv} += {step}) "):
        e.emit_ops([inner for inner in body.ops if not isinstance(inner, scf.YieldOp)])  # runs fuse here too
        _yield(e, body.last_op, carried)


def emit_if(e, op: scf.IfOp) -> None:
    """An scf.if as a C if/else; its results are variables declared before it and set from each branch's yield
    (a guarded, rotated loop returns its registers this way)."""
    e.comment(op, f"{len(op.results)} result(s)" if op.results else "")
    names = []
    for res in op.results:
        name = e.fresh(res.name_hint or "if_out")
        declare(e, res.type, name)
        e.define(res, name)
        names.append(name)
    regions = [r for r in (op.true_region, op.false_region) if r.blocks]
    if op.results and len(regions) != 2:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, "scf.if with results and no else branch", op=op)
    for i, region in enumerate(regions):
        head = f"if ({e[op.cond]}) " if i == 0 else "else "
        with e.block(head):
            e.emit_ops([inner for inner in region.block.ops if not isinstance(inner, scf.YieldOp)])
            yld = region.block.last_op
            for name, res, v in zip(names, op.results, yld.operands if isinstance(yld, scf.YieldOp) else []):
                copy(e, res.type, name, e[v])


def _yield(e, op: scf.YieldOp, carried) -> None:
    moves = [(name, arg, e[v]) for (name, arg), v in zip(carried, op.operands) if e[v] != name]
    if not moves:
        return
    e.line(f"// scf.yield @ {location(op)}: the next iteration's values")
    names = {name for name, _ in carried}
    staged = []
    for name, arg, src in moves:
        if src in names:  # the yield permutes loop-carried values: read them all before writing any
            tmp = e.fresh(name + "_next")
            declare(e, arg.type, tmp)
            copy(e, arg.type, tmp, src)
            staged.append((name, arg, tmp))
        else:
            staged.append((name, arg, src))
    for name, arg, src in staged:
        copy(e, arg.type, name, src)


def emit_dim(e, op) -> None:
    """memref.dim: the size of a kernel argument's dim (a constant for static dims)."""
    mr = e.memref(op.source, op)
    index = op.index.owner
    if isinstance(index, arith.ConstantOp) and isinstance(index.value, IntegerAttr):
        expr = mr.sizes[index.value.value.data]
    else:
        expr = mr.sizes[-1]
        for d in range(len(mr.sizes) - 2, -1, -1):
            expr = f"({e[op.index]} == {d} ? {mr.sizes[d]} : {expr})"
    _scalar(e, op, expr)


def emit_return(e, op: Operation) -> None:
    if op.next_op is not None:
        e.line("return;")


SCALAR_EMITTERS = {
    "arith.constant": emit_constant, "arith.select": emit_select, "arith.cmpi": emit_cmp, "arith.cmpf": emit_cmp,
    "scf.for": emit_for, "scf.if": emit_if, "func.return": emit_return, "memref.dim": emit_dim,
    **{name: emit_binary for name in _BINARY}, **{name: emit_unary for name in _UNARY},
    **{name: emit_cast for name in _CASTS},
}
