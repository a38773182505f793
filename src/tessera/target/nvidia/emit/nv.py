"""CUDA C++ for the thread-level nv ops, and the table of every nv op's emitter.

Blocked register tiles: slot i of thread `tid` is the tile's flattened
row-major element `tid + i * threads`; ops that touch memory guard
slots past the tile's end. Every op on blocked slots is *slot-wise*: slot i
of its result depends only on slot i of its operands (or on memory). The
emitter therefore fuses each run of consecutive slot-wise ops with the same
slot count into one unrolled loop (`emit_run`): a slot's value flows through
the whole chain before the next slot starts, so a chain of 128-slot tiles
needs registers for one tile, not one per op (DESIGN section 8: unrolling
belongs to the emitted code). The per-element C expression of `nv.map`
comes from `MAP_TEMPLATES`.
"""

from __future__ import annotations

from contextlib import nullcontext

import math

from tessera.target.nvidia.emit.hopper import HOPPER_EMITTERS
from tessera.target.nvidia.emit.wgacc import SLOTWISE as HOPPER_SLOTWISE
from tessera.target.nvidia.emit.wgacc import (box_begin, box_end, declare_staging, declare_window_bases, interior_condition,
                                        staged_store)
from tessera.target.nvidia.emit.hopper import PRELUDE as HOPPER_PRELUDE
from tessera.target.nvidia.emit.hopper import PROVIDES as HOPPER_PROVIDES
from tessera.target.nvidia.emit import sched as emit_sched
from tessera.target.nvidia.emit import splitk as emit_splitk
from tessera.target.nvidia.emit import wgreg as emit_wgreg
from tessera.target.nvidia.emit import c_types as C
from tessera.target.nvidia.emit.copies import (blocked_coords, emit_cp_async_tile, emit_cp_async_wait, global_access,
                                         smem_offset)
from tessera.target.nvidia.emit.fragments import (emit_ldfrag_shared, emit_mma_sync, emit_stfrag_global,
                                            emit_stfrag_shared)
from tessera.target.nvidia.ir import ops as nv

# fn -> C template per compute kind: f (float, also bf16/f16), d (double), i (integers)
MAP_TEMPLATES: dict[str, dict[str, str]] = {
    "add": {"*": "{0} + {1}"}, "sub": {"*": "{0} - {1}"}, "mul": {"*": "{0} * {1}"}, "div": {"*": "{0} / {1}"},
    "max": {"f": "tsr_fmax({0}, {1})", "d": "tsr_dmax({0}, {1})", "i": "max({0}, {1})"},
    "min": {"f": "tsr_fmin({0}, {1})", "d": "tsr_dmin({0}, {1})", "i": "min({0}, {1})"},
    "neg": {"*": "-{0}"}, "abs": {"f": "fabsf({0})", "d": "fabs({0})", "i": "abs({0})"},
    "exp": {"f": "expf({0})", "d": "exp({0})"}, "exp2": {"f": "tsr_exp2f({0})", "d": "exp2({0})"},
    "log": {"f": "logf({0})", "d": "log({0})"}, "sqrt": {"f": "sqrtf({0})", "d": "sqrt({0})"},
    "rsqrt": {"f": "rsqrtf({0})", "d": "rsqrt({0})"}, "tanh": {"f": "tanhf({0})", "d": "tanh({0})"},
    "erf": {"f": "erff({0})", "d": "erf({0})"},
}
CMP_OPERATORS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _kind(t) -> str:
    name = C.name_of(t)
    return "d" if name == "f64" else "f" if C.is_floating(t) else "i"


def _declare(e, value) -> str:
    t = value.type
    name = e.define(value)
    e.line(C.array_decl(t.element_type, name, t.get_shape()[0]))
    return name


def _guarded(e, op, statement: str, extra: str = "") -> None:
    """`statement` for slot i_, skipped past the tile's end (and where `extra` fails)."""
    size = math.prod(op.tile_shape())
    conds = ([f"tid + i_ * {e.threads} < {size}"] if size % e.threads else []) + ([extra] if extra else [])
    e.line(f"if ({' && '.join(conds)}) {statement}" if conds else statement)


