"""CUDA C++ for the warp-level nv ops: fragment loads/stores, mma.sync, and cp.async tile copies.

Fragment index arithmetic is not written here: it is printed from
`tessera.target.nvidia.passes.lane_index.fragment_indexing`, which fits it to the lane-map
tables and checks it against every (lane, slot). A fragment op walks the
warp tile's atoms (ai, aj) and each atom's slots (or 32-bit registers, for
16-bit types) in fully unrolled loops.
"""

from __future__ import annotations

from tessera.target.nvidia.emit import c_types as C
from tessera.ir import diagnostics as D
from tessera.target.nvidia.ir import ops as nv
from tessera.target.nvidia.passes.lane_index import BitLinear, fragment_indexing


def _indexing(op):
    m, n, k = nv.ints(op.mnk)
    try:
        return fragment_indexing(op.family.data, op.role.data, m, n, k, C.name_of(op.dtype))
    except ValueError as err:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, str(err), op=op) from None


def _warp_origin(op) -> tuple[str, str]:
    """(row, col) of this warp's fragment inside the tile, as C expressions."""
    wm, wn = nv.ints(op.warps)
    step_r, step_c = op.origin()
    row = f"(warp / {wn}) * {step_r}" if step_r and wm > 1 else "0"
    col = f"(warp % {wn}) * {step_c}" if step_c and wn > 1 else "0"
    return row, col


def _lane(ix) -> tuple[str, str]:
    """The lane's own (row, col) offset inside every atom, as C expressions of `lane`."""
    return ix.row_lane.c_expr("lane"), ix.col_lane.c_expr("lane")


def _walk(e, op, ix, body) -> None:
    """Unrolled loops over atoms and registers; body(reg_index, row, col, step) emits one register's access.

    row/col leave out the lane's own offset (`_lane`, folded into the caller's
    base pointer), so after unrolling they are constants: immediate offsets.
    For 16-bit fragments a register is a pair of slots (2r, 2r+1); `step` is the
    (drow, dcol) from the low to the high element. For f32 a register is one slot.
    """
    gi, gj = ix.atom_grid
    regs = ix.atom_slots // ix.pack
    shift = 1 if ix.pack == 2 else 0
    row_s = BitLinear(ix.row_slot.coeffs[shift:]).c_expr("r_")
    col_s = BitLinear(ix.col_slot.coeffs[shift:]).c_expr("r_")
    R, Cc = ix.atom_shape
    with e.unrolled("ai_", gi, f"{gi}x{gj} atoms of {R}x{Cc}"):
        with e.unrolled("aj_", gj):
            with e.unrolled("r_", regs, "32-bit registers of one atom" if ix.pack == 2 else "slots of one atom"):
                e.line(f"const int row_ = {R} * ai_ + {row_s};")
                e.line(f"const int col_ = {Cc} * aj_ + {col_s};")
                reg = f"(ai_ * {gj} + aj_) * {regs} + r_"
                body(reg, "row_", "col_", ix.pair_step() if ix.pack == 2 else None)


def emit_ldfrag_shared(e, op: nv.LdFragSharedOp) -> None:
    ix = _indexing(op)
    t, src = op.result.type, op.source.type
    name = e.define(op.result)
    pitch, mem = src.pitch.data, C.mem_type(src.element_type)
    wr, wc = _warp_origin(op)
    e.comment(op, f"{op.role.data} fragment {'x'.join(map(str, nv.ints(op.mnk)))}, warps {list(nv.ints(op.warps))}")
    e.line(C.array_decl(t.element_type, name, t.get_shape()[0]))
    r0, c0 = (e[v] for v in op.offsets)
    with e.block():
        lr, lc = _lane(ix)
        e.line(f"const {mem}* s_ = {e[op.source]} + ({r0} + {wr} + {lr}) * {pitch} + ({c0} + {wc} + {lc});  "
               "// this lane in this warp's tile")

        def load(reg, row, col, step):
            if step is None:
                e.line(f"{name}[{reg}] = s_[{row} * {pitch} + {col}];")
            elif step == (0, 1):  # both halves adjacent in one row: one 32-bit load
                e.line(f"{name}[{reg}] = *reinterpret_cast<const tsr_u32*>(&s_[{row} * {pitch} + {col}]);")
            else:
                hi = f"s_[({row} + {step[0]}) * {pitch} + {col} + {step[1]}]"
                e.line(f"{name}[{reg}] = (tsr_u32)s_[{row} * {pitch} + {col}] | ((tsr_u32){hi} << 16);")

        _walk(e, op, ix, load)


