"""How IR types look in the emitted CUDA C++: storage, memory and compute types, literals, the prelude.

Index values are 32-bit `int` (tile coordinates and sizes fit; dims must be
below 2**31); element offsets into memory are computed in 64 bits through
the `long long` strides. Helpers written in inline PTX sit between `#ifndef TESSERA_HOST_EMULATION`
lines: `tessera.runtime.host_emulator` compiles the same text on the CPU with
its own definitions of them. A per-thread `vector<N x T>` is a C array whose index is always a
compile-time constant after unrolling, so it lives in registers. 16-bit
floats are stored two to a 32-bit word (`tsr_u32 v[(N+1)/2]`, element 2i in
the low half: the mma.sync register format, see `tessera.layouts.to_b32`)
and computed on as f32, rounding to nearest even on every write. Memory
holds 16-bit floats as raw `tsr_u16` bits. No header is included: NVRTC
needs none, and bf16/f16 conversions are a few lines of bit arithmetic or
one `cvt` instruction.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
from xdsl.ir import Attribute

from tessera.ir import diagnostics as D
from tessera.ir.types import type_name

HALF = ("bf16", "f16")
_MEM = {"bf16": "tsr_u16", "f16": "tsr_u16", "f32": "float", "f64": "double", "i1": "bool", "i8": "signed char",
        "i16": "short", "i32": "int", "i64": "long long", "index": "long long"}
_COMPUTE = {"bf16": "float", "f16": "float", "f32": "float", "f64": "double", "i1": "bool", "i8": "int",
            "i16": "int", "i32": "int", "i64": "long long", "index": "int"}
_NP = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32, "f64": np.float64}


def name_of(t: Attribute) -> str:
    name = type_name(t)
    if name not in _MEM:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"element type {name} has no CUDA C++ form (supported: "
                                                 f"{', '.join(_MEM)})")
    return name


def mem_type(t: Attribute) -> str:
    """C type of one element in global or shared memory."""
    return _MEM[name_of(t)]


def compute_type(t: Attribute) -> str:
    """C type a scalar of this element type is computed in."""
    return _COMPUTE[name_of(t)]


def is_half(t: Attribute) -> bool:
    return name_of(t) in HALF


def is_floating(t: Attribute) -> bool:
    return name_of(t) in ("bf16", "f16", "f32", "f64")


def array_decl(t: Attribute, name: str, n: int) -> str:
    """Declaration of a per-thread register array of n elements (16-bit floats packed in pairs)."""
    if is_half(t):
        return f"tsr_u32 {name}[{(n + 1) // 2}] = {{}};"
    return f"{_MEM[name_of(t)] if name_of(t) != 'i1' else 'bool'} {name}[{n}];"


def read(t: Attribute, arr: str, i: str) -> str:
    """Element i of a register array, as a compute-type value."""
    return to_compute(t, read_bits(t, arr, i))


def read_bits(t: Attribute, arr: str, i: str) -> str:
    """Element i of a register array in its memory form (raw 16 bits for bf16/f16)."""
    if is_half(t):
        return f"tsr_half({arr}[({i}) >> 1], ({i}) & 1)"
    return f"{arr}[{i}]"


def write(t: Attribute, arr: str, i: str, value: str) -> str:
    return write_bits(t, arr, i, from_compute(t, value))


def write_bits(t: Attribute, arr: str, i: str, bits: str) -> str:
    if is_half(t):
        return f"{arr}[({i}) >> 1] = tsr_set_half({arr}[({i}) >> 1], ({i}) & 1, {bits});"
    return f"{arr}[{i}] = {bits};"


def to_compute(t: Attribute, bits: str) -> str:
    """Memory form -> compute value."""
    name = name_of(t)
    if name == "bf16":
        return f"tsr_bf16_f32({bits})"
    if name == "f16":
        return f"tsr_f16_f32({bits})"
    return bits


def from_compute(t: Attribute, value: str) -> str:
    """Compute value -> memory form (rounding to nearest even for bf16/f16)."""
    name = name_of(t)
    if name == "bf16":
        return f"tsr_f32_bf16({value})"
    if name == "f16":
        return f"tsr_f32_f16({value})"
    return value


def literal(t: Attribute, value: float) -> str:
    """A C literal of `value` in the compute type of t (infinities and NaN spelled by their bits)."""
    name = name_of(t)
    if name == "i1":
        return "true" if value else "false"
    if name in ("i8", "i16", "i32", "index"):
        return str(int(value))
    if name == "i64":
        return f"{int(value)}LL"
    if name == "f64":
        if math.isnan(value) or math.isinf(value):
            bits = int(np.array(value, np.float64).view(np.uint64))
            return f"__longlong_as_double(0x{bits:016x}LL)"
        return repr(float(value))
    v32 = np.float32(value)
    if math.isnan(v32) or math.isinf(v32):
        return f"__int_as_float(0x{int(np.array(v32).view(np.uint32)):08x})"
    text = str(v32)  # the shortest decimal that reads back as this f32
    return (text if ("." in text or "e" in text) else text + ".0") + "f"


def bits_literal(t: Attribute, value: float) -> str:
    """`value` in t's memory form: 16-bit floats as their rounded bit pattern, others as `literal`."""
    name = name_of(t)
    if name in HALF:
        bits = int(np.array(value, dtype=_NP[name]).view(np.uint16))
        return f"0x{bits:04x}u"
    return literal(t, value)