def _describe(op) -> str:
    return f"{'x'.join(map(str, op.tile_shape()))} tile, blocked over {op.nthreads()} threads"


# --- slot bodies: one statement (or a few) for slot i_ ------------------------------------

def slot_load_global(e, op: nv.LoadGlobalOp) -> None:
    mr = e.memref(op.source, op)
    name, elem = e[op.result], op.result.type.element_type
    ok, addr = global_access(mr, [e[v] for v in op.offsets], blocked_coords(op.tile_shape(), e.threads))
    size = math.prod(op.tile_shape())
    guard = f"tid + i_ * {e.threads} < {size} && " if size % e.threads else ""
    mem = C.mem_type(elem)
    e.line(C.write_bits(elem, name, "i_", f"({guard}{ok}) ? {mr.ptr}[{addr}] : ({mem}){C.bits_literal(elem, op.pad.value.data)}"))


def _slot_global_write(e, op, statement) -> None:
    """Slot i_ of a guarded global write (store or atomic add): past the edge or under a false mask slot, none."""
    mr = e.memref(op.dest, op)
    elem = op.value.type.element_type
    ok, addr = global_access(mr, [e[x] for x in op.offsets], blocked_coords(op.tile_shape(), e.threads))
    if op.mask is not None:
        ok = f"{e[op.mask]}[i_] && {ok}"
    _guarded(e, op, statement(f"{mr.ptr}[{addr}]", f"({C.mem_type(elem)}){C.read_bits(elem, e[op.value], 'i_')}"),
             ok)


def slot_store_global(e, op: nv.StoreGlobalOp) -> None:
    _slot_global_write(e, op, lambda at, v: f"{at} = {v};")


def slot_atomic_add_global(e, op: nv.AtomicAddGlobalOp) -> None:
    _slot_global_write(e, op, lambda at, v: f"atomicAdd(&{at}, {v});")


def slot_store_shared(e, op: nv.StoreSharedOp) -> None:
    elem = op.value.type.element_type
    at = smem_offset(op.dest.type, blocked_coords(op.tile_shape(), e.threads))
    _guarded(e, op, f"{e[op.dest]}[{at}] = ({C.mem_type(elem)}){C.read_bits(elem, e[op.value], 'i_')};")


def slot_load_shared(e, op: nv.LoadSharedOp) -> None:
    name, elem = e[op.result], op.result.type.element_type
    coords = blocked_coords(op.tile_shape(), e.threads)
    at = " + ".join(f"{c} * {s}" for c, s in zip(coords, nv.ints(op.strides)) if s) or "0"
    _guarded(e, op, C.write_bits(elem, name, "i_", f"{e[op.source]}[{at}]"))


def slot_reduce_shared(e, op: nv.ReduceSharedOp) -> None:
    src: nv.SmemType = op.source.type
    axis, kind = op.axis.value.data, op.kind.data
    length, stride = src.get_shape()[axis], src.strides()[axis]
    name, elem = e[op.result], op.result.type.element_type
    combine = {"sum": MAP_TEMPLATES["add"]["*"], "max": MAP_TEMPLATES["max"][_kind(elem)],
               "min": MAP_TEMPLATES["min"][_kind(elem)]}[kind]
    size = math.prod(op.tile_shape())
    with e.block(f"if (tid + i_ * {e.threads} < {size}) " if size % e.threads else "",
                 f"{kind} of {length} along axis {axis}"):
        e.line(f"const {C.mem_type(elem)}* p_ = {e[op.source]} + {smem_offset(src, blocked_coords(op.tile_shape(), e.threads))};")
        e.line(f"{C.compute_type(elem)} acc_ = {C.to_compute(elem, 'p_[0]')};")
        e.line("#pragma unroll 8")
        with e.block(f"for (int j_ = 1; j_ < {length}; ++j_) "):
            e.line(f"acc_ = {combine.format('acc_', C.to_compute(elem, f'p_[j_ * {stride}]'))};")
        e.line(C.write(elem, name, "i_", "acc_"))


