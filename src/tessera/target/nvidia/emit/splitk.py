"""CUDA for `nv.splitk_fixup` and `nv.streamk_fixup`: the K splits (stream-K pieces) of one accumulator block
meet in the runtime's scratch buffer; and for `nv.cluster_splitk_fixup`, where the two K halves of a 2-CTA
cluster meet in rank 0's shared memory (st.async onto an mbarrier; see the op).

Record `tile` of `tsr_scratch` holds, for each split s and 64-row block b,
the block's f32 values in the accumulator's own register order: float4 j of
warpgroup thread t at float (((s * blocks + b) * 64 * n) + 512 j + 4 t), so a
warp's stores and loads are 512 contiguous bytes; the blocks' u32 arrival
counters follow. The order of events per warpgroup is the classic
threadfence reduction: every thread stores (st.global.cg) and fences
(fence.acq_rel.gpu), the warpgroup meets at its named barrier, thread 0 adds 1
to the counter (atom.acq_rel.gpu) and passes "last" through a shared word; the
last warpgroup fences again and loads the other splits (ld.global.cg, past L1).
"""

from __future__ import annotations

from tessera.target.nvidia.ir import hopper_ops as H


def _hand_over(e, at: str, v: str, quads: int) -> None:
    """Store this thread's part of the block (`v`, float4 j at `at` + 512 j: a warp's stores are 512 contiguous
    bytes), past L1."""
    with e.unrolled("j_", quads):
        e.line(f"tsr_st_cg_f32x4({at} + 512u * j_, {v}[4 * j_], {v}[4 * j_ + 1], {v}[4 * j_ + 2], {v}[4 * j_ + 3]);")


def _arrive(e, counter: str, final: str, word: str, consumer: str, last: str) -> None:
    """The threadfence handshake: fence this thread's stores, meet at the warpgroup's named barrier, thread 0
    bumps `counter`; the arrival that sees `final` resets it (ready for the next launch) and the verdict reaches
    the whole warpgroup through shared `word` into `last`."""
    e.line("tsr_fence_gpu();  // this thread's block is visible before the counter moves")
    e.line(f"tsr_named_bar(1u + (unsigned){consumer}, 128u);")
    with e.block("if ((tid & 127) == 0) "):
        e.line(f"unsigned* const cnt_ = {counter};")
        e.line(f"const unsigned last_ = tsr_atom_add_u32(cnt_, 1u) == {final};")
        e.line("if (last_) tsr_st_u32_relaxed(cnt_, 0u);  // ready for the next launch")
        e.line(f"tsr_st_shared_u32({word}, last_);")
    e.line(f"tsr_named_bar(1u + (unsigned){consumer}, 128u);")
    e.line(f"{last} = tsr_ld_shared_u32({word}) != 0u;")


def _sum_registers(e, op, out: str, v: str, regs: int) -> None:
    """The fixup's result registers `out`, holding `v` to start with: `v` itself where nothing else reads it (the
    sum overwrites the block in place: fewer live registers), else a copy."""
    if op.value.has_one_use():
        e.line(f"float (&{out})[{regs}] = {v};")
    else:
        e.line(f"float {out}[{regs}];")
        with e.unrolled("i_", regs):
            e.line(f"{out}[i_] = {v}[i_];")


def _add_quad(e, out: str, load: str) -> None:
    """In an unrolled j_ loop: `load` (a call that fills q_) brings another piece's float4 j_, added to `out`'s."""
    e.line("float q_[4];")
    e.line(f"{load};")
    e.line(f"{out}[4 * j_] += q_[0]; {out}[4 * j_ + 1] += q_[1]; {out}[4 * j_ + 2] += q_[2]; "
           f"{out}[4 * j_ + 3] += q_[3];")


