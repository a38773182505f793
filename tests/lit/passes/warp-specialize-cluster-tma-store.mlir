// warp-specialize{cluster=2} with the TMA store epilogue (store=tma, the default): the CTAs of a 2-CTA cluster
// take tile rows 2p and 2p+1 of one column; each loads half of the shared B box and multicasts it to both, so a
// slot is free only when the consumers of both CTAs are done (4 arrivals), and each consumer arrives on the
// `empty` barrier of both CTAs. Barriers exist before any peer signals them (cluster_sync after init) and no CTA
// exits while a peer may still reach it (cluster_sync at the end). The epilogue writes the f32 tile through two
// 64 x 32 staging boxes per consumer at 147456 (after the B slots) and TMA stores, only on a tile that exists
// (the spare CTA of an odd row count loads for its peer and stores nothing), and drains before exit.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 cluster=2}' | FileCheck %s
// The named pipeline forwards cluster= and store= to warp-specialize.
// RUN: tessera-opt %s -p 'tessera-lower-to-nv{arch=sm_90a stages=3 cluster=2}' | FileCheck %s
// With store=registers the epilogue writes from registers: no staging in the shared-memory map, no TMA store.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 cluster=2 store=registers}' | FileCheck %s --check-prefix=REGS
// REGS: nv.smem_bytes = 147504 : i64
// REGS-NOT: nv.wgacc_store_tma
// REGS-NOT: nv.tma_store_drain
// REGS: nv.wgacc_store
// Option values outside their sets are coded errors naming the option.
// RUN: not tessera-opt %s -p 'warp-specialize{arch=sm_90a cluster=4}' 2>&1 | FileCheck %s --check-prefix=CLUSTER
// CLUSTER: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: cluster=4 is not one of 1, 2 (CTAs per thread-block cluster)
// RUN: not tessera-opt %s -p 'warp-specialize{arch=sm_90a store=smem}' 2>&1 | FileCheck %s --check-prefix=STORE
// STORE: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: store=smem is not one of tma, registers

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:  attributes {nv.num_threads = 384 : i64, nv.smem_bytes = 180272 : i64, nv.arch = "sm_90a", nv.cluster = 2 : i64}
// CHECK-NEXT:  nv.mbarrier_init {base = 180224 : i64, count = 3 : i64, arrivals = 1 : i64}
// CHECK-NEXT:  nv.mbarrier_init {base = 180248 : i64, count = 3 : i64, arrivals = 4 : i64}
// CHECK-NEXT:  nv.cluster_sync
// The producer: the tile pair of cluster blockIdx / 2, this CTA's row in it by its rank.
// CHECK:       nv.cluster_rank : index
// CHECK:       nv.mbarrier_expect_tx %[[S:[0-9]+]] {base = 180224 : i64, bytes = 49152 : i64}
// CHECK-NEXT:  nv.tma_load %A[%m0, %[[K:[0-9]+]]], %[[S]] evict_first %{{[0-9]+}} {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 180224 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
// CHECK:       nv.tma_load %B[%n0, %[[K]]], %[[S]] {dst = 49152 : i64, stage_bytes = 32768 : i64, bar = 180224 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64, multicast = 3 : i64} : memref<?x?xbf16>
// CHECK:       nv.tma_load %B[%{{[0-9]+}}, %[[K]]], %[[S]] {dst = 65536 : i64, stage_bytes = 32768 : i64, bar = 180224 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64, multicast = 3 : i64} : memref<?x?xbf16>
// The consumers.
// CHECK:       nv.cluster_rank : index
// CHECK:       nv.mbarrier_arrive %{{[0-9]+}} {base = 180248 : i64, per = "warpgroup", cluster = 2 : i64}
// CHECK:       nv.mbarrier_arrive %{{[0-9]+}} {base = 180248 : i64, per = "warpgroup", cluster = 2 : i64}
// CHECK:       scf.if %{{[0-9]+}} {
// CHECK:       nv.wgacc_store_tma %{{[0-9]+}}, %C[%{{[0-9]+}}, %{{[0-9a-z_]+}}], %{{[0-9]+}} {n = 256 : i64, stage = 147456 : i64} : vector<128xf32>, memref<?x?xf32>
// CHECK:       nv.tma_store_drain
// CHECK:       nv.cluster_sync
// CHECK-NEXT:  func.return
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %bias: memref<1x?xf32>, %alpha: f32) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c256 : index
  %init = tile.constant 0.0 : !tile.tile<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x256xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %b = tile.transpose %bt : !tile.tile<256x64xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<128x256xf32>
    scf.yield %d : !tile.tile<128x256xf32>
  }
  %al = tile.splat %alpha : f32 -> !tile.tile<128x256xf32>
  %scaled = tile.mul %acc, %al : !tile.tile<128x256xf32>
  %b1 = tile.load %bias[%c0, %n0] pad 0.0 : memref<1x?xf32> -> !tile.tile<1x256xf32>
  %bb = tile.broadcast %b1 : !tile.tile<1x256xf32> -> !tile.tile<128x256xf32>
  %x = tile.add %scaled, %bb : !tile.tile<128x256xf32>
  tile.store %x, %C[%m0, %n0] : !tile.tile<128x256xf32> -> memref<?x?xf32>
  func.return
}
