"""CUDA C++ for the Hopper nv ops: mbarriers, TMA, wgmma, setmaxnreg, clusters, persistent grids.

(The accumulator epilogue's loads and stores are in `emit_wgacc`; the inline
PTX of both is this module's PRELUDE.)

Shared addresses are 32-bit `shared::cta` addresses: `tsr_sbase` (the
dynamic shared block's address, declared by emit_cuda when used) plus the
op's byte offsets. The wgmma descriptors are built from
`tessera.layouts.smem_swizzle` (the same data the CPU tests check against
the PTX ISA): the fields that do not depend on the stage are folded into one
64-bit constant per K step, the start address is added at run time.
Each `nv.wgmma` is `wgmma.fence`, k/16 `wgmma.mma_async` (one asm
statement, see `wgmma_steps`) and one `wgmma.commit_group`; `nv.wgmma_wait` names every accumulator register in
its asm so that the compiler cannot move a read of them above the wait.
"""

from __future__ import annotations

from tessera.target.nvidia.emit import c_types as C
from tessera.ir import diagnostics as D
from tessera.target.nvidia.ir import hopper_ops as H
from tessera.target.nvidia.ir.types import ints
from tessera.layouts.smem_swizzle import smem_layout

SWIZZLE_MODE = {0: "none", 32: "32B", 64: "64B", 128: "128B"}


def emit_thread_id(e, op: H.ThreadIdOp) -> None:
    e.line(f"const int {e.define(op.result)} = tid;  // nv.thread_id")


def emit_logical_grid(e, op: H.LogicalGridOp) -> None:
    e.line(f"const int {e.define(op.result)} = tsr_grid{op.axis.value.data};  // nv.logical_grid: the logical "
           "grid (persistent kernel)")


def emit_cluster_rank(e, op: H.ClusterRankOp) -> None:
    e.line(f"const int {e.define(op.result)} = (int)tsr_cluster_rank();  // nv.cluster_rank")


def emit_cluster_sync(e, op: H.ClusterSyncOp) -> None:
    e.comment(op, "every thread of the cluster")
    e.line("tsr_cluster_sync();")


def emit_setmaxnreg(e, op: H.SetMaxNRegOp) -> None:
    e.comment(op)
    e.line(f'TSR_DEVICE_ASM("setmaxnreg.{op.action.data}.sync.aligned.u32 {op.regs.value.data};\\n" ::: "memory");')


def emit_named_barrier(e, op: H.NamedBarrierOp) -> None:
    fn = "tsr_named_bar" if op.mode.data == "sync" else "tsr_named_arrive"
    e.comment(op, f"{op.mode.data} on a hardware barrier of {op.threads.value.data} threads")
    e.line(f"{fn}((unsigned){e[op.id]}, {op.threads.value.data}u);")


def _bar(e, op, base: int) -> str:
    return f"tsr_sbase + {base}u + 8u * (unsigned){e[op.stage]}"


def emit_mbarrier_init(e, op: H.MbarrierInitOp) -> None:
    n, base, arrivals = op.count.value.data, op.base.value.data, op.arrivals.value.data
    e.comment(op, f"{n} barriers of {arrivals} arrival(s)")
    with e.block("if (tid == 0) "):
        with e.unrolled("i_", n):
            e.line(f"tsr_mbar_init(tsr_sbase + {base}u + 8u * i_, {arrivals}u);")
        e.line('TSR_DEVICE_ASM("fence.mbarrier_init.release.cluster;\\n" ::: "memory");')
    e.line("__syncthreads();")


def emit_mbarrier_wait(e, op: H.MbarrierWaitOp) -> None:
    e.comment(op)
    e.line(f"tsr_mbar_wait({_bar(e, op, op.base.value.data)}, (unsigned){e[op.phase]});")