# Prelude snippets, emitted (in this order) only when the kernel uses what they define (see PROVIDES).
PRELUDE: dict[str, str] = {
    "types": """typedef unsigned int tsr_u32;
typedef unsigned short tsr_u16;""",
    "half": """// 16-bit lane j (0 low, 1 high) of a packed register, and its replacement.
static __device__ __forceinline__ tsr_u32 tsr_half(tsr_u32 w, int j) { return j ? (w >> 16) : (w & 0xffffu); }
static __device__ __forceinline__ tsr_u32 tsr_set_half(tsr_u32 w, int j, tsr_u32 h) {
  return j ? ((w & 0xffffu) | (h << 16)) : ((w & 0xffff0000u) | (h & 0xffffu));
}
// bf16 <-> f32: bf16 is the high half of an f32; rounding is to nearest even, NaN stays NaN.
static __device__ __forceinline__ float tsr_bf16_f32(tsr_u32 h) { return __uint_as_float(h << 16); }
#ifdef TESSERA_HOST_EMULATION
static __device__ __forceinline__ tsr_u32 tsr_f32_bf16(float x) {
  const tsr_u32 u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
#else
// One cvt (sm_80+) instead of the integer rounding above; ptxas pairs two of them into one F2FP pack.
static __device__ __forceinline__ tsr_u32 tsr_f32_bf16(float x) {
  tsr_u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
static __device__ __forceinline__ float tsr_f16_f32(tsr_u32 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((tsr_u16)h));
  return f;
}
static __device__ __forceinline__ tsr_u32 tsr_f32_f16(float x) {
  tsr_u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
#endif""",
    "minmax": """// max/min that propagate NaN (numpy's maximum/minimum): one max.NaN/min.NaN (FMNMX, sm_80+) on the device
// rather than a compare and a select (a softmax row max runs one per score).
#ifndef TESSERA_HOST_EMULATION
static __device__ __forceinline__ float tsr_fmax(float a, float b) {
  float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
static __device__ __forceinline__ float tsr_fmin(float a, float b) {
  float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
#else
static __device__ __forceinline__ float tsr_fmax(float a, float b) { return (a != a || a > b) ? a : b; }
static __device__ __forceinline__ float tsr_fmin(float a, float b) { return (a != a || a < b) ? a : b; }
#endif
static __device__ __forceinline__ double tsr_dmax(double a, double b) { return (a != a || a > b) ? a : b; }
static __device__ __forceinline__ double tsr_dmin(double a, double b) { return (a != a || a < b) ? a : b; }""",
    "exp2": """// 2^x for f32 tiles: one ex2.approx.ftz (MUFU.EX2). exp2f without fast-math wraps it in a denormal-result
// rescale (a compare and two predicated multiplies per call: three of a softmax's ~8 ALU ops per score). Same
// accuracy (2 ulp); results below 2^-126 (subnormal) are 0, as the host emulation below models.
#ifndef TESSERA_HOST_EMULATION
static __device__ __forceinline__ float tsr_exp2f(float x) {
  float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r;
}
#else
static __device__ __forceinline__ float tsr_exp2f(float x) {
  const float r = exp2f(x);
  return r < 1.17549435e-38f ? 0.0f : r;
}
#endif""",
    "intdiv": """static __device__ __forceinline__ long long tsr_floordiv(long long a, long long b) {
  const long long q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static __device__ __forceinline__ long long tsr_ceildiv(long long a, long long b) {
  const long long q = a / b;
  return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q;
}""",
    "mma_bf16": """// One mma.sync.aligned.m16n8k16.row.col (bf16 in, f32 accumulate): d += a @ b, this lane's registers.
#ifndef TESSERA_HOST_EMULATION
static __device__ __forceinline__ void tsr_mma_m16n8k16_bf16(float& d0, float& d1, float& d2, float& d3,
    tsr_u32 a0, tsr_u32 a1, tsr_u32 a2, tsr_u32 a3, tsr_u32 b0, tsr_u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#endif""",
    "mma_f16": """// One mma.sync.aligned.m16n8k16.row.col (f16 in, f32 accumulate): d += a @ b, this lane's registers.
#ifndef TESSERA_HOST_EMULATION
static __device__ __forceinline__ void tsr_mma_m16n8k16_f16(float& d0, float& d1, float& d2, float& d3,
    tsr_u32 a0, tsr_u32 a1, tsr_u32 a2, tsr_u32 a3, tsr_u32 b0, tsr_u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#endif""",
    "cp_async": """// cp.async: copy 16 (or `src_bytes` < 16, the rest zero-filled) bytes global -> shared.
#ifndef TESSERA_HOST_EMULATION
static __device__ __forceinline__ void tsr_cp_async16(void* smem, const void* gmem, int src_bytes) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" :: "r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
static __device__ __forceinline__ void tsr_cp_async_commit() { asm volatile("cp.async.commit_group;\\n" ::: "memory"); }
// Wait until at most `pending` (clamped to 0..7) of this thread's committed groups are in flight.
static __device__ __forceinline__ void tsr_cp_async_wait(int pending) {
  if (pending <= 0) asm volatile("cp.async.wait_group 0;\\n" ::: "memory");
  else if (pending == 1) asm volatile("cp.async.wait_group 1;\\n" ::: "memory");
  else if (pending == 2) asm volatile("cp.async.wait_group 2;\\n" ::: "memory");
  else if (pending == 3) asm volatile("cp.async.wait_group 3;\\n" ::: "memory");
  else if (pending == 4) asm volatile("cp.async.wait_group 4;\\n" ::: "memory");
  else if (pending == 5) asm volatile("cp.async.wait_group 5;\\n" ::: "memory");
  else if (pending == 6) asm volatile("cp.async.wait_group 6;\\n" ::: "memory");
  else asm volatile("cp.async.wait_group 7;\\n" ::: "memory");
}
#endif""",
}