def emit_scan_shared(e, op: nv.ScanSharedOp) -> None:
    """Hillis-Steele in place: for d = 1, 2, 4, ... each thread reads its elements and the ones d back along the
    axis, every thread waits, then writes the sums; the blocked result is read back at the end."""
    src: nv.SmemType = op.source.type
    axis, shape = op.axis.value.data, op.tile_shape()
    length, stride = shape[axis], src.strides()[axis]
    elem, n = op.result.type.element_type, op.result.type.get_shape()[0]
    name, buf, ct = e.define(op.result), e[op.source], C.compute_type(elem)
    coords = blocked_coords(shape, e.threads)
    at = smem_offset(src, coords)
    size = math.prod(shape)
    valid = f"tid + i_ * {e.threads} < {size}" if size % e.threads else "true"
    e.comment(op, f"inclusive prefix sum of {length} along axis {axis}, in shared memory")
    e.line(C.array_decl(elem, name, n))
    with e.block(f"for (int d_ = 1; d_ < {length}; d_ <<= 1) "):
        e.line(f"{ct} part_[{n}];")
        with e.unrolled("i_", n):
            with e.block(f"if ({valid}) "):
                e.line(f"const int at_ = {at};")
                e.line(f"part_[i_] = {C.to_compute(elem, f'{buf}[at_]')};")
                e.line(f"if ({coords[axis]} >= d_) part_[i_] += {C.to_compute(elem, f'{buf}[at_ - d_ * {stride}]')};")
        e.line("__syncthreads();")
        with e.unrolled("i_", n):
            e.line(f"if ({valid}) {buf}[{at}] = ({C.mem_type(elem)})part_[i_];")
        e.line("__syncthreads();")
    with e.unrolled("i_", n):
        e.line(f"if ({valid}) " + C.write(elem, name, "i_", C.to_compute(elem, f"{buf}[{at}]")))


def slot_iota(e, op: nv.IotaOp) -> None:
    e.line(C.write(op.result.type.element_type, e[op.result], "i_",
                   blocked_coords(op.tile_shape(), e.threads)[op.axis.value.data]))


def slot_map(e, op: nv.MapOp) -> None:
    elem = op.result.type.element_type
    table = MAP_TEMPLATES[op.fn.data]
    expr = table.get("*") or table[_kind(elem)]
    e.line(C.write(elem, e[op.result], "i_", expr.format(*(C.read(elem, e[a], "i_") for a in op.args))))


def slot_cmp(e, op: nv.CmpOp) -> None:
    elem = op.lhs.type.element_type
    x, y = C.read(elem, e[op.lhs], "i_"), C.read(elem, e[op.rhs], "i_")
    e.line(f"{e[op.result]}[i_] = {x} {CMP_OPERATORS[op.predicate.data]} {y};")


def slot_select(e, op: nv.SelectOp) -> None:
    elem = op.result.type.element_type
    a, b = C.read_bits(elem, e[op.lhs], "i_"), C.read_bits(elem, e[op.rhs], "i_")
    e.line(C.write_bits(elem, e[op.result], "i_", f"{e[op.cond]}[i_] ? {a} : {b}"))


def slot_convert(e, op: nv.ConvertOp) -> None:
    src, elem = op.source.type.element_type, op.result.type.element_type
    x = C.read(src, e[op.source], "i_")
    value = f"({x} != 0)" if C.name_of(elem) == "i1" else f"({C.compute_type(elem)}){x}"
    e.line(C.write(elem, e[op.result], "i_", value))


def slot_splat(e, op: nv.SplatOp) -> None:
    e.line(C.write(op.result.type.element_type, e[op.result], "i_", e[op.scalar]))


def slot_fill(e, op: nv.FillOp) -> None:
    elem = op.result.type.element_type
    e.line(C.write_bits(elem, e[op.result], "i_", C.bits_literal(elem, op.value.value.data)))


def slot_slots(e, op: nv.SlotsOp) -> None:
    elem = op.result.type.element_type
    a, b = op.scale.value.data, op.offset.value.data
    src = " + ".join(x for x in ((f"{a} * i_" if a != 1 else "i_") if a else "", str(b) if b or not a else "") if x)
    e.line(C.write_bits(elem, e[op.result], "i_", C.read_bits(elem, e[op.source], src)))


