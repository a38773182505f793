"""CUDA for the wgmma accumulator's epilogue windows: loads and stores of 64 x n tiles in wgmma's D layout.

A consumer warpgroup's accumulator slot i of thread t is element
(16 w + l/4 + 8 ((i/2) % 2), 8 (i/4) + 2 (l % 4) + i % 2) of its 64 x n tile
(tessera.target.nvidia.ir.hopper_ops). Three ways out, all slot-wise (fused into the
epilogue's one loop over slots, so one slot is live at a time):

* `nv.wgacc_load` / `nv.wgacc_store` with bounds checks per element, and an
  unchecked twin for interior tiles (`interior_condition`): per-thread base
  pointers plus constant offsets, one 4- or 8-byte access per column pair (a
  store into a column-major view: per row pair, after one xor shuffle);
* `nv.wgacc_store_tma`: the run's slot loop is cut into one loop per 128-byte
  box; each box is staged in swizzled shared memory between a warpgroup
  barrier and a proxy fence, and one thread stores it with TMA (`box_begin`,
  `slot_wgacc_store_tma`, `box_end`).
"""

from __future__ import annotations

from tessera.target.nvidia.emit import c_types as C
from tessera.ir import diagnostics as D
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir.types import elem_bytes


def _acc_coords(e, op, i: str, broadcast: bool = False) -> tuple[str, str]:
    """(row, col) of slot `i` of this thread in the 64 x n accumulator tile at (row, col): wgmma's D layout."""
    row = e[op.row] if broadcast else f"{e[op.row]} + 16 * ((tid & 127) >> 5) + ((tid & 31) >> 2) + 8 * (({i}) >> 1 & 1)"
    return row, f"{e[op.col]} + 2 * (tid & 3) + 8 * (({i}) >> 2) + (({i}) & 1)"


WINDOWS = ("nv.wgacc_load", "nv.wgacc_store", "nv.wgacc_atomic_add")  # bounds-checked (a TMA store clips by itself)


class _Window:
    """The 2-D plane a window lies in: base pointer (outer offsets applied), sizes and strides of the last two dims."""

    def __init__(self, e, op):
        mr = e.memref(op.source if op.name == "nv.wgacc_load" else op.dest, op)
        outer = tuple(getattr(op, "outer", ()))
        self.ptr = mr.ptr if not outer else (
            f"({mr.ptr} + " + " + ".join(f"(long long)({e[v]}) * {mr.strides[d]}" for d, v in enumerate(outer)) + ")")
        self.sizes, self.strides = mr.sizes[len(outer):], mr.strides[len(outer):]
        if len(self.sizes) == 1:  # a 1-D row vector (a broadcast load): one row of stride 0
            self.sizes, self.strides = ("1", *self.sizes), ("0", *self.strides)


def _window_memref(e, op):
    return _Window(e, op)


def _window_elem(op):
    return (op.result if op.name == "nv.wgacc_load" else op.value).type.element_type


def _broadcast(op) -> bool:
    """A [1, n] row load that every row of the window reads (a bias): its rows are one memref row."""
    return op.name == "nv.wgacc_load" and bool(op.broadcast_rows.value.data)


def interior_condition(e, ops) -> str | None:
    """C condition under which every accumulator window of a run lies inside its memref, pair-aligned.

    Under it the run's loads and stores need no per-element bounds checks and
    each column pair is one 4- or 8-byte access from a per-thread base pointer;
    a persistent GEMM's tiles are nearly all interior, so the epilogue runs
    this path and the edge tiles take the checked one. None when the run has no
    window, or one whose element size has no paired access.
    """
    windows = [op for op in ops if op.name in WINDOWS]
    if not windows or any(elem_bytes(_window_elem(op)) not in (2, 4) for op in windows):
        return None
    conds = []
    for op in windows:
        mr, n = _window_memref(e, op), op.n.value.data
        row, col = e[op.row], e[op.col]
        rows = f"{row} < {mr.sizes[0]}" if _broadcast(op) else f"{row} + 64 <= {mr.sizes[0]}"
        aligned = f"(reinterpret_cast<unsigned long long>({mr.ptr}) & {2 * elem_bytes(_window_elem(op)) - 1}) == 0"
        pairs = f"({col} & 1) == 0 && {mr.strides[1]} == 1 && ({mr.strides[0]} & 1) == 0"
        if _column_store(op):
            pairs = f"(({pairs}) || {_column_major(e, op)})"
        conds.append(f"{row} >= 0 && {rows} && {col} + {n} <= {mr.sizes[1]} && {pairs} && {aligned}")
    return " && ".join(dict.fromkeys(f"({c})" for c in conds))


