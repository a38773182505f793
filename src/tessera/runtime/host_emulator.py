"""Run emitted CUDA C++ on the CPU: the same text, compiled with g++, one std::thread per GPU thread.

CI has no GPU, and the nv emulator (`tessera.target.nvidia.emulate.nv_ir`) checks the nv IR,
not the C++ the emitter writes from it. This harness checks the text itself:
index arithmetic, guards, fused slot loops, shared-memory offsets, the kernel
ABI. A prelude defines what CUDA provides (threadIdx, __syncthreads as a
a CTA barrier that gives up on a deadlock, bit casts, math) and host versions of the few
helpers the emitter writes in inline PTX (they sit between
`#ifndef TESSERA_HOST_EMULATION` lines): cp.async becomes a synchronous copy
with the same zero-fill, and mma.sync a warp-collective computation that
finds each operand element through the lane-map tables of
`tessera.layouts`, exported here as C arrays (no layout is typed in).

CTAs run one after another, except the CTAs of one thread-block cluster, which
run at once with a shared block each (multicast TMA and remote mbarrier arrivals
reach the peer's). This is a test harness, not a runtime: it is slow
(hundreds of threads per CTA) and needs g++ with C++20.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import struct
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from tessera.ir import diagnostics as D
from tessera.ir.argcheck import ELEM_OF_NUMPY
from tessera.layouts import lane_map
from tessera.target.nvidia.emit.abi import EmittedKernel
from tessera.runtime.host_shim_hopper import HOPPER_SHIM

_SHIM = r"""
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
#define TESSERA_HOST_EMULATION 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#define __shared__
#define __align__(n)
struct tsr_dim3 { unsigned x, y, z; };
static thread_local tsr_dim3 threadIdx, blockIdx;
static tsr_dim3 gridDim;
// One shared block and one set of barriers per CTA of a cluster (the CTAs of a cluster run at once; a thread
// knows its CTA by tsr_rank). The kernel's own `extern __shared__ ... tsr_smem[]` line is dropped (host_source).
#define TSR_MAX_CLUSTER (GROUP < 2 ? 2 : GROUP)
alignas(1024) unsigned char tsr_smem_of[TSR_MAX_CLUSTER][232448];
static thread_local int tsr_rank;
#define tsr_smem (tsr_smem_of[tsr_rank])
// A wait that never completes (a thread that never reaches a barrier, a lost mbarrier arrival, missing TMA
// bytes) is a deadlock on the GPU; here it gives up after TSR_WAIT_LIMIT_S, marks the launch hung and lets every
// thread run out, so the caller gets a coded error instead of a process that never returns.
static std::atomic<bool> tsr_hung{false};
// std::barrier cannot give up, so the CTA, warp, warpgroup and cluster barriers are this one.
struct tsr_barrier {
  explicit tsr_barrier(int n) : count(n) {}
  void arrive_and_wait() {
    const unsigned gen = generation.load();
    if (arrived.fetch_add(1) + 1 == count) {  // the last arrival opens the next generation
      arrived.store(0);
      { std::lock_guard<std::mutex> g(m); generation.fetch_add(1); }
      cv.notify_all();
      return;
    }
    for (int i = 0; i < 32; ++i) {  // most barriers open within a few yields
      if (generation.load() != gen) return;
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> g(m);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(TSR_WAIT_LIMIT_S);
    while (generation.load() == gen && !tsr_hung.load()) {
      if (std::chrono::steady_clock::now() > deadline) { tsr_hung = true; break; }
      cv.wait_for(g, std::chrono::milliseconds(20));
    }
  }
  std::mutex m;
  std::condition_variable cv;
  const int count;
  std::atomic<int> arrived{0};
  std::atomic<unsigned> generation{0};
};
// A named (hardware) barrier: its thread count comes with each arrival, as in bar.sync/bar.arrive.
struct tsr_named_barrier {
  void arrive(unsigned n, bool wait) {
    std::unique_lock<std::mutex> g(m);
    const unsigned gen = generation;
    if (++arrived >= n) { arrived = 0; ++generation; cv.notify_all(); return; }
    if (!wait) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(TSR_WAIT_LIMIT_S);
    while (generation == gen && !tsr_hung.load()) {
      if (std::chrono::steady_clock::now() > deadline) { tsr_hung = true; break; }
      cv.wait_for(g, std::chrono::milliseconds(20));
    }
  }
  std::mutex m;
  std::condition_variable cv;
  unsigned arrived = 0, generation = 0;
};
static tsr_named_barrier tsr_named[TSR_MAX_CLUSTER][16];
static tsr_barrier* tsr_cta_barrier[TSR_MAX_CLUSTER];
static tsr_barrier* tsr_cluster_barrier;
static tsr_barrier* tsr_warp_barrier[TSR_MAX_CLUSTER][32];
static tsr_barrier* tsr_wg_barrier[TSR_MAX_CLUSTER][8];  // wgmma is warpgroup-collective: it issues once all four warps have
static inline void __syncthreads() { tsr_cta_barrier[tsr_rank]->arrive_and_wait(); }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
template <class T> static inline T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
using std::max; using std::min;
typedef unsigned int tsr_u32;
typedef unsigned short tsr_u16;
static inline float tsr_f16_f32(tsr_u32 h) { _Float16 v; tsr_u16 b = (tsr_u16)h; std::memcpy(&v, &b, 2); return (float)v; }
static inline tsr_u32 tsr_f32_f16(float x) { _Float16 v = (_Float16)x; tsr_u16 b; std::memcpy(&b, &v, 2); return b; }
static inline void tsr_cp_async16(void* s, const void* g, int n) {
  std::memset(s, 0, 16); if (n > 0) std::memcpy(s, g, n);
}
static inline void tsr_cp_async_commit() {}
static inline void tsr_cp_async_wait(int) {}
// mma.sync m16n8k16 as a warp-collective: every lane publishes its registers, then computes its own slots.
static const int TSR_A_LANE[16][16] = {A_LANE}, TSR_A_SLOT[16][16] = {A_SLOT};
static const int TSR_B_LANE[16][8] = {B_LANE}, TSR_B_SLOT[16][8] = {B_SLOT};
static const int TSR_C_ROW[32][4] = {C_ROW}, TSR_C_COL[32][4] = {C_COL};
struct tsr_warp_regs { tsr_u32 a[32][4], b[32][2]; };
static tsr_warp_regs tsr_regs[TSR_MAX_CLUSTER][32];
static inline float tsr_elem(tsr_u32 w, int half, bool bf) {
  tsr_u32 h = half ? (w >> 16) : (w & 0xffffu);
  return bf ? __uint_as_float(h << 16) : tsr_f16_f32(h);
}
static inline void tsr_mma_host(bool bf, float& d0, float& d1, float& d2, float& d3, tsr_u32 a0, tsr_u32 a1,
                                tsr_u32 a2, tsr_u32 a3, tsr_u32 b0, tsr_u32 b1) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  tsr_warp_regs& R = tsr_regs[tsr_rank][w];
  R.a[lane][0] = a0; R.a[lane][1] = a1; R.a[lane][2] = a2; R.a[lane][3] = a3; R.b[lane][0] = b0; R.b[lane][1] = b1;
  tsr_warp_barrier[tsr_rank][w]->arrive_and_wait();
  float* d[4] = {&d0, &d1, &d2, &d3};
  float out[4];
  for (int s = 0; s < 4; ++s) {
    const int row = TSR_C_ROW[lane][s], col = TSR_C_COL[lane][s];
    float acc = *d[s];
    for (int k = 0; k < 16; ++k) {
      const int al = TSR_A_LANE[row][k], as = TSR_A_SLOT[row][k], bl = TSR_B_LANE[k][col], bs = TSR_B_SLOT[k][col];
      acc += tsr_elem(R.a[al][as >> 1], as & 1, bf) * tsr_elem(R.b[bl][bs >> 1], bs & 1, bf);
    }
    out[s] = acc;
  }
  tsr_warp_barrier[tsr_rank][w]->arrive_and_wait();
  for (int s = 0; s < 4; ++s) *d[s] = out[s];
}
static inline void tsr_mma_m16n8k16_bf16(float& d0, float& d1, float& d2, float& d3, tsr_u32 a0, tsr_u32 a1,
    tsr_u32 a2, tsr_u32 a3, tsr_u32 b0, tsr_u32 b1) { tsr_mma_host(true, d0, d1, d2, d3, a0, a1, a2, a3, b0, b1); }