def emit_splitk_fixup(e, op: H.SplitkFixupOp, total=None) -> None:
    """The fixup of one block; `total` writes the last split's sum (default `sum_unrolled`; benchmarks A/B others
    with the same arguments)."""
    if op.scatters():
        emit_scatter_fixup(e, op)
        return
    n, splits, blocks = op.n.value.data, op.splits.value.data, op.blocks.value.data
    regs, quads = n // 2, n // 8
    stride = blocks * 64 * n  # floats from one split's copy of a block to the next split's
    counters = op.partial_bytes(n, splits, blocks)
    v, s, c = e[op.value], e[op.split], e[op.consumer]
    out, last = e.define(op.result), e.define(op.last)
    rec, part, word = e.fresh("skrec"), e.fresh("skpart"), e.fresh("skword")
    e.comment(op, f"split {s} of {splits}: hand the 64 x {n} block over; the last of the splits sums them")
    if op.value.has_one_use():  # the sum may overwrite the block in place: fewer live registers
        e.line(f"float (&{out})[{regs}] = {v};")
    else:
        e.line(f"float {out}[{regs}];")
    e.line(f"bool {last};")
    with e.block():
        e.line(f"unsigned char* const {rec} = tsr_scratch + (unsigned long long){e[op.tile]} * "
               f"{op.record_bytes(n, splits, blocks)}ull;")
        e.line(f"float* const {part} = reinterpret_cast<float*>({rec}) + (unsigned)({e[op.block]}) * {64 * n}u "
               "+ 4u * (unsigned)(tid & 127);")
        e.line(f"const unsigned {word} = tsr_sbase + {op.flag.value.data}u + 4u * (unsigned){c};")
        _hand_over(e, f"{part} + (unsigned){s} * {stride}u", v, quads)
        _arrive(e, f"reinterpret_cast<unsigned*>({rec} + {counters}u) + {e[op.block]}", f"{splits - 1}u", word, c,
                last)
        (total or sum_unrolled)(e, v, out, last, part, splits, stride, quads, s)


def emit_scatter_fixup(e, op: H.SplitkFixupOp) -> None:
    """fixup=scatter: hand over the float4 groups the other splits own, arrive, wait for every split, then sum
    this split's own groups in split order (its own part from registers) and arrive again; the arrival that
    brings the counter to 2 x splits resets it. Group j (8 columns) is owned by split j / (groups / splits): a
    compile-time j against the runtime split, so the registers are indexed by constants only."""
    n, splits, blocks = op.n.value.data, op.splits.value.data, op.blocks.value.data
    regs, quads = n // 2, n // 8
    per, stride = quads // splits, blocks * 64 * n
    v, s, c = e[op.value], e[op.split], e[op.consumer]
    out, last = e.define(op.result), e.define(op.last)
    rec, part, cnt = e.fresh("skrec"), e.fresh("skpart"), e.fresh("skcnt")
    e.comment(op, f"split {s} of {splits}: hand over the 64 x {n} block's other columns; once all {splits} splits "
                  f"are in, sum columns [{n // splits} s, {n // splits} (s + 1))")
    _sum_registers(e, op, out, v, regs)
    e.line(f"const bool {last} = true;  // every split stores its own columns")
    with e.block():
        e.line(f"unsigned char* const {rec} = tsr_scratch + (unsigned long long){e[op.tile]} * "
               f"{op.record_bytes(n, splits, blocks)}ull;")
        e.line(f"float* const {part} = reinterpret_cast<float*>({rec}) + (unsigned)({e[op.block]}) * {64 * n}u "
               "+ 4u * (unsigned)(tid & 127);")
        e.line(f"unsigned* const {cnt} = reinterpret_cast<unsigned*>({rec} + {op.partial_bytes(n, splits, blocks)}u) "
               f"+ {e[op.block]};")
        e.line(f"const unsigned own_ = (unsigned){s};")
        with e.unrolled("j_", quads):
            with e.block(f"if (j_ / {per} != own_) "):
                e.line(f"tsr_st_cg_f32x4({part} + own_ * {stride}u + 512u * j_, {v}[4 * j_], {v}[4 * j_ + 1], "
                       f"{v}[4 * j_ + 2], {v}[4 * j_ + 3]);")
        e.line("tsr_fence_gpu();  // this thread's groups are visible before the counter moves")
        e.line(f"tsr_named_bar(1u + (unsigned){c}, 128u);")
        with e.block("if ((tid & 127) == 0) ", "arrive, then wait until every split has"):
            e.line(f"tsr_atom_add_u32({cnt}, 1u);")
            e.line(f"tsr_wait_count_u32({cnt}, {splits}u);")
        e.line(f"tsr_named_bar(1u + (unsigned){c}, 128u);")
        e.line("tsr_fence_gpu();")
        with e.unrolled("j_", quads):
            with e.block(f"if (j_ / {per} == own_) ", "this split's columns: the sum in split order"):
                _sum_quad_in_order(e, v, out, part, splits, stride, "own_")
        with e.block("if ((tid & 127) == 0) ", "read: the last of the second arrivals resets the counter"):
            e.line(f"if (tsr_atom_add_u32({cnt}, 1u) == {2 * splits - 1}u) tsr_st_u32_relaxed({cnt}, 0u);")