def _column_store(op) -> bool:
    """A store that may take the column-major interior path (unmasked: the pair exchange writes whole pairs)."""
    return op.name == "nv.wgacc_store" and op.mask is None


def _column_major(e, op) -> str:
    """C condition: the window's memref is column-major (stride 1 down a column; a swapped GEMM's C^T view) with
    even rows and column stride, so rows r, r + 1 of one column are one 4- or 8-byte word."""
    mr = _window_memref(e, op)
    return f"({mr.strides[1]} != 1 && {mr.strides[0]} == 1 && ({mr.strides[1]} & 1) == 0 && ({e[op.row]} & 1) == 0)"


def declare_window_bases(e, ops) -> None:
    """Per-thread base pointers of the run's windows (inside `interior_condition`): slot i adds constants."""
    for op in ops:
        if op.name not in WINDOWS:
            continue
        mr, elem = _window_memref(e, op), _window_elem(op)
        bcast = _broadcast(op)
        row = e[op.row] if bcast else f"{e[op.row]} + 16 * ((tid & 127) >> 5) + ((tid & 31) >> 2)"
        base, step = e.fresh("wbase"), e.fresh("wrow8")
        const = "const " if op.name == "nv.wgacc_load" else ""
        cm = None
        if _column_store(op):  # condition and address in place, not hoisted here: no register held for them
            cm = (_column_major(e, op), f"({mr.ptr} + (long long)({e[op.row]} + 16 * ((tid & 127) >> 5) + "
                                        f"((tid & 31) >> 2 & ~1)) + (long long)({e[op.col]} + 2 * (tid & 3) + "
                                        f"((tid >> 2) & 1)) * {mr.strides[1]})")
        e.line(f"{const}{C.mem_type(elem)}* const {base} = {mr.ptr} + (long long)({row}) * {mr.strides[0]} + "
               f"{e[op.col]} + 2 * (tid & 3);")
        e.line(f"const long long {step} = {'0' if bcast else f'8 * {mr.strides[0]}'};")
        wide = None
        if _wide_store(op):
            wide = e.fresh("wide")
            e.line(f"const bool {wide} = ({e[op.col]} & 7) == 0 && ({mr.strides[0]} & 7) == 0 && "
                   f"(reinterpret_cast<unsigned long long>({mr.ptr}) & 15) == 0"
                   + (f" && !{cm[0]}" if cm else "") + ";  // 16-byte stores line up")
        e.fast_windows[op] = (base, step, wide, cm)


def _wide_store(op) -> bool:
    """A 16-bit store of whole 32-column groups: the quad can trade words so that each lane stores 16 bytes
    (not under a mask: it would write the masked elements)."""
    return (op.name == "nv.wgacc_store" and op.mask is None and C.is_half(op.value.type.element_type)
            and op.n.value.data % 32 == 0)


