// The thread-block cluster ops (rank, cluster-wide sync, multicast TMA, arrivals on every CTA's barrier) and
// the TMA store epilogue ops parse, verify and print back unchanged; lower-tile-to-nv{arch=sm_90a} keeps them.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_90a}' | FileCheck %s --check-prefix=LOWERED
// LOWERED: nv.cluster_sync
// LOWERED: nv.wgacc_store_tma

// CHECK-LABEL: func.func @cluster_and_tma_store(
func.func @cluster_and_tma_store(%B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %W: memref<?x?xf32>, %D: memref<?x?xbf16>)
    attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a", nv.cluster = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: %r = nv.cluster_rank : index
  %r = nv.cluster_rank : index
  // CHECK-NEXT: nv.cluster_sync
  nv.cluster_sync
  // Rank r loads rows [128 r, 128 r + 128) of a 256-row B box and multicasts them to both CTAs.
  // CHECK-NEXT: nv.tma_load %B[%c0, %c0], %c0 {dst = 65536 : i64, stage_bytes = 32768 : i64, bar = 229376 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64, multicast = 3 : i64} : memref<?x?xbf16>
  nv.tma_load %B[%c0, %c0], %c0 {dst = 65536 : i64, stage_bytes = 32768 : i64, bar = 229376 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64, multicast = 3 : i64} : memref<?x?xbf16>
  // A consumer hands a slot back to the producers of both CTAs.
  // CHECK-NEXT: nv.mbarrier_arrive %c0 {base = 229408 : i64, per = "warpgroup", cluster = 2 : i64}
  nv.mbarrier_arrive %c0 {base = 229408 : i64, per = "warpgroup", cluster = 2 : i64}
  // The output in 64 x 64 bf16 boxes (and 64 x 32 f32 boxes) through consumer %c1's staging buffers.
  %v = nv.fill {value = 1.0 : f64} : vector<128xbf16>
  // CHECK: nv.wgacc_store_tma %v, %C[%c0, %c0], %c1 {n = 256 : i64, stage = 196608 : i64} : vector<128xbf16>, memref<?x?xbf16>
  nv.wgacc_store_tma %v, %C[%c0, %c0], %c1 {n = 256 : i64, stage = 196608 : i64} : vector<128xbf16>, memref<?x?xbf16>
  %f = nv.fill {value = 2.0 : f64} : vector<16xf32>
  // CHECK: nv.wgacc_store_tma %f, %W[%c1, %c0], %c0 {n = 32 : i64, stage = 196608 : i64} : vector<16xf32>, memref<?x?xf32>
  nv.wgacc_store_tma %f, %W[%c1, %c0], %c0 {n = 32 : i64, stage = 196608 : i64} : vector<16xf32>, memref<?x?xf32>
  // n = 160 bf16 is not whole 128-byte rows: five 64 x 32 boxes of 64-byte rows (64-byte swizzle).
  %h = nv.fill {value = 3.0 : f64} : vector<80xbf16>
  // CHECK: nv.wgacc_store_tma %h, %D[%c0, %c0], %c1 {n = 160 : i64, stage = 196608 : i64} : vector<80xbf16>, memref<?x?xbf16>
  nv.wgacc_store_tma %h, %D[%c0, %c0], %c1 {n = 160 : i64, stage = 196608 : i64} : vector<80xbf16>, memref<?x?xbf16>
  // CHECK-NEXT: nv.tma_store_drain
  nv.tma_store_drain
  // CHECK-NEXT: nv.cluster_sync
  nv.cluster_sync
  func.return
}