def emit_mbarrier_arrive(e, op: H.MbarrierArriveOp) -> None:
    guard = "if ((tid & 127) == 0) " if op.per.data == "warpgroup" else ""
    if op.cluster is None:
        e.comment(op, f"once per {op.per.data}")
        e.line(f"{guard}tsr_mbar_arrive({_bar(e, op, op.base.value.data)});")
        return
    n = op.cluster.value.data
    e.comment(op, f"once per {op.per.data}, on the barrier of each of the cluster's {n} CTAs")
    with e.block(guard):
        for r in range(n):
            e.line(f"tsr_mbar_arrive_cluster({_bar(e, op, op.base.value.data)}, {r}u);")


def emit_mbarrier_expect_tx(e, op: H.MbarrierExpectTxOp) -> None:
    e.comment(op)
    e.line(f"tsr_mbar_expect_tx({_bar(e, op, op.base.value.data)}, {op.bytes.value.data}u);")


def emit_tma_load(e, op: H.TmaLoadOp) -> None:
    tmap = e.tmaps.get(op.source)
    if tmap is None:
        raise D.TesseraError(D.EMIT_UNSUPPORTED, "nv.tma_load reads a memref that is not a kernel argument", op=op)
    rows, cols = ints(op.box)
    dst = f"tsr_sbase + {op.dst.value.data}u + {op.stage_bytes.value.data}u * (unsigned){e[op.stage]}"
    coords = ", ".join(e[c] for c in (op.col, op.row, *reversed(op.outer)))  # innermost first, as PTX takes them
    at = f"{dst}, &{tmap}, {coords}, {_bar(e, op, op.bar.value.data)}"
    load = f"tsr_tma_load_{op.rank()}d"
    if op.multicast is None and op.evict_first is not None:
        e.comment(op, f"{rows}x{cols} box, {op.swizzle.value.data}B swizzle, L2 evict-first when "
                      f"{e[op.evict_first]} (no other CTA reads it)")
        e.line(f"if ({e[op.evict_first]}) {load}_evict_first({at}); else {load}({at});")
        return
    if op.multicast is None:
        e.comment(op, f"{rows}x{cols} box, {op.swizzle.value.data}B swizzle")
        e.line(f"{load}({at});")
        return
    mask = op.multicast.value.data
    e.comment(op, f"{rows}x{cols} box, {op.swizzle.value.data}B swizzle, multicast to cluster ranks {mask:#x}")
    e.line(f"tsr_tma_load_2d_multicast({at}, (unsigned short){mask:#x});")