static inline void tsr_mma_m16n8k16_f16(float& d0, float& d1, float& d2, float& d3, tsr_u32 a0, tsr_u32 a1,
    tsr_u32 a2, tsr_u32 a3, tsr_u32 b0, tsr_u32 b1) { tsr_mma_host(false, d0, d1, d2, d3, a0, a1, a2, a3, b0, b1); }
"""


_LAUNCH = r"""
// Groups of GROUP CTAs (consecutive x) run one after another; the CTAs of one group run at once. A group is a
// cluster of CLUSTER CTAs, or a co-resident kernel's whole grid.
extern "C" int tsr_host_launch(void** argv, int gx, int gy, int gz) {
  tsr_hung = false;  // a launch that hung before does not make this one look hung (nor skip its waits)
  gridDim = {(unsigned)gx, (unsigned)gy, (unsigned)gz};
  for (int z = 0; z < gz; ++z) for (int y = 0; y < gy; ++y) for (int x0 = 0; x0 < gx; x0 += GROUP) {
    const int group = std::min(GROUP, gx - x0);
    tsr_barrier cluster(CLUSTER * THREADS);
    tsr_cluster_barrier = &cluster;
    std::vector<tsr_barrier*> owned;
    for (int r = 0; r < group; ++r) for (auto& b : tsr_named[r]) b.arrived = 0;  // a CTA starts with fresh ones
    for (int r = 0; r < group; ++r) {
      owned.push_back(new tsr_barrier(THREADS)); tsr_cta_barrier[r] = owned.back();
      for (int w = 0; w < THREADS / 32; ++w) { owned.push_back(new tsr_barrier(32)); tsr_warp_barrier[r][w] = owned.back(); }
      for (int g = 0; g < THREADS / 128; ++g) { owned.push_back(new tsr_barrier(128)); tsr_wg_barrier[r][g] = owned.back(); }
    }
    std::vector<std::thread> threads;
    for (int r = 0; r < group; ++r) for (int t = 0; t < THREADS; ++t) threads.emplace_back([=] {
      threadIdx = {(unsigned)t, 0, 0};
      blockIdx = {(unsigned)(x0 + r), (unsigned)y, (unsigned)z};
      tsr_rank = r;
      KERNEL(ARGS);
    });
    for (auto& th : threads) th.join();
    for (auto* b : owned) delete b;
  }
  return TSR_HUNG;
}
"""

_C_TYPES = {"long long": ctypes.c_longlong, "int": ctypes.c_int, "float": ctypes.c_float, "double": ctypes.c_double,
            "bool": ctypes.c_bool}


def _table(a: np.ndarray) -> str:
    return "{" + ", ".join("{" + ", ".join(str(int(v)) for v in row) + "}" for row in a) + "}"


def host_source(kernel: EmittedKernel) -> str:
    """The emitted kernel with the host prelude before it and a launcher after it."""
    a, b, c = (lane_map("mma_sync", r, 16, 8, 16, "bf16") for r in ("a", "b", "acc"))
    shim = (_SHIM.replace("TSR_WAIT_LIMIT_S", str(WAIT_LIMIT_S))
            .replace("{A_LANE}", _table(a.owners[0])).replace("{A_SLOT}", _table(a.owners[1]))
            .replace("{B_LANE}", _table(b.owners[0])).replace("{B_SLOT}", _table(b.owners[1]))
            .replace("{C_ROW}", _table(c.rows)).replace("{C_COL}", _table(c.cols)))
    body = kernel.source.replace("typedef unsigned int tsr_u32;\ntypedef unsigned short tsr_u16;\n", "")
    body = re.sub(r"^ *extern __shared__ .*\btsr_smem\[\];\n", "", body, flags=re.M)  # tsr_smem is the shim's
    if any(p.role in ("tmap", "grid") for p in kernel.params) or "tsr_sbase" in body:
        shim += HOPPER_SHIM.replace("TSR_WAIT_LIMIT_S", str(WAIT_LIMIT_S))
    args = ", ".join(f"*({p.ctype.replace('__restrict__', '').strip()}*)argv[{i}]" for i, p in enumerate(kernel.params))
    launch = (_LAUNCH.replace("THREADS", str(kernel.num_threads)).replace("KERNEL", kernel.name)
              .replace("ARGS", args).replace("CLUSTER", str(kernel.cluster))
              .replace("TSR_HUNG", "tsr_hung.load() ? 1 : 0"))
    group = str(_group(kernel))
    return shim.replace("GROUP", group) + body + launch.replace("GROUP", group)


def _group(kernel: EmittedKernel) -> int:
    """CTAs that run at once: a cluster's, or every CTA of a co-resident kernel (at most `_coresident_ctas`)."""
    if kernel.coresident:
        if kernel.cluster != 1:
            raise D.TesseraError(D.EMIT_UNSUPPORTED, f"kernel {kernel.name}: a co-resident kernel of "
                                                     f"{kernel.cluster}-CTA clusters", hint="use cluster=1")
        return coresident_ctas(kernel)
    return kernel.cluster