def sum_unrolled(e, v: str, out: str, last: str, part: str, splits: int, stride: int, quads: int, s: str) -> None:
    """The last split's sum, in split order: every split's part in one unrolled block, its own from registers."""
    with e.block(f"if ({last}) ", "the sum in split order, this split's own part from registers"):
        e.line("tsr_fence_gpu();")
        with e.unrolled("j_", quads):
            _sum_quad_in_order(e, v, out, part, splits, stride, s)


def _sum_quad_in_order(e, v: str, out: str, part: str, splits: int, stride: int, s: str) -> None:
    """In an unrolled j_ loop: float4 j_ of the sum over the splits in order, split `s`'s own from registers `v`,
    the others' from the record at `part` (split stride `stride` floats)."""
    e.line(f"const float o_[4] = {{{v}[4 * j_], {v}[4 * j_ + 1], {v}[4 * j_ + 2], {v}[4 * j_ + 3]}};")
    e.line("float q_[4];")
    with e.unrolled("s_", splits):
        with e.block(f"if (s_ == {s}) "):
            e.line("q_[0] = o_[0]; q_[1] = o_[1]; q_[2] = o_[2]; q_[3] = o_[3];")
        with e.block("else "):
            e.line(f"tsr_ld_cg_f32x4({part} + (unsigned)s_ * {stride}u + 512u * j_, q_);")
        e.line(f"if (s_ == 0) {{ {out}[4 * j_] = q_[0]; {out}[4 * j_ + 1] = q_[1]; "
               f"{out}[4 * j_ + 2] = q_[2]; {out}[4 * j_ + 3] = q_[3]; }}")
        e.line(f"else {{ {out}[4 * j_] += q_[0]; {out}[4 * j_ + 1] += q_[1]; {out}[4 * j_ + 2] += q_[2]; "
               f"{out}[4 * j_ + 3] += q_[3]; }}")