def _descriptors(op: H.WgmmaOp) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Per k16 step: (byte offset inside the operand tile, constant descriptor bits) for A and for B."""
    k, dt = op.k.value.data, C.name_of(op.dtype)
    mode = SWIZZLE_MODE[op.swizzle.value.data]
    out = []
    for role, rows in (("a", ints(op.a)[2]), ("b", ints(op.b)[2])):
        major = op.major(role)
        try:
            lay = smem_layout(rows, k, dt, mode, major)
        except ValueError as err:
            raise D.TesseraError(D.EMIT_UNSUPPORTED, f"nv.wgmma {role} tile {rows}x{k} ({major}-major): {err}",
                                 op=op) from None
        steps = []
        for j in range(k // 16):
            d = lay.descriptor(k0=16 * j)
            steps.append((d.start, d.encode() - (d.start >> 4)))
        out.append(steps)
    return out[0], out[1]


def _acc_operands(n: int, first: int = 0) -> str:
    return "{" + ", ".join(f"%{first + i}" for i in range(n)) + "}"


def _acc_constraints(name: str, n: int) -> str:
    return ", ".join(f'"+f"({name}[{i}])' for i in range(n))


def wgmma_steps(e, instr: str, d: str, regs: int, steps: list[tuple[str, str, list[str]]]) -> None:
    """Issue the k16 steps of one wgmma: each step's host-emulator call, then one asm statement for all of them.

    steps: (host call, the step's operands after the accumulator with `{0}`, `{1}`, ... for its inputs, its input
    constraints). One statement for the op, not one per step: NVVM spends about as long on each statement's 64+
    tied "+f" operands as on the rest of a kernel (flash attention d=128: NVRTC 1.11 -> 0.72 s with the same
    SASS; GEMM tiles: the same instructions, a few integer ops scheduled differently)."""
    e.line("#ifdef TESSERA_HOST_EMULATION")
    for j, (host, _, _) in enumerate(steps):
        e.line(f"{host};  // k16 step {j}")
    e.line("#else")
    e.line("asm volatile(")
    inputs: list[str] = []
    for j, (_, operands, ins) in enumerate(steps):
        refs = [f"%{regs + len(inputs) + i}" for i in range(len(ins))]
        e.line(f'    "{instr} {_acc_operands(regs)}, {operands.format(*refs)};\\n"  // k16 step {j}')
        inputs += ins
    e.line(f"    : {_acc_constraints(d, regs)}")
    e.line(f"    : {', '.join(inputs)});")
    e.line("#endif")


def emit_wgmma(e, op: H.WgmmaOp) -> None:
    n, k, dt = op.n.value.data, op.k.value.data, C.name_of(op.dtype)
    regs = n // 2
    a_steps, b_steps = _descriptors(op)
    a_base, a_stage, _, a_wg = ints(op.a)
    b_base, b_stage, _ = ints(op.b)
    d = e.define(op.result)
    ta, tb = (int(op.major(r) == "mn") for r in ("a", "b"))
    majors = "" if not (ta or tb) else f" (A {op.major('a')}-major, B {op.major('b')}-major)"
    e.comment(op, f"m64n{n}k{k} = {k // 16} x wgmma m64n{n}k16, {dt} from shared memory{majors}, f32 accumulate")
    e.line(f"float {d}[{regs}];")
    from tessera.target.nvidia.emit.scalar import copy

    copy(e, op.acc.type, d, e[op.acc])
    with e.block():
        s, wg = e[op.stage], e[op.wg]
        sa = s if op.a_slot is None else e[op.a_slot]  # A's own slot (a double-buffered per-tile operand)
        e.line(f"const unsigned a_ = tsr_sbase + {a_base}u + {a_stage}u * (unsigned){sa} + {a_wg}u * (unsigned){wg};")
        e.line(f"const unsigned b_ = tsr_sbase + {b_base}u + {b_stage}u * (unsigned){s};")
        e.line('TSR_DEVICE_ASM("wgmma.fence.sync.aligned;\\n" ::: "memory");')
        e.line("#ifdef TESSERA_HOST_EMULATION")
        e.line("tsr_warpgroup_sync();  // the host emulator: wgmma issues once every warp of the warpgroup has")
        e.line("#endif")
        trans = f", {ta}, {tb}" if ta or tb else ""
        steps = []
        for (ao, ac), (bo, bc) in zip(a_steps, b_steps):
            da, db = f"tsr_wgmma_desc(a_ + {ao}u, 0x{ac:x}ull)", f"tsr_wgmma_desc(b_ + {bo}u, 0x{bc:x}ull)"
            steps.append((f"tsr_wgmma_host({d}, {n}, {da}, {db}, {int(dt == 'bf16')}{trans})",
                          f"{{0}}, {{1}}, 1, 1, 1, {ta}, {tb}", [f'"l"({da})', f'"l"({db})']))
        wgmma_steps(e, f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dt}.{dt}", d, regs, steps)
        e.line('TSR_DEVICE_ASM("wgmma.commit_group.sync.aligned;\\n" ::: "memory");')


def emit_wgmma_wait(e, op: H.WgmmaWaitOp) -> None:
    regs = op.acc.type.get_shape()[0]
    d = e.define(op.result)
    e.comment(op, f"at most {op.pending.value.data} wgmma group(s) still in flight")
    e.line(f"float {d}[{regs}];")
    from tessera.target.nvidia.emit.scalar import copy

    copy(e, op.acc.type, d, e[op.acc])
    held = ""
    if op.hold is not None:  # the RS wgmma's A registers stay live (and untouched) until here
        h = e[op.hold]
        held = "".join(f', "+r"({h}[{i}])' for i in range((op.hold.type.get_shape()[0] + 1) // 2))
    e.line(f'TSR_DEVICE_ASM("wgmma.wait_group.sync.aligned {op.pending.value.data};\\n" : {_acc_constraints(d, regs)}'
           f'{held} :: "memory");')
    e.line("#ifdef TESSERA_HOST_EMULATION")
    e.line("tsr_warpgroup_sync();  // the host emulator: every thread's (synchronous) wgmma reads are done")
    e.line("#endif")


def emit_tma_store_drain(e, op: H.TmaStoreDrainOp) -> None:
    e.comment(op, "the bulk stores are complete before the CTA exits")
    e.line("if ((tid & 127) == 0) tsr_bulk_wait_all();")


HOPPER_EMITTERS = {
    "nv.thread_id": emit_thread_id, "nv.logical_grid": emit_logical_grid, "nv.setmaxnreg": emit_setmaxnreg,
    "nv.named_barrier": emit_named_barrier,
    "nv.cluster_rank": emit_cluster_rank, "nv.cluster_sync": emit_cluster_sync,
    "nv.tma_store_drain": emit_tma_store_drain,
    "nv.mbarrier_init": emit_mbarrier_init, "nv.mbarrier_wait": emit_mbarrier_wait,
    "nv.mbarrier_arrive": emit_mbarrier_arrive, "nv.mbarrier_expect_tx": emit_mbarrier_expect_tx,
    "nv.tma_load": emit_tma_load, "nv.wgmma": emit_wgmma, "nv.wgmma_wait": emit_wgmma_wait,
}


def _tma_load_nd(rank: int, evict_first: bool) -> str:
    """The rank-`rank` box load (3 to 5 dims: the 2-D one is written out above), coordinates innermost first."""
    name = f"tsr_tma_load_{rank}d" + "_evict_first" * evict_first
    coords = ", ".join(f"int c{i}" for i in range(rank))
    regs = ", ".join(f"%{i + 2}" for i in range(rank))
    ins = ", ".join(f'"r"(c{i})' for i in range(rank))
    policy = ('  unsigned long long policy;\n'
              '  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\\n" : "=l"(policy));\n'
              if evict_first else "")
    hint, operand, use = (".L2::cache_hint", f", %{rank + 3}", ', "l"(policy)') if evict_first else ("", "", "")
    return (f"static __device__ __forceinline__ void {name}(unsigned dst, const tsr_tensormap* map, {coords}, "
            f"unsigned bar) {{\n{policy}"
            f'  asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes{hint}"\n'
            f'               " [%0], [%1, {{{regs}}}], [%{rank + 2}]{operand};\\n"\n'
            f'               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), {ins}, "r"(bar){use}\n'
            f'               : "memory");\n}}')


PRELUDE = {
    "hopper": """// sm_90: mbarriers and TMA (shared::cta addresses), the wgmma descriptor's start field.
