"""CUDA C++ for the register ops of `tessera.target.nvidia.ir.wgreg_ops` (wgmma's D layout and its row vectors).

Slot-wise ones (`nv.wgrows_broadcast`, `nv.wgacc_index`, `nv.wgrows_index`) join the fused slot loops of
`emit.nv`; a row reduction folds the thread's slots of each row and then the quad with `tsr_shfl_xor`
(`__shfl_xor_sync` on the GPU; on the host emulator an exchange through a per-warp buffer between two warp
barriers); `nv.wgmma_rs` passes A as four 32-bit registers per k16 step.
"""

from __future__ import annotations

from tessera.ir import diagnostics as D
from tessera.layouts.smem_swizzle import smem_layout
from tessera.target.nvidia.emit import c_types as C
from tessera.target.nvidia.emit.hopper import wgmma_steps
from tessera.target.nvidia.ir import wgreg_ops as W
from tessera.target.nvidia.ir.types import ints

_ROW0 = "16 * ((tid & 127) >> 5) + ((tid & 31) >> 2)"  # the first of the thread's two rows in a 64-row block
_FOLD = {"max": "tsr_fmax({0}, {1})", "min": "tsr_fmin({0}, {1})", "sum": "{0} + {1}"}
QUAD_MASKS = (1, 2)  # xor masks joining the four lanes that hold one row (tessera.layouts: the D map's butterfly)


def slot_wgrows_broadcast(e, op: W.WgrowsBroadcastOp) -> None:
    elem = op.result.type.element_type
    e.line(C.write_bits(elem, e[op.result], "i_", C.read_bits(elem, e[op.source], "(i_ >> 1) & 1")))


def slot_wgacc_index(e, op: W.WgaccIndexOp) -> None:
    expr = (f"{_ROW0} + 8 * ((i_ >> 1) & 1)" if op.axis.value.data == 0
            else "8 * (i_ >> 2) + 2 * (tid & 3) + (i_ & 1)")
    e.line(f"{e[op.result]}[i_] = {expr};")


def slot_wgrows_index(e, op: W.WgrowsIndexOp) -> None:
    e.line(f"{e[op.result]}[i_] = {_ROW0} + 8 * i_;")