def coresident_ctas(kernel: EmittedKernel) -> int:
    """A co-resident split-K kernel's CTAs here: PERSISTENT_CTAS, or its split count if larger (a split waits for
    the tile's other splits, which must then be on other CTAs)."""
    return max(PERSISTENT_CTAS, kernel.splitk)


@lru_cache(maxsize=16)
def _library(source: str) -> ctypes.CDLL:
    cxx = shutil.which("g++")
    if cxx is None:
        raise D.TesseraError(D.CODEGEN_TOOLCHAIN_MISSING, "g++ is not on PATH; the host emulator needs it",
                             hint="install g++ (C++20) or skip host emulation")
    workdir = Path(tempfile.mkdtemp(prefix="tessera-host-"))
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    src, lib = workdir / f"{digest}.cc", workdir / f"{digest}.so"
    src.write_text(source)
    proc = subprocess.run([cxx, "-std=c++20", "-O1", "-fno-strict-aliasing", "-w", "-shared", "-fPIC", "-pthread",
                           str(src), "-o", str(lib)], capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise D.TesseraError(D.CODEGEN_COMPILE_FAILED, "g++ could not compile the host emulation of the kernel:\n"
                                                       + "\n".join(proc.stderr.splitlines()[:20]))
    return ctypes.CDLL(str(lib))


def host_tensor_map(address: int, elem: str, sizes, strides, box, swizzle: int) -> bytes:
    """The host emulator's stand-in for a CUtensorMap: 128 bytes read as host_shim_hopper.HOPPER_SHIM's tsr_tensormap.

    sizes and strides are in elements, one per dim (rank 2 to 5, the last innermost, as
    tessera.runtime.tma.encode takes them).
    """
    from tessera.runtime.tma import ITEMSIZE

    size = ITEMSIZE[elem]
    pad = 5 - len(sizes)  # the outer dims innermost first, then size 1 / pitch 0 up to 3 of them
    outer = [*reversed(sizes[:-2]), *[1] * pad]
    pitches = [*(s * size for s in reversed(strides[:-2])), *[0] * pad]
    raw = struct.pack("<Qqqqiiii3q3q", address, sizes[-2], sizes[-1], strides[-2] * size, box[0], box[1], swizzle,
                      size, *outer, *pitches)
    return raw + bytes(128 - len(raw))


def tensor_map_arg(raw: bytes):
    """A 64-byte aligned ctypes copy of a 128-byte map (what a tsr_tensormap parameter is read from)."""
    buf = (ctypes.c_ubyte * 192)()
    at = -ctypes.addressof(buf) % 64
    ctypes.memmove(ctypes.addressof(buf) + at, raw, 128)
    return buf, ctypes.c_void_p(ctypes.addressof(buf) + at)


WAIT_LIMIT_S = 20  # a barrier or mbarrier wait longer than this on the emulator is a deadlock
PERSISTENT_CTAS = 3  # CTAs a persistent kernel gets here: several tiles each, and both ping-pong consumers busy
PERSISTENT_CLUSTERS = 2  # clusters a cluster kernel gets here: its CTAs stride over the tiles in pairs


def emulated_sms(kernel: EmittedKernel) -> int:
    """The SMs a persistent `kernel` finds here, the one count both the emulator's launch and the runtime's
    derived launch (`compiler.kernel`) use: PERSISTENT_CTAS, PERSISTENT_CLUSTERS whole clusters, or a
    co-resident kernel's `coresident_ctas`."""
    if kernel.coresident:
        return coresident_ctas(kernel)
    return PERSISTENT_CTAS if kernel.cluster == 1 else PERSISTENT_CLUSTERS * kernel.cluster


def _launch_grid(kernel: EmittedKernel, logical: tuple[int, int, int]) -> tuple[int, int, int]:
    """The CTAs the emulator runs: the grid itself, or a persistent kernel's `emulated_sms` (whole clusters)."""
    if not kernel.persistent:
        return logical
    from tessera.runtime.persistent import physical_grid

    return physical_grid(logical, emulated_sms(kernel), kernel.name, kernel.cluster, kernel.splitk,
                         kernel.cluster_axis, kernel.streamk)[0]


def run_on_host(kernel: EmittedKernel, args, grid, scratch: np.ndarray | None = None) -> None:
    """Run `kernel` over `grid` on the CPU; numpy array arguments (views allowed) are updated in place.

    `args` follows the func.func signature (memrefs as numpy arrays, scalars as
    Python numbers); sizes and strides are taken from the arrays, as the runtime would.
    A TMA tensor map is described from its array; a persistent kernel gets the
    logical `grid` in its grid parameters and runs on PERSISTENT_CTAS CTAs (fewer if the grid is smaller);
    split-K scratch is a fresh zeroed buffer, or `scratch` (uint8, large enough), kept by the caller across
    launches as the runtime keeps its own (its counters must come back to zero).
    """
    logical = tuple(grid) + (1,) * (3 - len(tuple(grid)))
    values: list = []
    scratches: list = []  # alive until the launch returns
    arrays = iter(args)
    current = None
    for p in kernel.params:
        if p.role in ("ptr", "value"):
            current = next(arrays)
        if p.role == "ptr":
            if not isinstance(current, np.ndarray) or any(s % current.itemsize for s in current.strides):
                raise D.TesseraError(D.RUNTIME_ARG_INVALID, f"argument {p.name} must be a numpy array with element "
                                                            "strides (a view of a padded array is fine)")
            values.append(ctypes.c_void_p(current.ctypes.data))
        elif p.role == "size":
            values.append(ctypes.c_longlong(current.shape[p.dim]))
        elif p.role == "stride":
            values.append(ctypes.c_longlong(current.strides[p.dim] // current.itemsize))
        elif p.role == "tmap":
            if not 2 <= current.ndim <= 5 or current.strides[-1] != current.itemsize:
                raise D.TesseraError(D.RUNTIME_TMA_INVALID, f"{p.name}: TMA reads arrays of 2 to 5 dims with "
                                                            "contiguous rows")
            raw = host_tensor_map(current.ctypes.data, ELEM_OF_NUMPY[current.dtype.name], current.shape,
                                  tuple(s // current.itemsize for s in current.strides), p.box, p.swizzle)
            values.append(tensor_map_arg(raw))
        elif p.role == "grid":
            values.append(ctypes.c_int(logical[p.dim]))
        elif p.role == "scratch":  # zeroed, as the runtime's Scratch buffer starts
            from tessera.runtime.scratch import scratch_bytes

            head = getattr(p, "head", 0)  # the parameter points past the dynamic tile scheduler's counter
            need = head + scratch_bytes(p.dim, logical, p.per_cta, _launch_grid(kernel, logical))
            if scratch is not None and (scratch.dtype != np.uint8 or scratch.size < need
                                        or not scratch.flags.c_contiguous):
                raise D.TesseraError(D.RUNTIME_ARG_INVALID, f"scratch must be a contiguous uint8 array of at least "
                                                            f"{need} bytes")
            buf = np.zeros(need, np.uint8) if scratch is None else scratch
            scratches.append(buf)
            values.append(ctypes.c_void_p(buf.ctypes.data + head))
        else:
            values.append(_C_TYPES[p.ctype](current))
    argv = (ctypes.c_void_p * len(values))(*[v[1] if isinstance(v, tuple) else ctypes.cast(ctypes.pointer(v),
                                                                                              ctypes.c_void_p)
                                               for v in values])
    launch_library(_library(host_source(kernel)), argv, _launch_grid(kernel, logical), kernel.name)


def launch_library(lib: ctypes.CDLL, argv, grid: tuple[int, int, int], name: str) -> None:
    """Run a host-emulated kernel library over `grid`; its deadlock verdict becomes RUNTIME_LAUNCH_TIMEOUT.

    The one place a host launch's status is read: `run_on_host` and the emulated cuda lane
    (`tessera.compiler.testing.HostKernel`) both launch through it, so no caller can drop the verdict.
    """
    if lib.tsr_host_launch(argv, *grid):
        raise D.TesseraError(D.RUNTIME_LAUNCH_TIMEOUT, f"{name} deadlocked on the host emulator: a barrier or "
                                                       f"mbarrier wait did not complete within {WAIT_LIMIT_S} s; "
                                                       "its outputs are garbage",
                             hint="a thread never reaches a barrier, or an arrival or TMA transaction a barrier "
                                  "counts on never happens (a too-shallow ring, a lost arrival, a missing multicast)")