// The host emulator (tessera.target.nvidia.emit.hopper's HOST_SHIM) defines its own versions of what sits between
// the #ifndef TESSERA_HOST_EMULATION lines; TSR_DEVICE_ASM is inline PTX that has no effect there.
static __device__ __forceinline__ unsigned long long tsr_wgmma_desc(unsigned addr, unsigned long long fields) {
  return fields | (unsigned long long)((addr & 0x3FFFFu) >> 4);
}
#ifndef TESSERA_HOST_EMULATION
#define TSR_DEVICE_ASM(...) asm volatile(__VA_ARGS__)
struct alignas(64) tsr_tensormap { unsigned long long opaque[16]; };
static __device__ __forceinline__ void tsr_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" :: "r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void tsr_mbar_wait(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\\n .reg .pred p;\\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n"
                 " selp.u32 %0, 1, 0, p;\\n}\\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
static __device__ __forceinline__ void tsr_mbar_arrive(unsigned bar) {
  asm volatile("{\\n .reg .b64 st;\\n mbarrier.arrive.shared::cta.b64 st, [%0];\\n}\\n" :: "r"(bar) : "memory");
}
static __device__ __forceinline__ void tsr_mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("{\\n .reg .b64 st;\\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\\n}\\n"
               :: "r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void tsr_tma_load_2d(unsigned dst, const tsr_tensormap* map, int c0, int c1,
                                                       unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
// The same box read with an L2 evict-first policy: for data no other CTA reads, so that streaming it through L2
// does not evict what the other CTAs share.
static __device__ __forceinline__ void tsr_tma_load_2d_evict_first(unsigned dst, const tsr_tensormap* map, int c0,
                                                                   int c1, unsigned bar) {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\\n" : "=l"(policy));
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
               " [%0], [%1, {%2, %3}], [%4], %5;\\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
               : "memory");
}
// Thread-block clusters: the box lands at the same offsets in every CTA of `mask` and completes its bytes on
// each one's barrier; a barrier of another CTA is reached through mapa.
static __device__ __forceinline__ void tsr_tma_load_2d_multicast(unsigned dst, const tsr_tensormap* map, int c0,
                                                                 int c1, unsigned bar, unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3}], [%4], %5;\\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
               : "memory");
}
// The TMA store epilogue: shared -> global box stores in bulk groups, a warpgroup's named barrier.
static __device__ __forceinline__ void tsr_tma_store_2d(const tsr_tensormap* map, int c0, int c1, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\\n"
               :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(src) : "memory");
}
static __device__ __forceinline__ void tsr_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\\n" ::: "memory"); }
static __device__ __forceinline__ void tsr_bulk_wait_read(int pending) {
  if (pending) asm volatile("cp.async.bulk.wait_group.read 1;\\n" ::: "memory");
  else asm volatile("cp.async.bulk.wait_group.read 0;\\n" ::: "memory");
}
static __device__ __forceinline__ void tsr_bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\\n" ::: "memory"); }
static __device__ __forceinline__ void tsr_named_bar(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;\\n" :: "r"(id), "r"(threads) : "memory");
}
static __device__ __forceinline__ void tsr_named_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;\\n" :: "r"(id), "r"(threads) : "memory");
}
static __device__ __forceinline__ void tsr_st_shared_u32(unsigned addr, unsigned v) {
  asm volatile("st.shared.u32 [%0], %1;\\n" :: "r"(addr), "r"(v) : "memory");
}
static __device__ __forceinline__ void tsr_st_shared_f32x2(unsigned addr, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\\n" :: "r"(addr), "f"(x), "f"(y) : "memory");
}
static __device__ __forceinline__ void tsr_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
}
static __device__ __forceinline__ unsigned tsr_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\\n" : "=r"(r));
  return r;
}
static __device__ __forceinline__ void tsr_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\\nbarrier.cluster.wait.acquire;\\n" ::: "memory");
}
static __device__ __forceinline__ void tsr_mbar_arrive_cluster(unsigned bar, unsigned rank) {
  asm volatile("{\\n .reg .b32 remote;\\n mapa.shared::cluster.u32 remote, %0, %1;\\n"
               " mbarrier.arrive.shared::cluster.b64 _, [remote];\\n}\\n"
               :: "r"(bar), "r"(rank) : "memory");
}
#endif""",
    # Boxes of rank-3 to -5 tensors (attention's [B, H, S, D]): a snippet of their own, so 2-D kernels read as before.
    "tma_nd": "\n".join(["// sm_90: TMA loads of boxes of 3- to 5-D tensors (the host emulator has its own).",
                         "#ifndef TESSERA_HOST_EMULATION"]
                        + [_tma_load_nd(r, ev) for r in (3, 4, 5) for ev in (False, True)] + ["#endif"]),
}
PROVIDES = {"hopper": ("tsr_mbar_init", "tsr_mbar_wait", "tsr_mbar_arrive", "tsr_mbar_expect_tx", "tsr_tma_load_2d",
                       "tsr_named_bar", "tsr_named_arrive",
                       "tsr_tma_load_2d_evict_first",
                       "tsr_cluster_sync", "tsr_cluster_rank",
                       "tsr_wgmma_desc", "tsr_tensormap", "TSR_DEVICE_ASM"),
            "tma_nd": tuple(f"tsr_tma_load_{r}d{v}" for r in (3, 4, 5) for v in ("", "_evict_first"))}