# What each snippet defines: a snippet is emitted when the kernel body (or an emitted snippet) names one of these.
PROVIDES: dict[str, tuple[str, ...]] = {
    "types": ("tsr_u32", "tsr_u16"),
    "half": ("tsr_half", "tsr_set_half", "tsr_bf16_f32", "tsr_f32_bf16", "tsr_f16_f32", "tsr_f32_f16"),
    "minmax": ("tsr_fmax", "tsr_fmin", "tsr_dmax", "tsr_dmin"),
    "exp2": ("tsr_exp2f",),
    "intdiv": ("tsr_floordiv", "tsr_ceildiv"),
    "mma_bf16": ("tsr_mma_m16n8k16_bf16",),
    "mma_f16": ("tsr_mma_m16n8k16_f16",),
    "cp_async": ("tsr_cp_async16", "tsr_cp_async_commit", "tsr_cp_async_wait"),
}


def used_snippets(body: str) -> list[str]:
    """The prelude snippets `body` needs, in PRELUDE order (snippets may use earlier ones)."""
    import re

    text, used = body, []
    for name in reversed(list(PRELUDE)):
        if any(re.search(rf"\b{ident}\b", text) for ident in PROVIDES[name]):
            used.append(name)
            text += PRELUDE[name]
    return list(reversed(used))