def _quad_transpose_store(e, op, v: str, wide: str) -> None:
    """At the slot that completes 4 column groups of one row half (i_ % 16 == 13 or 15, a constant in the unrolled
    loop): the quad's 4 x 4 words of those groups are transposed with two xor shuffles (lanes 2 apart, then 1),
    after which lane q holds the 8 columns of group 4s + q: one 16-byte store instead of four 4-byte ones, whole
    32-byte sectors (a warp store touched 8 rows of 16 bytes before)."""
    base, step = e.fast_windows[op][:2]
    with e.block(f"if ({wide} && ((i_ & 15) == 13 || (i_ & 15) == 15)) "):
        e.line("const int s_ = i_ >> 4, h_ = (i_ >> 1) & 1;")
        e.line(f"tsr_u32 w0_ = {v}[8 * s_ + h_], w1_ = {v}[8 * s_ + 2 + h_], w2_ = {v}[8 * s_ + 4 + h_], "
               f"w3_ = {v}[8 * s_ + 6 + h_];")
        e.line("const bool b1_ = tid & 2, b0_ = tid & 1;")
        e.line("tsr_u32 r0_ = tsr_shfl_xor_u32(b1_ ? w0_ : w2_, 2), r1_ = tsr_shfl_xor_u32(b1_ ? w1_ : w3_, 2);")
        e.line("if (b1_) { w0_ = r0_; w1_ = r1_; } else { w2_ = r0_; w3_ = r1_; }")
        e.line("r0_ = tsr_shfl_xor_u32(b0_ ? w0_ : w1_, 1); r1_ = tsr_shfl_xor_u32(b0_ ? w2_ : w3_, 1);")
        e.line("if (b0_) { w0_ = r0_; w2_ = r1_; } else { w1_ = r0_; w3_ = r1_; }")
        # one st.global.v4 (`wide` checked the alignment; NVVM split a plain uint4 store into four at some offsets)
        e.line(f"tsr_st_global_v4({base} + (h_ ? {step} : 0) + 32 * s_ + 6 * (tid & 3), w0_, w1_, w2_, w3_);")


def _fast_at(e, op, i: str) -> str:
    """The address of slot pair (i, i+1) (i even) on the interior path: base + constant offsets."""
    base, step = e.fast_windows[op][:2]
    return f"({base} + ((({i}) >> 1 & 1) ? {step} : 0) + 8 * (({i}) >> 2))"


def _bits32(elem, x: str) -> str:
    """The 32 bits of a 4-byte element (f32 or i32) as a tsr_u32."""
    return f"__float_as_uint({x})" if C.name_of(elem) == "f32" else f"(tsr_u32)({x})"


def _pair_store(elem, at: str, lo: str, hi: str) -> str:
    """One 8-byte store of two 4-byte elements at `at`: f32 as a float2; others by their bits (make_float2 would
    convert an i32's value to float, and the store would write a float's bits into an int)."""
    if C.name_of(elem) == "f32":
        return f"*reinterpret_cast<float2*>({at}) = make_float2({lo}, {hi});"
    return _word_pair(at, _bits32(elem, lo), _bits32(elem, hi))


def _word_pair(at: str, lo: str, hi: str) -> str:
    """One 8-byte store of two 32-bit words (`lo` at `at`, `hi` after it)."""
    return (f"*reinterpret_cast<unsigned long long*>({at}) = "
            f"(unsigned long long)({lo}) | ((unsigned long long)({hi}) << 32);")


def slot_wgacc_load(e, op: H.WgaccLoadOp) -> None:
    """Slot i_ of a 64 x n window (fused with the epilogue's other slot-wise ops: one slot live at a time)."""
    elem = op.result.type.element_type
    if op in e.fast_windows:
        e.line(C.write_bits(elem, e[op.result], "i_", f"{_fast_at(e, op, 'i_ & ~1')}[i_ & 1]"))
        return
    mr = _window_memref(e, op)
    bcast = _broadcast(op)
    row, col = _acc_coords(e, op, "i_", bcast)
    pad = f"({C.mem_type(elem)}){C.bits_literal(elem, op.pad.value.data)}"
    with e.block("if (((i_ >> 1) & 1) == 0) " if bcast else ""):
        e.line(f"const int gr_ = {row}, gc_ = {col};")
        ok = f"gr_ >= 0 && gr_ < {mr.sizes[0]} && gc_ < {mr.sizes[1]}"
        e.line(C.write_bits(elem, e[op.result], "i_",
                            f"({ok}) ? {mr.ptr}[gr_ * {mr.strides[0]} + gc_ * {mr.strides[1]}] : {pad}"))
    if bcast:  # slots i and i - 2 are rows r and r + 8 of one column: a broadcast row reads it once
        e.line("else " + C.write_bits(elem, e[op.result], "i_", C.read_bits(elem, e[op.result], "i_ - 2")))