def _note(op) -> str:
    extra = {"nv.map": lambda: op.fn.data, "nv.cmp": lambda: op.predicate.data,
             "nv.fill": lambda: f"every slot {op.value.value.data}",
             "nv.load_global": lambda: f"{_describe(op)}; outside reads {op.pad.value.data}",
             "nv.store_global": lambda: f"{_describe(op)}; stores past the edge are dropped",
             "nv.atomic_add_global": lambda: f"{_describe(op)}; atomicAdd, nothing added past the edge",
             "nv.store_shared": lambda: f"{_describe(op)} -> shared",
             "nv.load_shared": lambda: f"{_describe(op)} <- shared, strides {list(nv.ints(op.strides))}",
             "nv.reduce_shared": lambda: f"{op.kind.data} over axis {op.axis.value.data} -> {_describe(op)}",
             "nv.iota": lambda: f"index along axis {op.axis.value.data}",
             "nv.convert": lambda: f"{C.name_of(op.source.type.element_type)} -> "
                                   f"{C.name_of(op.result.type.element_type)}"}.get(op.name)
    return extra() if extra else ""


SLOTWISE = {
    "nv.load_global": slot_load_global, "nv.store_global": slot_store_global, "nv.store_shared": slot_store_shared,
    "nv.atomic_add_global": slot_atomic_add_global,
    "nv.load_shared": slot_load_shared, "nv.reduce_shared": slot_reduce_shared, "nv.iota": slot_iota,
    "nv.map": slot_map, "nv.cmp": slot_cmp, "nv.select": slot_select, "nv.convert": slot_convert,
    "nv.splat": slot_splat, "nv.fill": slot_fill, "nv.slots": slot_slots, **HOPPER_SLOTWISE,
    **emit_wgreg.SLOTWISE,
}


def slots_of(op) -> int:
    """The slot count of a slot-wise op (its register vector's length)."""
    v = op.results[0] if op.results else op.operands[0]
    return v.type.get_shape()[0]


def emit_run(e, ops) -> None:
    """One unrolled loop over the slots for a run of slot-wise ops of one slot count."""
    for op in ops:
        if op.results:
            _declare(e, op.results[0])
    staged = staged_store(ops)
    if staged is not None:
        declare_staging(e, staged)
    interior = interior_condition(e, ops)
    if interior is None:
        _emit_slot_loop(e, ops, staged)
        return
    with e.block(f"if ({interior}) ", "every window inside its memref: unchecked paired accesses"):
        declare_window_bases(e, ops)
        _emit_slot_loop(e, ops, staged)
        e.fast_windows.clear()
    with e.block("else ", "a window crosses an edge (or is unaligned): every access checked"):
        _emit_slot_loop(e, ops, staged)