def emit_stfrag_shared(e, op: nv.StFragSharedOp) -> None:
    ix = _indexing(op)
    dst = op.dest.type
    pitch, mem, v = dst.pitch.data, C.mem_type(dst.element_type), e[op.value]
    wr, wc = _warp_origin(op)
    e.comment(op, f"{op.role.data} fragment {'x'.join(map(str, nv.ints(op.mnk)))} -> shared, warps "
                  f"{list(nv.ints(op.warps))}")
    r0, c0 = (e[x] for x in op.offsets)
    with e.block():
        lr, lc = _lane(ix)
        e.line(f"{mem}* s_ = {e[op.dest]} + ({r0} + {wr} + {lr}) * {pitch} + ({c0} + {wc} + {lc});  "
               "// this lane in this warp's tile")

        def store(reg, row, col, step):
            if step is None:
                e.line(f"s_[{row} * {pitch} + {col}] = {v}[{reg}];")
            else:
                e.line(f"s_[{row} * {pitch} + {col}] = (tsr_u16)({v}[{reg}] & 0xffffu);")
                e.line(f"s_[({row} + {step[0]}) * {pitch} + {col} + {step[1]}] = (tsr_u16)({v}[{reg}] >> 16);")

        _walk(e, op, ix, store)


def emit_stfrag_global(e, op: nv.StFragGlobalOp) -> None:
    ix = _indexing(op)
    mr = e.memref(op.dest, op)
    v = e[op.value]
    wr, wc = _warp_origin(op)
    offs = [e[x] for x in op.offsets]
    rank = len(offs)
    e.comment(op, f"acc fragment {'x'.join(map(str, nv.ints(op.mnk)))} -> {mr.ptr}, warps {list(nv.ints(op.warps))}; "
                  "stores past the edge are dropped")
    with e.block():
        lead = [f"{offs[d]} * {mr.strides[d]}" for d in range(rank - 2)]
        lead_ok = [f"{offs[d]} >= 0 && {offs[d]} < {mr.sizes[d]}" for d in range(rank - 2)]
        lr, lc = _lane(ix)
        e.line(f"const int r0_ = {offs[-2]} + {wr} + {lr};  // this lane's origin")
        e.line(f"const int c0_ = {offs[-1]} + {wc} + {lc};")
        base = " + ".join(lead) or "0"

        def store(reg, row, col, step):
            e.line(f"const int gr_ = r0_ + {row}, gc_ = c0_ + {col};")
            ok = " && ".join(lead_ok + [f"gr_ >= 0 && gr_ < {mr.sizes[-2]} && gc_ >= 0 && gc_ < {mr.sizes[-1]}"])
            e.line(f"if ({ok}) {mr.ptr}[{base} + gr_ * {mr.strides[-2]} + gc_ * {mr.strides[-1]}] = {v}[{reg}];")

        _walk(e, op, ix, store)


_MMA_TYPE = {"bf16": "bf16", "f16": "f16"}


def emit_mma_sync(e, op: nv.MmaSyncOp) -> None:
    m, n, k = nv.ints(op.mnk)
    dt = C.name_of(op.dtype)
    ia, ib, ic = (fragment_indexing("mma_sync", r, m, n, k, dt) for r in ("a", "b", "acc"))
    regs = (ia.atom_slots // 2, ib.atom_slots // 2, ic.atom_slots)
    if regs != (4, 2, 4) or dt not in _MMA_TYPE:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"nv.mma_sync {m}x{n}x{k} {dt}: m16n8k16 takes 4+2+4 registers, "
                                                 f"the lane maps give {regs}", op=op)
    mt, nt = ic.atom_grid
    kt = ia.atom_grid[1]
    d, a, b = e.define(op.result), e[op.a], e[op.b]
    e.comment(op, f"{m}x{n}x{k} warp tile = {mt}x{nt}x{kt} m16n8k16 atoms, {dt} in, f32 accumulate")
    e.line(f"float {d}[{op.result.type.get_shape()[0]}];")
    from tessera.target.nvidia.emit.scalar import copy

    copy(e, op.acc.type, d, e[op.acc])
    with e.unrolled("ki_", kt, "k outermost: a k-slice of the fragments dies after its atoms"):
        with e.unrolled("mi_", mt):
            with e.unrolled("ni_", nt):
                e.line(f"const int c_ = (mi_ * {nt} + ni_) * 4;  // acc atom (mi_, ni_)")
                e.line(f"const int a_ = (mi_ * {kt} + ki_) * 4;  // a atom (mi_, ki_)")
                e.line(f"const int b_ = (ki_ * {nt} + ni_) * 2;  // b atom (ki_, ni_)")
                e.line(f"tsr_mma_m16n8k16_{dt}({d}[c_ + 0], {d}[c_ + 1], {d}[c_ + 2], {d}[c_ + 3],")
                e.line(f"    {a}[a_ + 0], {a}[a_ + 1], {a}[a_ + 2], {a}[a_ + 3], {b}[b_ + 0], {b}[b_ + 1]);")