def slot_wgacc_store(e, op: H.WgaccStoreOp) -> None:
    """At odd slots, slots (i_-1, i_): columns c, c+1 of one row, one 4- or 8-byte store when aligned."""
    elem = op.value.type.element_type
    v, mem = e[op.value], C.mem_type(elem)
    lo, hi = C.read_bits(elem, v, "i_ - 1"), C.read_bits(elem, v, "i_")
    if op in e.fast_windows:
        at = _fast_at(e, op, "i_ - 1")
        wide, cm = e.fast_windows[op][2:]
        if cm is not None:
            _column_pair_store(e, op, cm)
            e.line("else")
        if op.mask is not None:  # the pair when both are kept, else each kept element alone
            m = e[op.mask]
            pair = (f"*reinterpret_cast<tsr_u32*>({at}) = {v}[i_ >> 1];" if C.is_half(elem)
                    else _pair_store(elem, at, lo, hi))
            e.line(f"if (i_ & 1) {{ if ({m}[i_ - 1] && {m}[i_]) {pair} else {{ if ({m}[i_ - 1]) ({at})[0] = "
                   f"({mem}){lo}; if ({m}[i_]) ({at})[1] = ({mem}){hi}; }} }}")
        elif wide is not None:
            _quad_transpose_store(e, op, v, wide)
            e.line(f"else if (!{wide} && (i_ & 1)) *reinterpret_cast<tsr_u32*>({at}) = {v}[i_ >> 1];")
        elif C.is_half(elem):
            e.line(f"if (i_ & 1) *reinterpret_cast<tsr_u32*>({at}) = {v}[i_ >> 1];")
        else:
            e.line(f"if (i_ & 1) {_pair_store(elem, at, lo, hi)}")
        return
    mr = _window_memref(e, op)
    row, col = _acc_coords(e, op, "i_ - 1")
    keep0, keep1 = ("true", "true") if op.mask is None else (f"{e[op.mask]}[i_ - 1]", f"{e[op.mask]}[i_]")
    with e.block("if (i_ & 1) "):
        e.line(f"const int gr_ = {row}, gc_ = {col};")
        at = f"{mr.ptr}[gr_ * {mr.strides[0]} + gc_ * {mr.strides[1]}]"
        at1 = f"{mr.ptr}[gr_ * {mr.strides[0]} + (gc_ + 1) * {mr.strides[1]}]"
        pair = (f"{keep0} && {keep1} && {mr.strides[1]} == 1 && ({mr.strides[0]} & 1) == 0 && gc_ + 1 < {mr.sizes[1]} "
                f"&& (reinterpret_cast<unsigned long long>({mr.ptr}) & {2 * elem_bytes(elem) - 1}) == 0")
        e.line(f"if (gr_ < {mr.sizes[0]}) {{")
        if C.is_half(elem):
            e.line(f"  if ({pair}) *reinterpret_cast<tsr_u32*>(&{at}) = {v}[i_ >> 1];")
        elif elem_bytes(elem) == 4:
            e.line(f"  if ({pair}) {_pair_store(elem, f'&{at}', lo, hi)}")
        else:
            e.line("  if (false) {}")
        e.line(f"  else {{ if ({keep0} && gc_ < {mr.sizes[1]}) {at} = ({mem}){lo}; "
               f"if ({keep1} && gc_ + 1 < {mr.sizes[1]}) {at1} = ({mem}){hi}; }}")
        e.line("}")


