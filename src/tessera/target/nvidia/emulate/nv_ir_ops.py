"""One numpy implementation per op the nv emulator runs (`IMPLS`): nv ops, scalar arith, scf.for, func.return."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import scf

from tessera.target.nvidia.ir import ops as nv
from tessera.target.nvidia.emulate.nv_state import CTA, NvRuntimeError, dtype_of, scalar_value
from tessera.ir.types import type_name
from tessera.layouts import emulate, warp_tile_map


def _compute(a: np.ndarray) -> np.ndarray:
    """16-bit floats compute in f32 (the emitted code does the same and rounds on write)."""
    return a.astype(np.float32) if a.dtype.itemsize == 2 and a.dtype.kind in "fV" else a


def _global_index(mem: np.ndarray, offsets, coords):
    lead = len(offsets) - len(coords)
    idx = [np.full(coords[0].shape, o) for o in offsets[:lead]] + [o + c for o, c in zip(offsets[lead:], coords)]
    ok = np.ones(coords[0].shape, bool)
    for d, i in enumerate(idx):
        ok &= (i >= 0) & (i < mem.shape[d])
    return tuple(np.where(ok, i, 0) for i in idx), ok


def _smem_elems(t: nv.SmemType, coords) -> np.ndarray:
    return sum(c * s for c, s in zip(coords, t.strides()))


def _buf(cta: CTA, value):
    offset = cta[value]
    return offset, value.type, cta.smem.view(offset, value.type)


# --- grid, barrier, shared memory -------------------------------------------------------

def block_id(cta, op):
    return cta.block_id[op.axis.value.data]


def grid_dim(cta, op):
    return cta.grid[op.axis.value.data]


def barrier(cta, op):
    cta.smem.epoch += 1


def alloc_shared(cta, op):
    return op.offset.value.data


def cp_async_tile(cta, op):
    mem, offs = cta[op.source], [cta[v] for v in op.offsets]
    offset, t, view = _buf(cta, op.dest)
    shape = t.get_shape()
    coords = np.unravel_index(np.arange(math.prod(shape)), shape)
    idx, ok = _global_index(mem, offs, coords)
    values = np.where(ok, mem[idx], np.array(op.pad.value.data).astype(mem.dtype))
    elems = _smem_elems(t, coords)
    owner = np.arange(elems.size) % cta.threads  # which thread issues which element (any fixed split)
    b, th = cta.smem.check_write(op, offset, t, elems, owner, mark=False)
    cta.smem.pending[b] = True
    cta.groups.append((op, offset, t, elems, values, owner))
    return len(cta.groups) - 1


def cp_async_wait(cta, op):
    newest = max(cta[t] for t in op.tokens)
    for g, group in enumerate(cta.groups):
        if group is None or g > newest:
            continue
        cop, offset, t, elems, values, owner = group
        b, th = cta.smem.check_write(cop, offset, t, elems, owner)
        cta.smem.pending[b] = False
        cta.smem.view(offset, t)[elems] = values
        cta.groups[g] = None


# --- fragments --------------------------------------------------------------------------

def ldfrag_shared(cta, op):
    offset, t, view = _buf(cta, op.source)
    r0, c0 = (cta[v] for v in op.offsets)
    rows, cols = cta.fragment(op, r0, c0)
    elems = rows * t.strides()[0] + cols
    cta.smem.check_read(op, offset, t, elems, cta.tid[:, None])
    return view[elems].copy()


def stfrag_shared(cta, op):
    offset, t, view = _buf(cta, op.dest)
    r0, c0 = (cta[v] for v in op.offsets)
    rows, cols = cta.fragment(op, r0, c0)
    elems = rows * t.strides()[0] + cols
    cta.smem.check_write(op, offset, t, elems, cta.tid[:, None])
    view[elems] = cta[op.value].astype(view.dtype)


def stfrag_global(cta, op):
    mem, offs = cta[op.dest], [cta[v] for v in op.offsets]
    rows, cols = cta.fragment(op, 0, 0)
    idx, ok = _global_index(mem, offs, (rows, cols))
    mem[tuple(i[ok] for i in idx)] = cta[op.value][ok].astype(mem.dtype)


def mma_sync(cta, op):
    m, n, k = nv.ints(op.mnk)
    maps = [warp_tile_map("mma_sync", r, m, n, k, type_name(op.dtype)) for r in ("a", "b", "acc")]
    a, b, c = cta[op.a], cta[op.b], cta[op.acc]
    out = np.empty_like(c)
    for w in range(cta.threads // 32):
        lanes = slice(32 * w, 32 * w + 32)
        out[lanes] = emulate.warp_tile_mma(*maps, a[lanes], b[lanes], c[lanes]).astype(np.float32)
    return out


def blocked_mma(cta, op):
    """acc + A @ B per blocked slot, one fma per k in k order (f32: the product is exact in f64, then one rounding
    of the sum to f64 and one to f32: a true fma except for rare double-rounding ties)."""
    (oa, ta, va), (ob, tb, vb) = _buf(cta, op.a), _buf(cta, op.b)
    acc = cta[op.acc]
    depth = ta.get_shape()[1]
    _, valid, (r, c) = cta.blocked(op.tile_shape(), acc.shape[1])
    ks = np.arange(depth)
    ea = r[..., None] * ta.strides()[0] + ks  # [threads, slots, K]
    eb = ks * tb.strides()[0] + c[..., None]
    th = np.broadcast_to(cta.tid[:, None, None], ea.shape)
    cta.smem.check_read(op, oa, ta, ea[valid], th[valid])
    cta.smem.check_read(op, ob, tb, eb[valid], th[valid])
    prod_a, prod_b = va[ea].astype(np.float64), vb[eb].astype(np.float64)
    d = acc.copy()
    for kk in range(depth):
        d = (d.astype(np.float64) + prod_a[..., kk] * prod_b[..., kk]).astype(acc.dtype)
    return np.where(valid, d, acc)


# --- blocked register tiles ------------------------------------------------------------

def load_global(cta, op):
    mem, offs = cta[op.source], [cta[v] for v in op.offsets]
    n = op.result.type.get_shape()[0]
    _, valid, coords = cta.blocked(op.tile_shape(), n)
    idx, ok = _global_index(mem, offs, coords)
    ok &= valid
    return np.where(ok, mem[idx], np.array(op.pad.value.data).astype(mem.dtype))


def store_global(cta, op):
    mem, offs, v = cta[op.dest], [cta[x] for x in op.offsets], cta[op.value]
    _, valid, coords = cta.blocked(op.tile_shape(), v.shape[1])
    idx, ok = _global_index(mem, offs, coords)
    ok &= valid
    mem[tuple(i[ok] for i in idx)] = v[ok].astype(mem.dtype)


def store_shared(cta, op):
    offset, t, view = _buf(cta, op.dest)
    v = cta[op.value]
    _, valid, coords = cta.blocked(op.tile_shape(), v.shape[1])
    elems = _smem_elems(t, coords)
    cta.smem.check_write(op, offset, t, elems[valid], np.broadcast_to(cta.tid[:, None], valid.shape)[valid])
    view[elems[valid]] = v[valid].astype(view.dtype)


def load_shared(cta, op):
    offset, t, view = _buf(cta, op.source)
    n = op.result.type.get_shape()[0]
    _, valid, coords = cta.blocked(op.tile_shape(), n)
    elems = sum(c * s for c, s in zip(coords, nv.ints(op.strides)))
    cta.smem.check_read(op, offset, t, elems[valid], np.broadcast_to(cta.tid[:, None], valid.shape)[valid])
    return np.where(valid, view[elems], np.zeros((), view.dtype))


def reduce_shared(cta, op):
    offset, t, view = _buf(cta, op.source)
    n = op.result.type.get_shape()[0]
    length, stride = t.get_shape()[op.axis.value.data], t.strides()[op.axis.value.data]
    _, valid, coords = cta.blocked(op.tile_shape(), n)
    base = _smem_elems(t, coords)
    elems = base[..., None] + np.arange(length) * stride
    th = np.broadcast_to(cta.tid[:, None, None], elems.shape)
    cta.smem.check_read(op, offset, t, elems[valid], th[valid])
    data = _compute(view[np.where(valid[..., None], elems, 0)])
    red = {"sum": np.sum, "max": np.max, "min": np.min}[op.kind.data](data, axis=-1)
    return red.astype(view.dtype)


def iota(cta, op):
    n = op.result.type.get_shape()[0]
    _, _, coords = cta.blocked(op.tile_shape(), n)
    return coords[op.axis.value.data].astype(dtype_of(op.result.type.element_type))


# --- elementwise -----------------------------------------------------------------------

_FNS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
        "neg": np.negative, "abs": np.abs, "exp": np.exp, "exp2": np.exp2, "log": np.log, "sqrt": np.sqrt,
        "tanh": np.tanh, "rsqrt": lambda x: 1 / np.sqrt(x)}


def _div(x, y):
    if x.dtype.kind in "iu":
        q = np.abs(x) // np.maximum(np.abs(y), 1)
        return np.where((x < 0) != (y < 0), -q, q).astype(x.dtype)  # C: truncation toward zero
    return x / y


def _erf(x):
    import math as m

    return np.vectorize(m.erf, otypes=[x.dtype])(x)


def map_(cta, op):
    dt = dtype_of(op.result.type.element_type)
    args = [_compute(cta[a]) for a in op.args]
    fn = {"div": _div, "erf": _erf}.get(op.fn.data) or _FNS[op.fn.data]
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args)).astype(dt)


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal}


def cmp(cta, op):
    return _CMP[op.predicate.data](_compute(cta[op.lhs]), _compute(cta[op.rhs]))


def select(cta, op):
    return np.where(cta[op.cond], cta[op.lhs], cta[op.rhs])


def convert(cta, op):
    dt = dtype_of(op.result.type.element_type)
    x = _compute(cta[op.source])
    if dt.kind in "iu" and x.dtype.kind == "f":
        x = np.trunc(x)
    return x.astype(dt) if dt != np.bool_ else x != 0


def slots(cta, op):
    n = op.result.type.get_shape()[0]
    return cta[op.source][:, op.scale.value.data * np.arange(n) + op.offset.value.data]


def splat(cta, op):
    n = op.result.type.get_shape()[0]
    return np.full((cta.threads, n), cta[op.scalar], dtype_of(op.result.type.element_type))


def fill(cta, op):
    n = op.result.type.get_shape()[0]
    return np.full((cta.threads, n), op.value.value.data).astype(dtype_of(op.result.type.element_type))


# --- scalars and structure ----------------------------------------------------------------

def _c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


_SCALAR = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
    "arith.divsi": _c_div, "arith.remsi": lambda a, b: a - _c_div(a, b) * b,
    "arith.floordivsi": lambda a, b: a // b, "arith.ceildivsi": lambda a, b: -((-a) // b),
    "arith.maxsi": max, "arith.minsi": min, "arith.addf": lambda a, b: a + b, "arith.subf": lambda a, b: a - b,
    "arith.mulf": lambda a, b: a * b, "arith.divf": lambda a, b: a / b, "arith.negf": lambda a: -a,
    "arith.index_cast": lambda a: a, "arith.index_castui": lambda a: a,
}


def scalar(cta, op):
    return _SCALAR[op.name](*(cta[v] for v in op.operands))


def cast(cta, op):
    """Scalar conversions: to the result type (ints truncate toward zero, floats round to their type)."""
    x, t = cta[op.operands[0]], op.results[0].type
    name = type_name(t)
    if name == "index" or name.startswith("i"):
        return int(x)
    return dtype_of(t).type(x)


def dim(cta, op):
    return cta[op.source].shape[cta[op.index]]


def constant(cta, op):
    return scalar_value(op.value, op.result.type)


def for_(cta, op: scf.ForOp):
    body = op.body.block
    values = [cta[v] for v in op.iter_args]
    for i in range(cta[op.lb], cta[op.ub], cta[op.step]):
        cta.env[body.args[0]] = i
        for arg, v in zip(body.args[1:], values):
            cta.env[arg] = v
        cta.run(list(body.ops)[:-1])
        values = [cta[v] for v in body.last_op.operands]
    return tuple(values)


IMPLS = {
    "nv.block_id": block_id, "nv.grid_dim": grid_dim, "nv.barrier": barrier, "nv.alloc_shared": alloc_shared,
    "nv.cp_async_tile": cp_async_tile, "nv.cp_async_wait": cp_async_wait, "nv.ldfrag_shared": ldfrag_shared,
    "nv.stfrag_shared": stfrag_shared, "nv.stfrag_global": stfrag_global, "nv.mma_sync": mma_sync,
    "nv.blocked_mma": blocked_mma,
    "nv.load_global": load_global, "nv.store_global": store_global, "nv.store_shared": store_shared,
    "nv.load_shared": load_shared, "nv.reduce_shared": reduce_shared, "nv.iota": iota, "nv.map": map_,
    "nv.cmp": cmp, "nv.select": select, "nv.convert": convert, "nv.splat": splat, "nv.fill": fill, "nv.slots": slots,
    "arith.constant": constant, "scf.for": for_, "func.return": lambda cta, op: None, "memref.dim": dim,
    **{name: cast for name in ("arith.sitofp", "arith.fptosi", "arith.extf", "arith.truncf", "arith.extsi",
                               "arith.trunci")},
    **{name: scalar for name in _SCALAR},
}

__all__ = ["IMPLS", "NvRuntimeError"]
