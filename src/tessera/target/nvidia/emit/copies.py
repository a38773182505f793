"""CUDA C++ for moving tiles between global memory and shared memory or the blocked registers.

A tile covers the trailing dims of its memref; the leading dims are fixed by
the offsets. Every global access is guarded: reads past an edge (or before
it: offsets may be negative) give the padding value, writes there are
dropped (tile.load/store and async_copy semantics).

cp.async tile copies take the 16-byte path when the run-time alignment test
passes (pointer 16-byte aligned, rows a multiple of 16 bytes apart, the
column offset a multiple of 16 bytes, unit inner stride); the src-size
operand zero-fills the part of a chunk past the edge. A non-zero padding
value is written with plain stores for chunks that are not whole. Otherwise
an element-wise path copies synchronously; it still commits a (empty) group
so group ordinals stay in step.
"""

from __future__ import annotations

import math

from tessera.target.nvidia.emit import c_types as C
from tessera.target.nvidia.ir import ops as nv
from tessera.target.nvidia.ir.types import elem_bytes


def tile_coords(shape, flat: str) -> list[str]:
    """C expressions for the multi-index of row-major flat index `flat` in a tile of `shape`."""
    out = []
    for d, n in enumerate(shape):
        inner = math.prod(shape[d + 1:])
        x = f"{flat} / {inner}" if inner > 1 else flat
        out.append(f"({x}) % {n}" if d > 0 else (f"({x})" if inner > 1 else x))
    return out


def blocked_coords(shape, threads: int, tid: str = "tid", slot: str = "i_") -> list[str]:
    """Coordinates of element `tid + slot * threads` of a tile, in forms the compiler folds.

    With tid < threads, a dim whose size divides `threads` (or is a multiple of
    it) splits into a thread part and a slot part, so after unrolling each slot's
    coordinate is a per-thread base plus a constant instead of a division per
    slot (divisions of tid by constants are shared by every op). Other shapes
    fall back to dividing the flat index.
    """
    out: list[str] = []
    t, span, i = tid, threads, slot  # the rest of the flat index is t + i * span, with 0 <= t < span
    for d in range(len(shape) - 1, -1, -1):
        c = shape[d]
        if c == 1 and d > 0:
            out.append("0")
        elif d == 0:
            slot_part = i if span == 1 else f"{i} * {span}"
            out.append(slot_part if t == "0" else f"{t} + {slot_part}")
        elif span == c:
            out.append(t)
            t, span = "0", 1
        elif span % c == 0:
            out.append(f"{t} % {c}" if t != "0" else "0")
            t, span = (f"{t} / {c}" if t != "0" else "0"), span // c
        elif c % span == 0:
            k = c // span
            part = f"({i} % {k}) * {span}" if span != 1 else f"{i} % {k}"
            out.append(part if t == "0" else f"{t} + {part}")
            t, i, span = "0", f"({i} / {k})", 1
        else:  # no split: divide the flat index
            flat = f"{t} + {i} * {span}" if t != "0" else (f"{i} * {span}" if span != 1 else i)
            return tile_coords(shape[:d + 1], f"({flat})") + [f"({x})" for x in reversed(out)]
    return [f"({x})" for x in reversed(out)]


def global_access(mr, offsets: list[str], coords: list[str]) -> tuple[str, str]:
    """(in-bounds condition, element offset) of tile coordinate `coords` at `offsets` of memref `mr`."""
    rank, lead = len(offsets), len(offsets) - len(coords)
    idx = offsets[:lead] + [f"({offsets[lead + j]} + {c})" for j, c in enumerate(coords)]
    ok = " && ".join(f"{i} >= 0 && {i} < {mr.sizes[d]}" for d, i in enumerate(idx))
    addr = " + ".join(f"{i} * {mr.strides[d]}" for d, i in enumerate(idx))
    return ok, addr if rank else "0"


def smem_offset(t: nv.SmemType, coords: list[str]) -> str:
    return " + ".join(f"{c} * {s}" if s != 1 else c for c, s in zip(coords, t.strides()))