def _column_pair_store(e, op, cm) -> None:
    """The column-major interior path at odd slots: lanes 4 apart (rows r, r + 1 of the same columns c, c + 1) trade
    one element with one xor shuffle, after which the even-row lane holds column c's rows r, r + 1 and the odd-row
    lane column c + 1's: one 4- or 8-byte store each, no bounds checks (a swapped GEMM writes C^T this way)."""
    elem = op.value.type.element_type
    v = e[op.value]
    col_step = f"8 * (i_ >> 2) * {_window_memref(e, op).strides[1]}"
    at = f"({cm[1]} + ((i_ >> 1 & 1) ? 8 : 0) + {col_step})"
    with e.block(f"if ({cm[0]}) "):
        with e.block("if (i_ & 1) "):
            e.line("const bool odd_ = tid & 4;")
            if C.is_half(elem):
                e.line(f"const tsr_u32 mine_ = {v}[i_ >> 1];")
                e.line("const tsr_u32 got_ = tsr_shfl_xor_u32(odd_ ? (mine_ & 0xffffu) : (mine_ >> 16), 4);")
                e.line(f"*reinterpret_cast<tsr_u32*>({at}) = odd_ ? (got_ | (mine_ & 0xffff0000u)) : "
                       "((mine_ & 0xffffu) | (got_ << 16));")
            else:  # by bits: an i32 moves unchanged
                lo, hi = (_bits32(elem, C.read_bits(elem, v, i)) for i in ("i_ - 1", "i_"))
                e.line(f"const tsr_u32 lo_ = {lo}, hi_ = {hi};")
                e.line("const tsr_u32 got_ = tsr_shfl_xor_u32(odd_ ? lo_ : hi_, 4);")
                e.line(f"if (odd_) {_word_pair(at, 'got_', 'hi_')}")
                e.line(f"else {_word_pair(at, 'lo_', 'got_')}")


def slot_wgacc_atomic_add(e, op: H.WgaccAtomicAddOp) -> None:
    """At odd slots, slots (i_-1, i_): columns c, c+1 of one row, each atomicAdd-ed where kept and inside."""
    elem = op.value.type.element_type
    v, mem = e[op.value], C.mem_type(elem)
    lo, hi = C.read_bits(elem, v, "i_ - 1"), C.read_bits(elem, v, "i_")
    keep0, keep1 = ("true", "true") if op.mask is None else (f"{e[op.mask]}[i_ - 1]", f"{e[op.mask]}[i_]")
    if op in e.fast_windows:
        at = _fast_at(e, op, "i_ - 1")
        e.line(f"if (i_ & 1) {{ if ({keep0}) atomicAdd(&({at})[0], ({mem}){lo}); "
               f"if ({keep1}) atomicAdd(&({at})[1], ({mem}){hi}); }}")
        return
    mr = _window_memref(e, op)
    row, col = _acc_coords(e, op, "i_ - 1")
    with e.block("if (i_ & 1) "):
        e.line(f"const int gr_ = {row}, gc_ = {col};")
        at = f"{mr.ptr}[gr_ * {mr.strides[0]} + gc_ * {mr.strides[1]}]"
        at1 = f"{mr.ptr}[gr_ * {mr.strides[0]} + (gc_ + 1) * {mr.strides[1]}]"
        e.line(f"if (gr_ < {mr.sizes[0]}) {{ if ({keep0} && gc_ < {mr.sizes[1]}) atomicAdd(&{at}, ({mem}){lo}); "
               f"if ({keep1} && gc_ + 1 < {mr.sizes[1]}) atomicAdd(&{at1}, ({mem}){hi}); }}")


def staged_store(ops):
    """The run's nv.wgacc_store_tma (its slot loop then runs box by box), or None."""
    return next((op for op in ops if op.name == "nv.wgacc_store_tma"), None)


def declare_staging(e, op: H.WgaccStoreTmaOp) -> None:
    """Names the staged store's box loop uses: this warpgroup's buffers, its named barrier, the thread's row/byte."""
    st, bar, sr, sb = (e.fresh(h) for h in ("stage", "wgbar", "srow", "sbyte"))
    e.staging[op] = (st, bar, sr, sb)
    e.line(f"const unsigned {st} = tsr_sbase + {op.stage.value.data}u + "
           f"{H.WgaccStoreTmaOp.STAGE_BYTES}u * (unsigned){e[op.consumer]};  // two 64 x 64 boxes")
    e.line(f"const unsigned {bar} = 1u + (unsigned){e[op.consumer]};  // this consumer warpgroup's named barrier")
    e.line(f"const int {sr} = 16 * ((tid & 127) >> 5) + ((tid & 31) >> 2), {sb} = 4 * (tid & 3);")