def emit_streamk_fixup(e, op: H.StreamkFixupOp) -> None:
    """Stream-K pieces: the same handshake as split-K, but the piece count is a runtime value and every piece,
    the last one's too, goes through its CTA's slot, so the sum is read back in piece order with no register
    indexing (the accumulator need not stay live across the fixup)."""
    n, blocks, stride = op.n.value.data, op.blocks.value.data, op.slot_stride.value.data
    regs, quads = n // 2, n // 8
    slot = op.slot_bytes(n, blocks)
    v, c = e[op.value], e[op.consumer]
    out, last = e.define(op.result), e.define(op.last)
    at, word, np_, first = e.fresh("skat"), e.fresh("skword"), e.fresh("sknp"), e.fresh("skfirst")
    e.comment(op, f"stream-K piece {e[op.piece]} of {e[op.pieces]}: hand the 64 x {n} block over; the last sums them")
    _sum_registers(e, op, out, v, regs)
    e.line(f"bool {last} = true;")
    with e.block(f"if ({e[op.pieces]} > 1) "):
        e.line(f"const unsigned {np_} = (unsigned){e[op.pieces]};")
        e.line(f"const unsigned {first} = (unsigned){e[op.first_slot]};")
        e.line(f"const unsigned long long {at} = (unsigned long long)(unsigned)({e[op.block]}) * {64 * n * 4}ull + "
               "16ull * (unsigned)(tid & 127);  // this thread's float4s within a slot")
        e.line(f"const unsigned {word} = tsr_sbase + {op.flag.value.data}u + 4u * (unsigned){c};")
        e.line(f"const unsigned own_ = {first} + {stride}u * (unsigned){e[op.piece]} + "
               f"({e[op.piece]} == 0 ? (unsigned){e[op.head]} : 0u);")
        e.line(f"float* const mine_ = reinterpret_cast<float*>(tsr_scratch + (unsigned long long)own_ * {slot}ull + {at});")
        _hand_over(e, "mine_", v, quads)
        _arrive(e, f"reinterpret_cast<unsigned*>(tsr_scratch + (unsigned long long)gridDim.x * {2 * slot}ull + "
                   f"(unsigned long long)(unsigned){e[op.tile]} * {op.COUNTER_BYTES}ull) + {e[op.block]}",
                f"{np_} - 1u", word, c, last)
        with e.block(f"if ({last}) ", "the sum in piece order, read back from the slots"):
            e.line("tsr_fence_gpu();")
            e.line(f"const float* const p0_ = reinterpret_cast<const float*>(tsr_scratch + "
                   f"(unsigned long long)({first} + (unsigned){e[op.head]}) * {slot}ull + {at});")
            with e.unrolled("j_", quads):
                e.line(f"tsr_ld_cg_f32x4(p0_ + 512u * j_, &{out}[4 * j_]);")
            with e.block(f"for (unsigned p_ = 1u; p_ < {np_}; ++p_) "):
                e.line(f"const float* const pp_ = reinterpret_cast<const float*>(tsr_scratch + "
                       f"(unsigned long long)({first} + {stride}u * p_) * {slot}ull + {at});")
                with e.unrolled("j_", quads):
                    _add_quad(e, out, "tsr_ld_cg_f32x4(pp_ + 512u * j_, q_)")


def emit_cluster_splitk_fixup(e, op: H.ClusterSplitkFixupOp) -> None:
    """Rank 1 waits until its slot of rank 0's buffer is free and sends its block; rank 0 arms its full barrier,
    waits for the block, adds it to its own and frees the slot (see the op)."""
    n = op.n.value.data
    regs, quads, nbytes = n // 2, n // 8, op.slot_bytes(n)
    v, rank, c = e[op.value], e[op.rank], e[op.consumer]
    out, last = e.define(op.result), e.define(op.last)
    e.comment(op, f"the 2-CTA cluster's K halves of a 64 x {n} block meet in rank 0's shared memory")
    _sum_registers(e, op, out, v, regs)
    e.line(f"const bool {last} = {rank} == 0;")
    with e.block():
        e.line(f"const unsigned slot_ = (unsigned){e[op.slot]};")
        e.line(f"const unsigned buf_ = tsr_sbase + {op.buffer.value.data}u + {nbytes}u * slot_ + "
               "16u * (unsigned)(tid & 127);  // this thread's float4s")
        e.line(f"const unsigned full_ = tsr_sbase + {op.full.value.data}u + 8u * slot_;")
        e.line(f"const unsigned empty_ = tsr_sbase + {op.empty.value.data}u + 8u * slot_;")
        e.line(f"const unsigned par_ = (unsigned){e[op.ordinal]} & 1u;")
        with e.block(f"if (!{last}) ", "rank 1: once rank 0 has read the last tile's block, send this one"):
            e.line("tsr_mbar_wait_cluster(empty_, par_ ^ 1u);")
            with e.unrolled("j_", quads):
                e.line(f"tsr_st_async_f32x4(buf_ + 2048u * j_, full_, 0u, {v}[4 * j_], {v}[4 * j_ + 1], "
                       f"{v}[4 * j_ + 2], {v}[4 * j_ + 3]);")
        with e.block("else ", "rank 0: wait for rank 1's block, add it, free the slot"):
            e.line(f"if ((tid & 127) == 0) tsr_mbar_expect_tx(full_, {nbytes}u);")
            e.line("tsr_mbar_wait_cluster(full_, par_);")
            with e.unrolled("j_", quads):
                _add_quad(e, out, "tsr_ld_shared_f32x4(buf_ + 2048u * j_, q_)")
            e.line(f"tsr_named_bar(1u + (unsigned){c}, 128u);  // the whole warpgroup has read the slot")
            e.line("if ((tid & 127) == 0) tsr_mbar_arrive_remote(empty_, 1u);")


