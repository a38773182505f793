// warp-specialize{cluster=2 multicast=k}: split-K inside a 2-CTA cluster. The cluster walks single tiles (the
// launch attribute nv.cluster_axis = -1: no grid axis is halved); rank r of the pair runs K split r of 2 (K steps
// [r * per, min(K, (r + 1) * per)), per = ceil(steps / 2)), in the producer and the consumers alike. Before the
// epilogue each consumer hands its 64-row block to nv.cluster_splitk_fixup with its rank, the tile's ordinal in
// its walk ((t - first) / step: the barriers' phase) and its slot; only rank 0 (`last`) runs the epilogue, on the
// sum. Shared memory gains rank 0's receive slots (two 64 x 128 f32 blocks from 131120) and their full / empty
// mbarriers (one arrival each), initialised before the cluster sync that lets the peer reach them.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 cluster=2 multicast=k}' | FileCheck %s
// The named pipeline forwards the knobs.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 cluster=2 multicast=k}' > %t.direct
// RUN: tessera-opt %s -p 'tessera-lower-to-nv{arch=sm_90a stages=3 cluster=2 multicast=k}' > %t.named
// RUN: diff %t.direct %t.named
// multicast=b (the default) pairs tile rows and multicasts B: no fixup.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 cluster=2}' | FileCheck %s --check-prefix=PAIRB
// PAIRB-NOT: nv.cluster_splitk_fixup
// PAIRB-NOT: nv.cluster_axis

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:  nv.smem_bytes = 196688 : i64, nv.arch = "sm_90a", nv.cluster = 2 : i64, nv.cluster_axis = -1 : i64}
// CHECK:       nv.mbarrier_init {base = 196656 : i64, count = 2 : i64, arrivals = 1 : i64}
// CHECK-NEXT:  nv.mbarrier_init {base = 196672 : i64, count = 2 : i64, arrivals = 1 : i64}
// CHECK-NEXT:  nv.cluster_sync
// The producer: its rank is its split.
// CHECK:       %[[PR:[0-9]+]] = nv.cluster_rank : index
// CHECK:       arith.muli %[[PR]], %{{[0-9]+}} : index
// CHECK:       %[[HI:[0-9]+]] = arith.minsi %K, %{{[0-9]+}} : index
// CHECK:       scf.for %{{[0-9]+}} = %{{[0-9]+}} to %[[HI]] step %c64
// CHECK:       nv.tma_load %A
// The consumers: the same split, then the fixup and the epilogue on rank 0 only.
// CHECK:       nv.setmaxnreg {regs = 232 : i64, action = "inc"}
// CHECK:       %[[CR:[0-9]+]] = nv.cluster_rank : index
// CHECK:       %[[FIRST:[0-9]+]] = arith.divsi %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK:       %[[STEP:[0-9]+]] = arith.divsi %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK:       scf.for %[[T:[0-9]+]] = %[[FIRST]] to %{{[0-9]+}} step %[[STEP]]
// CHECK:       arith.muli %[[CR]], %{{[0-9]+}} : index
// CHECK:       nv.wgmma
// CHECK:       %[[N:[0-9]+]] = arith.subi %[[T]], %[[FIRST]] : index
// CHECK-NEXT:  %[[ORD:[0-9]+]] = arith.divsi %[[N]], %[[STEP]] : index
// CHECK-NEXT:  %[[SUM:[0-9]+]], %[[LAST:[0-9]+]] = nv.cluster_splitk_fixup %{{[0-9]+}}, %[[CR]], %[[ORD]], %[[C:[0-9]+]], %[[C]] {n = 128 : i64, slots = 2 : i64, buffer = 131120 : i64, full = 196656 : i64, empty = 196672 : i64} : vector<64xf32> -> vector<64xf32>
// CHECK-NEXT:  scf.if %[[LAST]] {
// CHECK:       nv.wgacc_store_tma %[[SUM]]
// CHECK:       nv.cluster_sync
// CHECK-NEXT:  func.return
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %init = tile.constant 0.0 : !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
