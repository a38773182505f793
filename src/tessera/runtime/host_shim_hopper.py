"""The host emulator's C++ for the sm_90 ops (emit_hopper, emit/splitk, emit/wgacc): mbarriers, TMA boxes,
wgmma, the split-K and cluster fixups' helpers; `host_emulator.host_source` puts it after the base shim when
a kernel uses tensor maps or shared-memory barriers. Kept apart from the launcher so neither module grows into
the other."""

# sm_90 (emit_hopper): mbarriers as counters under one lock, TMA as a synchronous swizzled box copy that then
# completes its bytes on the barrier, wgmma as each thread computing its own accumulator slots from the
# operands that the descriptors address (tessera.layouts.smem_swizzle's address model). Shared addresses are
# offsets into tsr_smem. The wait/fence/commit/setmaxnreg PTX is TSR_DEVICE_ASM: nothing here.
HOPPER_SHIM = r"""
#include <atomic>
#include <chrono>
#include <mutex>
#define __grid_constant__
#define TSR_DEVICE_ASM(...) ((void)0)
static inline unsigned __cvta_generic_to_shared(const void* p) { return (unsigned)((const unsigned char*)p - tsr_smem); }
struct alignas(8) float2 { float x, y; };
static inline float2 make_float2(float x, float y) { return {x, y}; }
// host_tensor_map's 128 bytes (the size of a CUtensorMap, so the runtime packs it the same way): the last two dims,
// then up to 3 outer dims, innermost first (size 1, pitch 0 where the tensor has fewer).
struct alignas(64) tsr_tensormap {
  const unsigned char* base; long long rows, cols, pitch; int box_rows, box_cols, swizzle, elem;
  long long outer[3], outer_pitch[3]; unsigned char pad[32];
};
static_assert(sizeof(tsr_tensormap) == 128, "a tensor map is 128 bytes");
struct tsr_mbar_state { int count, pending; long long tx; unsigned completed; };
static tsr_mbar_state tsr_mbars_of[TSR_MAX_CLUSTER][232448 / 8];
#define tsr_mbars (tsr_mbars_of[tsr_rank])
static std::mutex tsr_mbar_mutex;
static inline void tsr_mbar_settle(tsr_mbar_state& b) { if (b.pending == 0 && b.tx == 0) { b.completed++; b.pending = b.count; } }
static inline void tsr_mbar_init(unsigned bar, unsigned count) {
  std::lock_guard<std::mutex> g(tsr_mbar_mutex); tsr_mbars[bar / 8] = {(int)count, (int)count, 0, 0};
}
static inline void tsr_mbar_arrive(unsigned bar) {
  std::lock_guard<std::mutex> g(tsr_mbar_mutex); tsr_mbar_state& b = tsr_mbars[bar / 8]; b.pending--; tsr_mbar_settle(b);
}
static inline void tsr_mbar_expect_tx(unsigned bar, unsigned bytes) {
  std::lock_guard<std::mutex> g(tsr_mbar_mutex); tsr_mbar_state& b = tsr_mbars[bar / 8];
  b.tx += bytes; b.pending--; tsr_mbar_settle(b);
}
// A peer's bytes may land before this CTA's expect_tx: tx goes negative, and the pending arrival keeps the phase open.
static inline void tsr_mbar_complete_tx(int rank, unsigned bar, unsigned bytes) {
  std::lock_guard<std::mutex> g(tsr_mbar_mutex); tsr_mbar_state& b = tsr_mbars_of[rank][bar / 8]; b.tx -= bytes; tsr_mbar_settle(b);
}
static inline void tsr_mbar_arrive_cluster(unsigned bar, unsigned rank) {
  std::lock_guard<std::mutex> g(tsr_mbar_mutex); tsr_mbar_state& b = tsr_mbars_of[rank][bar / 8]; b.pending--; tsr_mbar_settle(b);
}
static inline unsigned tsr_cluster_rank() { return (unsigned)tsr_rank; }
static inline void tsr_cluster_sync() { tsr_cluster_barrier->arrive_and_wait(); }
// try_wait.parity: the phase of that parity has completed when the current phase's parity differs; a wait gives
// up as a barrier does (tsr_hung).
static inline void tsr_mbar_wait(unsigned bar, unsigned parity) {
  const auto start = std::chrono::steady_clock::now();
  while (!tsr_hung.load()) {
    { std::lock_guard<std::mutex> g(tsr_mbar_mutex); if ((tsr_mbars[bar / 8].completed & 1u) != (parity & 1u)) return; }
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(TSR_WAIT_LIMIT_S)) tsr_hung = true;
    std::this_thread::yield();
  }
}
static inline unsigned tsr_swizzle(unsigned a, int width) { const unsigned m = width / 16 - 1; return a ^ (((a >> 7) & m) << 4); }
// The byte offset of the outer coordinates o[0..n) (innermost first), or -1 when one lies past its dim (the box, one
// index deep there, is then wholly outside).
static inline long long tsr_outer_at(const tsr_tensormap* t, const int* o, int n) {
  long long at = 0;
  for (int d = 0; d < n; ++d) { if (o[d] < 0 || o[d] >= t->outer[d]) return -1; at += o[d] * t->outer_pitch[d]; }
  return at;
}
// One TMA box between the tensor (at byte offset `outer` for its outer coordinates) and the swizzled box at `box` in
// a CTA's shared memory: a load fills past the tensor's edges with zero, a store drops what lies past them.
static inline void tsr_box_copy(const tsr_tensormap* t, unsigned char* smem, unsigned box, int c0, int c1, bool load,
                                long long outer = 0) {
  const int row_bytes = t->box_cols * t->elem;
  const unsigned char* base = t->base + (outer > 0 ? outer : 0);
  for (int r = 0; r < t->box_rows; ++r) for (int c = 0; c < t->box_cols; ++c) {
    const long long gr = (long long)c1 + r, gc = (long long)c0 + c;
    const unsigned a = t->swizzle ? tsr_swizzle(box + r * row_bytes + c * t->elem, t->swizzle) : box + r * row_bytes + c * t->elem;
    const bool inside = outer >= 0 && gr >= 0 && gr < t->rows && gc >= 0 && gc < t->cols;
    if (inside && load) std::memcpy(smem + a, base + gr * t->pitch + gc * t->elem, t->elem);
    else if (inside) std::memcpy(const_cast<unsigned char*>(base) + gr * t->pitch + gc * t->elem, smem + a, t->elem);
    else if (load) std::memset(smem + a, 0, t->elem);
  }
}
static inline void tsr_tma_box(int rank, unsigned dst, const tsr_tensormap* t, int c0, int c1, unsigned bar,
                               long long outer = 0) {
  tsr_box_copy(t, tsr_smem_of[rank], dst, c0, c1, true, outer);
  tsr_mbar_complete_tx(rank, bar, t->box_rows * t->box_cols * t->elem);
}
static inline void tsr_tma_load_2d(unsigned dst, const tsr_tensormap* t, int c0, int c1, unsigned bar) {
  tsr_tma_box(tsr_rank, dst, t, c0, c1, bar);
}
static inline void tsr_tma_load_2d_evict_first(unsigned dst, const tsr_tensormap* t, int c0, int c1, unsigned bar) {
  tsr_tma_box(tsr_rank, dst, t, c0, c1, bar);  // a cache hint: the same box
}
// Boxes of 3- to 5-D tensors: c2.. are the outer coordinates, innermost first; the hint variants are the same box.
static inline void tsr_tma_load_3d(unsigned dst, const tsr_tensormap* t, int c0, int c1, int c2, unsigned bar) {
  const int o[] = {c2}; tsr_tma_box(tsr_rank, dst, t, c0, c1, bar, tsr_outer_at(t, o, 1));
}
static inline void tsr_tma_load_4d(unsigned dst, const tsr_tensormap* t, int c0, int c1, int c2, int c3, unsigned bar) {
  const int o[] = {c2, c3}; tsr_tma_box(tsr_rank, dst, t, c0, c1, bar, tsr_outer_at(t, o, 2));
}
static inline void tsr_tma_load_5d(unsigned dst, const tsr_tensormap* t, int c0, int c1, int c2, int c3, int c4,
                                   unsigned bar) {
  const int o[] = {c2, c3, c4}; tsr_tma_box(tsr_rank, dst, t, c0, c1, bar, tsr_outer_at(t, o, 3));
}
#define tsr_tma_load_3d_evict_first tsr_tma_load_3d
#define tsr_tma_load_4d_evict_first tsr_tma_load_4d
#define tsr_tma_load_5d_evict_first tsr_tma_load_5d
static inline void tsr_tma_load_2d_multicast(unsigned dst, const tsr_tensormap* t, int c0, int c1, unsigned bar,
                                             unsigned short mask) {
  for (int r = 0; r < TSR_MAX_CLUSTER; ++r) if (mask >> r & 1) tsr_tma_box(r, dst, t, c0, c1, bar);
}
// The TMA store epilogue: the copy is synchronous, so the bulk-group waits and the proxy fence wait for nothing.
static inline void tsr_tma_store_2d(const tsr_tensormap* t, int c0, int c1, unsigned src) {
  tsr_box_copy(t, tsr_smem, src, c0, c1, false);
}
static inline void tsr_bulk_commit() {}
static inline void tsr_bulk_wait_read(int) {}
static inline void tsr_bulk_wait_all() {}
static inline void tsr_fence_proxy_async() {}
static inline void tsr_st_shared_u32(unsigned a, unsigned v) { std::memcpy(tsr_smem + a, &v, 4); }
static inline void tsr_st_shared_f32x2(unsigned a, float x, float y) { float v[2] = {x, y}; std::memcpy(tsr_smem + a, v, 8); }
// bar.sync / bar.arrive id, n: the hardware's counting barriers. Arrivals and syncs on `id` add up; the n-th opens
// the barrier (every waiting sync returns) and the count starts again, so a warpgroup can hand another a turn.
static inline void tsr_named_bar(unsigned id, unsigned n) { tsr_named[tsr_rank][id & 15].arrive(n, true); }
static inline void tsr_named_arrive(unsigned id, unsigned n) { tsr_named[tsr_rank][id & 15].arrive(n, false); }
// nv.splitk_fixup: CTAs run one after another (a cluster's at once), so plain accesses and a seq_cst counter do.
static inline void tsr_st_cg_f32x4(float* p, float a, float b, float c, float d) { p[0] = a; p[1] = b; p[2] = c; p[3] = d; }
static inline void tsr_ld_cg_f32x4(const float* p, float* q) { std::memcpy(q, p, 16); }
static inline void tsr_fence_gpu() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static inline unsigned tsr_atom_add_u32(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline void tsr_st_u32_relaxed(unsigned* p, unsigned v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
// fixup=scatter: a co-resident kernel's CTAs all run at once here, so the count arrives; a wait gives up as a
// barrier does (tsr_hung)
static inline void tsr_wait_count_u32(const unsigned* p, unsigned n) {
  const auto start = std::chrono::steady_clock::now();
  while (!tsr_hung.load() && __atomic_load_n(p, __ATOMIC_SEQ_CST) < n) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(TSR_WAIT_LIMIT_S)) tsr_hung = true;
    std::this_thread::yield();
  }
}
static inline unsigned tsr_ld_shared_u32(unsigned a) { unsigned v; std::memcpy(&v, tsr_smem + a, 4); return v; }
// nv.cluster_splitk_fixup: a store into CTA `rank`'s shared memory that completes its bytes on that CTA's barrier.
static inline void tsr_st_async_f32x4(unsigned a, unsigned bar, unsigned rank, float x, float y, float z, float w) {
  const float v[4] = {x, y, z, w}; std::memcpy(tsr_smem_of[rank] + a, v, 16); tsr_mbar_complete_tx((int)rank, bar, 16);
}
static inline void tsr_ld_shared_f32x4(unsigned a, float* q) { std::memcpy(q, tsr_smem + a, 16); }
static inline void tsr_mbar_wait_cluster(unsigned bar, unsigned parity) { tsr_mbar_wait(bar, parity); }
static inline void tsr_mbar_arrive_remote(unsigned bar, unsigned rank) { tsr_mbar_arrive_cluster(bar, rank); }
static inline void tsr_warpgroup_sync() { tsr_wg_barrier[tsr_rank][threadIdx.x >> 7]->arrive_and_wait(); }
static inline float tsr_smem_half(unsigned a, int bf) {
  tsr_u16 h; std::memcpy(&h, tsr_smem + a, 2); return bf ? __uint_as_float((unsigned)h << 16) : tsr_f16_f32(h);
}
// The byte a swizzled descriptor names for (row, k), row along M or N. K-major: start + (row / 8) * SBO +
// (row % 8) * W + 2k; MN-major (trans): start + (2 row / W) * LBO + (k / 8) * SBO + (k % 8) * W + 2 row % W.
static inline unsigned tsr_desc_addr(unsigned long long d, int row, int k, int trans) {
  const unsigned start = (unsigned)(d & 0x3FFF) << 4, lbo = (unsigned)((d >> 16) & 0x3FFF) << 4;
  const unsigned sbo = (unsigned)((d >> 32) & 0x3FFF) << 4;
  const int mode = (int)(d >> 62), width = mode == 1 ? 128 : mode == 2 ? 64 : 32;
  if (mode == 0) std::abort();  // the interleaved layout is never emitted
  if (trans)
    return tsr_swizzle(start + (2 * row / width) * lbo + (k >> 3) * sbo + (k & 7) * width + (2 * row) % width, width);
  return tsr_swizzle(start + (row >> 3) * sbo + (row & 7) * width + 2 * k, width);
}
static inline void tsr_wgmma_host(float* d, int n, unsigned long long da, unsigned long long db, int bf, int ta = 0,
                                  int tb = 0) {
  const int t = threadIdx.x & 127, w = t >> 5, l = t & 31;
  for (int i = 0; i < n / 2; ++i) {
    const int row = 16 * w + (l >> 2) + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * (l & 3) + (i & 1);
    float acc = d[i];
    for (int k = 0; k < 16; ++k)
      acc += tsr_smem_half(tsr_desc_addr(da, row, k, ta), bf) * tsr_smem_half(tsr_desc_addr(db, col, k, tb), bf);
    d[i] = acc;
  }
}
"""