EMITTERS = {"nv.splitk_fixup": emit_splitk_fixup, "nv.streamk_fixup": emit_streamk_fixup,
            "nv.cluster_splitk_fixup": emit_cluster_splitk_fixup}

PRELUDE = {
    "splitk": """// Split-K in one launch (nv.splitk_fixup): global stores and loads that bypass L1, a GPU-scope fence and
// counter; the host emulator defines its own versions.
#ifndef TESSERA_HOST_EMULATION
static __device__ __forceinline__ void tsr_st_cg_f32x4(float* p, float a, float b, float c, float d) {
  asm volatile("st.global.cg.v4.f32 [%0], {%1, %2, %3, %4};\\n" :: "l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
static __device__ __forceinline__ void tsr_ld_cg_f32x4(const float* p, float* q) {
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];\\n" : "=f"(q[0]), "=f"(q[1]), "=f"(q[2]), "=f"(q[3])
               : "l"(p) : "memory");
}
static __device__ __forceinline__ void tsr_fence_gpu() { asm volatile("fence.acq_rel.gpu;\\n" ::: "memory"); }
static __device__ __forceinline__ unsigned tsr_atom_add_u32(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;\\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
static __device__ __forceinline__ void tsr_st_u32_relaxed(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;\\n" :: "l"(p), "r"(v) : "memory");
}
static __device__ __forceinline__ unsigned tsr_ld_shared_u32(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];\\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
#endif""",
}
PRELUDE["splitk_wait"] = """// Split-K fixup=scatter: a split waits until every split of its tile has arrived. Every CTA of the launch is
// resident (a cooperative launch), so the count arrives; the host emulator defines its own version.
#ifndef TESSERA_HOST_EMULATION
static __device__ __forceinline__ void tsr_wait_count_u32(const unsigned* p, unsigned n) {
  unsigned v;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\\n" : "=r"(v) : "l"(p) : "memory");
  } while (v < n);
}
#endif"""
PRELUDE["dsmem"] = """// Split-K in a 2-CTA cluster (nv.cluster_splitk_fixup): stores into a peer's shared memory that
// complete their bytes on its mbarrier, waits and arrivals ordered at cluster scope; the host emulator defines its
// own versions.
#ifndef TESSERA_HOST_EMULATION
static __device__ __forceinline__ void tsr_st_async_f32x4(unsigned addr, unsigned bar, unsigned rank, float a, float b,
                                                          float c, float d) {
  asm volatile("{\\n .reg .b32 ra, rb;\\n mapa.shared::cluster.u32 ra, %0, %2;\\n"
               " mapa.shared::cluster.u32 rb, %1, %2;\\n"
               " st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [ra], {%3, %4, %5, %6}, [rb];\\n}\\n"
               :: "r"(addr), "r"(bar), "r"(rank), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
static __device__ __forceinline__ void tsr_ld_shared_f32x4(unsigned addr, float* q) {
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\\n" : "=f"(q[0]), "=f"(q[1]), "=f"(q[2]), "=f"(q[3])
               : "r"(addr) : "memory");
}
static __device__ __forceinline__ void tsr_mbar_wait_cluster(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\\n .reg .pred p;\\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\\n"
                 " selp.u32 %0, 1, 0, p;\\n}\\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
static __device__ __forceinline__ void tsr_mbar_arrive_remote(unsigned bar, unsigned rank) {
  asm volatile("{\\n .reg .b32 remote;\\n mapa.shared::cluster.u32 remote, %0, %1;\\n"
               " mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\\n}\\n"
               :: "r"(bar), "r"(rank) : "memory");
}
#endif"""
PROVIDES = {"dsmem": ("tsr_st_async_f32x4", "tsr_ld_shared_f32x4", "tsr_mbar_wait_cluster", "tsr_mbar_arrive_remote"),
            "splitk": ("tsr_st_cg_f32x4", "tsr_ld_cg_f32x4", "tsr_fence_gpu", "tsr_atom_add_u32", "tsr_st_u32_relaxed",
                       "tsr_ld_shared_u32"),
            "splitk_wait": ("tsr_wait_count_u32",)}