def emit_cp_async_tile(e, op: nv.CpAsyncTileOp) -> None:
    dst: nv.SmemType = op.dest.type
    mr = e.memref(op.source, op)
    shape, elem = dst.get_shape(), dst.element_type
    offs = [e[v] for v in op.offsets]
    pad = op.pad.value.data
    esize = nv_bytes(elem)
    vec = 16 // esize
    e.uses_groups = True
    e.comment(op, f"{'x'.join(map(str, shape))} {C.name_of(elem)} tile of {mr.ptr} -> shared (pitch {dst.pitch.data}); "
                  f"past the edge reads {pad}")
    s = e[op.dest]
    with e.block():
        rows_apart = [mr.strides[d] for d in range(len(offs) - 1)]
        aligned = [f"{mr.strides[-1]} == 1", f"{offs[-1]} % {vec} == 0",
                   f"(reinterpret_cast<unsigned long long>({mr.ptr}) & 15) == 0"] + [f"{x} % {vec} == 0"
                                                                                     for x in rows_apart]
        can_vec = shape[-1] % vec == 0 and dst.pitch.data % vec == 0 and esize <= 16
        if can_vec:
            with e.block(f"if ({' && '.join(aligned)}) ", "16-byte cp.async chunks"):
                _vector_path(e, op, mr, offs, s, dst, vec, esize, pad)
            with e.block("else ", "unaligned: element-wise, synchronous"):
                _element_path(e, mr, offs, s, dst, pad)
        else:
            _element_path(e, mr, offs, s, dst, pad)
        e.line("tsr_cp_async_commit();")
    e.line(f"const int {e.define(op.token)} = tsr_groups++;")


def _vector_path(e, op, mr, offs, s, dst, vec, esize, pad) -> None:
    shape = dst.get_shape()
    chunks = math.prod(shape) // vec
    per_thread = -(-chunks // e.threads)
    cshape = (*shape[:-1], shape[-1] // vec)
    with e.unrolled("i_", per_thread, f"{chunks} chunks of {vec} over {e.threads} threads"):
        if chunks % e.threads:
            e.line(f"if (tid + i_ * {e.threads} >= {chunks}) break;")
        coords = blocked_coords(cshape, e.threads)
        coords[-1] = f"{coords[-1]} * {vec}"
        lead = len(offs) - len(shape)
        idx = offs[:lead] + [f"({offs[lead + j]} + {c})" for j, c in enumerate(coords)]
        ok = " && ".join(f"{i} >= 0 && {i} < {mr.sizes[d]}" for d, i in enumerate(idx[:-1]))
        e.line(f"const int gc_ = {idx[-1]};")
        e.line(f"const int left_ = ({ok or 'true'} && gc_ >= 0) ? {mr.sizes[-1]} - gc_ : 0;")
        e.line(f"const int n_ = left_ <= 0 ? 0 : (left_ >= {vec} ? {vec} : left_);  // elements inside")
        addr = " + ".join(f"{i} * {mr.strides[d]}" for d, i in enumerate(idx[:-1])) + " + gc_"
        dst_at = f"{s} + {smem_offset(dst, coords)}"
        src_at = f"{mr.ptr} + (n_ ? {addr} : 0)"
        if pad == 0.0:
            e.line(f"tsr_cp_async16({dst_at}, {src_at}, n_ * {esize});")
        else:
            with e.block(f"if (n_ == {vec}) "):
                e.line(f"tsr_cp_async16({dst_at}, {src_at}, {vec * esize});")
            with e.block("else "):
                with e.unrolled("j_", vec):
                    e.line(f"({dst_at})[j_] = j_ < n_ ? {mr.ptr}[{addr} + j_] : "
                           f"({C.mem_type(dst.element_type)}){C.bits_literal(dst.element_type, pad)};")


def _element_path(e, mr, offs, s, dst, pad) -> None:
    shape = dst.get_shape()
    size = math.prod(shape)
    mem = C.mem_type(dst.element_type)
    e.line("#pragma unroll 1")
    with e.block(f"for (int f_ = tid; f_ < {size}; f_ += {e.threads}) ", f"{size} elements over {e.threads} threads"):
        coords = tile_coords(shape, "f_")
        ok, addr = global_access(mr, offs, coords)
        e.line(f"{s}[{smem_offset(dst, coords)}] = ({ok}) ? {mr.ptr}[{addr}] : "
               f"({mem}){C.bits_literal(dst.element_type, pad)};")


def emit_cp_async_wait(e, op: nv.CpAsyncWaitOp) -> None:
    newest = e[op.tokens[0]]
    for t in op.tokens[1:]:
        newest = f"max({newest}, {e[t]})"
    e.comment(op, "wait for this thread's copies (a barrier follows for the other threads')")
    e.line(f"tsr_cp_async_wait(tsr_groups - 1 - {newest});")


def nv_bytes(elem) -> int:

    return elem_bytes(elem)