def box_begin(e, op: H.WgaccStoreTmaOp, b: int) -> None:
    """Before box b's slots: its buffer's previous store has read it (when the tile's box count is odd, box 0's
    buffer was the previous tile's last box, the most recent store; with a window, every earlier store), then the
    warpgroup may write it."""
    st, bar, _, _ = e.staging[op]
    # a window's run of boxes may follow another run's box in either buffer: every earlier store must have read
    pending = 0 if op.part is not None or (b == 0 and (op.n.value.data // op.box()[1]) % 2) else 1
    e.line(f"if ((tid & 127) == 0) tsr_bulk_wait_read({pending});  // box {b}: buffer {b % 2} is free")
    e.line(f"tsr_named_bar({bar}, 128u);")


def box_end(e, op: H.WgaccStoreTmaOp, b: int) -> None:
    """After box b's slots: fence the generic-proxy writes into the async proxy, then one thread stores the box."""
    st, bar, _, _ = e.staging[op]
    tmap = e.tmaps.get(op.dest)
    if tmap is None:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, "nv.wgacc_store_tma writes a memref that is not a kernel argument",
                             op=op)
    e.line("tsr_fence_proxy_async();  // the staged box, visible to the TMA unit")
    e.line(f"tsr_named_bar({bar}, 128u);")
    e.line(f"if ((tid & 127) == 0) {{ tsr_tma_store_2d(&{tmap}, {e[op.col]} + {op.box()[1] * b}, {e[op.row]}, "
           f"{st} + {(b % 2) * 8192}u); tsr_bulk_commit(); }}")


def slot_wgacc_store_tma(e, op: H.WgaccStoreTmaOp) -> None:
    """At odd slots, the pair (i_-1, i_) (columns c, c+1 of row r) into its box's buffer, at byte b = c * size
    of the row: 16-byte chunk (b / 16) ^ (r % 8) (the 128-byte swizzle), byte b % 16 in it.

    16-bit: a box is 64 columns (32 slots), a pair one 4-byte word, and a warp's 32 stores hit 8 rows in 8
    different chunks (no bank conflicts). f32: 32 columns (16 slots), a pair 8 bytes.
    """
    st, _, sr, sb = e.staging[op]
    row = f"({sr} + 8 * ((i_ >> 1) & 1))"
    if op.swizzle() == 64 and op.box()[1] == 32:  # 16-bit, 32-column boxes of 64-byte rows (16 slots):
        # 16-byte chunk ((i >> 2) & 3) ^ ((r >> 1) & 3), the 64-byte swizzle
        e.line(f"if (i_ & 1) tsr_st_shared_u32({st} + (((i_ >> 4) & 1) ? 8192u : 0u) + {row} * 64 "
               f"+ ((((i_ >> 2) & 3) ^ (({row} >> 1) & 3)) << 4) + {sb}, {e[op.value]}[i_ >> 1]);")
        return
    if op.swizzle() != 128:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"nv.wgacc_store_tma of n={op.n.value.data} "
                             f"{op.dest.type.element_type}: 64-byte boxes are emitted for 16-bit outputs only", op=op)
    if op.box()[1] == 64:
        e.line(f"if (i_ & 1) tsr_st_shared_u32({st} + (((i_ >> 5) & 1) ? 8192u : 0u) + {row} * 128 "
               f"+ ((((i_ >> 2) & 7) ^ ({row} & 7)) << 4) + {sb}, {e[op.value]}[i_ >> 1]);")
        return
    v = e[op.value]  # f32: byte 8 * (4 * ((i >> 2) & 3) + q) of the row; sb is 4q
    e.line(f"if (i_ & 1) tsr_st_shared_f32x2({st} + (((i_ >> 4) & 1) ? 8192u : 0u) + {row} * 128 "
           f"+ (((2 * ((i_ >> 2) & 3) + ({sb} >> 3)) ^ ({row} & 7)) << 4) + (({sb} & 4) << 1), {v}[i_ - 1], {v}[i_]);")


SLOTWISE = {"nv.wgacc_load": slot_wgacc_load, "nv.wgacc_store": slot_wgacc_store,
            "nv.wgacc_atomic_add": slot_wgacc_atomic_add,
            "nv.wgacc_store_tma": slot_wgacc_store_tma}