def emit_wgacc_reduce_rows(e, op: W.WgaccReduceRowsOp) -> None:
    n, kind = op.n.value.data, op.kind.data
    src, out = e[op.source], e.define(op.result)
    fold = _FOLD[kind]
    e.comment(op, f"{kind} of each row of a 64 x {n} D tile: {n // 4} slots per row per thread, then the quad")
    e.line(f"float {out}[2];")
    with e.unrolled("j_", 2, "row slot j_: slots 4c + 2j_ + {0, 1} of every 8-column chunk c"):
        e.line(f"float r_ = {src}[2 * j_];")
        with e.unrolled("s_", n // 4 - 1):
            e.line(f"r_ = {fold.format('r_', f'{src}[4 * ((s_ + 1) >> 1) + 2 * j_ + ((s_ + 1) & 1)]')};")
        for mask in QUAD_MASKS:
            e.line(f"r_ = {fold.format('r_', f'tsr_shfl_xor(r_, {mask})')};")
        e.line(f"{out}[j_] = r_;")


def emit_wgrows_store(e, op: W.WgrowsStoreOp) -> None:
    mr = e.memref(op.dest, op)
    elem = op.value.type.element_type
    *outer, last = (e[v] for v in op.offsets)
    base = " + ".join([f"(long long)({v}) * {mr.strides[d]}" for d, v in enumerate(outer)]) or "0"
    e.comment(op, "one lane per quad writes the thread's two rows")
    with e.block("if ((tid & 3) == 0) "):
        with e.unrolled("j_", 2):
            e.line(f"const long long r_ = (long long)({last}) + {_ROW0} + 8 * j_;")
            e.line(f"if (r_ < {mr.sizes[-1]}) {mr.ptr}[{base} + r_ * {mr.strides[-1]}] = "
                   f"({C.mem_type(elem)}){C.read(elem, e[op.value], 'j_')};")


def b_steps(op) -> list[tuple[int, int]]:
    """Per k16 step of B: (byte offset inside the tile, constant descriptor bits), from tessera.layouts."""
    k, dt, rows = op.k.value.data, C.name_of(op.dtype), ints(op.b)[2]
    mode = {0: "none", 32: "32B", 64: "64B", 128: "128B"}[op.swizzle.value.data]
    try:
        lay = smem_layout(rows, k, dt, mode, op.major("b"))
    except ValueError as err:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, f"{op.name} b tile {rows}x{k} ({op.major('b')}-major): {err}",
                             op=op) from None
    return [(d.start, d.encode() - (d.start >> 4)) for d in (lay.descriptor(k0=16 * j) for j in range(k // 16))]


def emit_wgmma_rs(e, op: W.WgmmaRsOp) -> None:
    n, k, dt = op.n.value.data, op.k.value.data, C.name_of(op.dtype)
    regs, tb = n // 2, int(op.major("b") == "mn")
    b_base, b_stage, _ = ints(op.b)
    d, a = e.define(op.result), e[op.a]
    e.comment(op, f"m64n{n}k{k} = {k // 16} x wgmma m64n{n}k16, A {dt} from registers (D layout), B from shared "
                  f"memory ({op.major('b')}-major), f32 accumulate")
    e.line(f"float {d}[{regs}];")
    from tessera.target.nvidia.emit.scalar import copy

    copy(e, op.acc.type, d, e[op.acc])
    instr = f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dt}.{dt}"
    with e.block():
        e.line(f"const unsigned b_ = tsr_sbase + {b_base}u + {b_stage}u * (unsigned){e[op.stage]};")
        e.line('TSR_DEVICE_ASM("wgmma.fence.sync.aligned;\\n" ::: "memory");')
        e.line("#ifdef TESSERA_HOST_EMULATION")
        e.line("tsr_warpgroup_sync();")
        e.line("#endif")
        steps = []
        for j, (bo, bc) in enumerate(b_steps(op)):
            db = f"tsr_wgmma_desc(b_ + {bo}u, 0x{bc:x}ull)"
            steps.append((f"tsr_wgmma_rs_host({d}, {n}, {a} + {4 * j}, {db}, {int(dt == 'bf16')}, {tb})",
                          f"{{{{{{0}}, {{1}}, {{2}}, {{3}}}}}}, {{4}}, 1, 1, 1, {tb}",
                          [f'"r"({a}[{4 * j + i}])' for i in range(4)] + [f'"l"({db})']))
        wgmma_steps(e, instr, d, regs, steps)
        e.line('TSR_DEVICE_ASM("wgmma.commit_group.sync.aligned;\\n" ::: "memory");')


SLOTWISE = {"nv.wgrows_broadcast": slot_wgrows_broadcast, "nv.wgacc_index": slot_wgacc_index,
            "nv.wgrows_index": slot_wgrows_index}
EMITTERS = {"nv.wgacc_reduce_rows": emit_wgacc_reduce_rows, "nv.wgrows_store": emit_wgrows_store,
            "nv.wgmma_rs": emit_wgmma_rs}

PRELUDE = {"wgreg": """// Quad exchanges of wgmma D-layout rows; RS wgmma on the host emulator.
#ifndef TESSERA_HOST_EMULATION
static __device__ __forceinline__ float tsr_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
static __device__ __forceinline__ tsr_u32 tsr_shfl_xor_u32(tsr_u32 v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
static __device__ __forceinline__ void tsr_st_global_v4(void* p, tsr_u32 a, tsr_u32 b, tsr_u32 c, tsr_u32 d) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\\n" :: "l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
#else
static float tsr_shfl_buf[TSR_MAX_CLUSTER][1024];
static inline float tsr_shfl_xor(float v, int mask) {
  float* b = tsr_shfl_buf[tsr_rank];
  const int t = threadIdx.x;
  b[t] = v;
  tsr_warp_barrier[tsr_rank][t >> 5]->arrive_and_wait();
  const float r = b[t ^ mask];
  tsr_warp_barrier[tsr_rank][t >> 5]->arrive_and_wait();
  return r;
}
static inline tsr_u32 tsr_shfl_xor_u32(tsr_u32 v, int mask) {
  return __float_as_uint(tsr_shfl_xor(__uint_as_float(v), mask));
}
static inline void tsr_st_global_v4(void* p, tsr_u32 a, tsr_u32 b, tsr_u32 c, tsr_u32 d) {
  if (reinterpret_cast<unsigned long long>(p) & 15) std::abort();  // st.global.v4 faults on a misaligned address
  const tsr_u32 w[4] = {a, b, c, d};
  std::memcpy(p, w, 16);
}
// A's element (row, k) of a 64 x k D-layout tile is slot 4 (k / 8) + 2 ((row / 8) % 2) + k % 2 of lane
// 4 (row % 8) + (k % 8) / 2 of warp row / 16: each thread publishes its four registers of the step.
static tsr_u32 tsr_rs_buf[TSR_MAX_CLUSTER][1024][4];
static inline void tsr_wgmma_rs_host(float* d, int n, const tsr_u32* a, unsigned long long db, int bf, int tb) {
  const int t = threadIdx.x, g = t & ~127, w = (t & 127) >> 5, l = t & 31;
  for (int i = 0; i < 4; ++i) tsr_rs_buf[tsr_rank][t][i] = a[i];
  tsr_warpgroup_sync();
  for (int i = 0; i < n / 2; ++i) {
    const int row = 16 * w + (l >> 2) + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * (l & 3) + (i & 1);
    float acc = d[i];
    for (int k = 0; k < 16; ++k) {
      const int owner = g + 32 * (row >> 4) + 4 * (row & 7) + ((k & 7) >> 1);
      const int slot = 4 * (k >> 3) + 2 * ((row >> 3) & 1) + (k & 1);
      const tsr_u32 word = tsr_rs_buf[tsr_rank][owner][slot >> 1];
      acc += tsr_elem(word, slot & 1, bf) * tsr_smem_half(tsr_desc_addr(db, col, k, tb), bf);
    }
    d[i] = acc;
  }
  tsr_warpgroup_sync();
}
#endif
"""}
PROVIDES = {"wgreg": ("tsr_shfl_xor", "tsr_shfl_xor_u32", "tsr_st_global_v4", "tsr_wgmma_rs_host")}