def _emit_slot_loop(e, ops, staged) -> None:
    """The unrolled slot loop; with a staged (TMA) store, one loop per 64-column box between its barriers."""
    n = slots_of(ops[0])
    per_box = 0 if staged is None else staged.box()[1] // 2  # slots of one box
    chunks = [(0, n)] if staged is None else [(b * per_box, (b + 1) * per_box) for b in range(n // per_box)]
    windowed = staged is not None and staged.part is not None  # only this split's run of boxes is stored
    for b, (lo, hi) in enumerate(chunks):
        with (e.block(f"if ((unsigned)({e[staged.part]}) == {b // staged.run_of_boxes()}u) ",
                      f"box {b}: in this split's columns") if windowed else nullcontext()):
            if staged is not None:
                box_begin(e, staged, b)
            e.line("#pragma unroll")
            with e.block(f"for (int i_ = {lo}; i_ < {hi}; ++i_) ",
                         f"{n} slot(s) per thread (element tid + i_ * {e.threads}), {len(ops)} fused op(s)"):
                for op in ops:
                    e.comment(op, _note(op))
                    SLOTWISE[op.name](e, op)
            if staged is not None:
                box_end(e, staged, b)


# --- CUDA-core mma ------------------------------------------------------------------------

def emit_blocked_mma(e, op: nv.BlockedMmaOp) -> None:
    """k outermost, slots innermost and fully unrolled: the accumulator array sees only constant indices.

    For each k a slot reads A[r, k] (a broadcast when a warp shares the row) and
    B[k, c] (shared by every slot of one column, so ptxas loads it once); one
    fma per slot and k, in k order, from the incoming accumulator. The k loop
    indexes only shared memory, so it is unrolled by 4 (or 2), not fully:
    that is enough for ptxas to read 4 consecutive A values with one LDS.128
    (A's rows are 16-byte aligned), and compiles several times faster than a
    full unroll with the same instruction mix.
    """
    from tessera.target.nvidia.emit.scalar import copy

    sa, sb = op.a.type, op.b.type
    (M, K), N = sa.get_shape(), sb.get_shape()[1]
    elem, n = op.result.type.element_type, op.result.type.get_shape()[0]
    fma = "fmaf" if C.name_of(elem) == "f32" else "fma"
    d = e.define(op.result)
    e.comment(op, f"C {M}x{N} += A {M}x{K} @ B {K}x{N} on CUDA cores: {n} slot(s) per thread, {fma} in k order")
    e.line(C.array_decl(elem, d, n))
    copy(e, op.acc.type, d, e[op.acc])
    r, c = blocked_coords((M, N), e.threads)
    at_a, at_b = f"{r} * {sa.pitch.data} + k_", f"k_ * {sb.pitch.data} + {c}"
    e.line(f"#pragma unroll {next(u for u in (4, 2, 1) if K % u == 0)}")
    with e.block(f"for (int k_ = 0; k_ < {K}; ++k_) ", "k outermost: each fma of a slot follows the previous one"):
        with e.unrolled("i_", n, f"slot i_ is element tid + i_ * {e.threads}"):
            _guarded(e, op, f"{d}[i_] = {fma}({e[op.a]}[{at_a}], {e[op.b]}[{at_b}], {d}[i_]);")


# --- grid, barrier, shared memory ----------------------------------------------------

def emit_grid(e, op) -> None:
    reg = "blockIdx" if isinstance(op, nv.BlockIdOp) else "gridDim"
    e.line(f"const int {e.define(op.result)} = {reg}.{'xyz'[op.axis.value.data]};  // {op.name}")


def emit_barrier(e, op) -> None:
    from tessera.target.nvidia.emit.emitter import location

    e.line(f"__syncthreads();  // {op.name} @ {location(op)}")


def emit_alloc_shared(e, op: nv.AllocSharedOp) -> None:
    t = op.result.type
    mem = C.mem_type(t.element_type)
    e.line(f"{mem}* {e.define(op.result)} = reinterpret_cast<{mem}*>(tsr_smem + {op.offset.value.data});  // "
           f"{'x'.join(map(str, t.get_shape()))} {C.name_of(t.element_type)}, pitch {t.pitch.data}")


C.PRELUDE.update(HOPPER_PRELUDE)
C.PROVIDES.update(HOPPER_PROVIDES)
C.PRELUDE.update(emit_splitk.PRELUDE)
C.PROVIDES.update(emit_splitk.PROVIDES)
C.PRELUDE.update(emit_wgreg.PRELUDE)
C.PROVIDES.update(emit_wgreg.PROVIDES)

NV_EMITTERS = {
    **HOPPER_EMITTERS, **emit_splitk.EMITTERS, **emit_wgreg.EMITTERS, **emit_sched.EMITTERS,
    "nv.block_id": emit_grid, "nv.grid_dim": emit_grid, "nv.barrier": emit_barrier, "nv.scan_shared": emit_scan_shared,
    "nv.alloc_shared": emit_alloc_shared, "nv.cp_async_tile": emit_cp_async_tile,
    "nv.cp_async_wait": emit_cp_async_wait, "nv.ldfrag_shared": emit_ldfrag_shared,
    "nv.stfrag_shared": emit_stfrag_shared, "nv.stfrag_global": emit_stfrag_global, "nv.mma_sync": emit_mma_sync,
    "nv.blocked_mma": emit_blocked_mma,
    **{name: (lambda e, op: emit_run(e, [op])) for name in SLOTWISE},
}
