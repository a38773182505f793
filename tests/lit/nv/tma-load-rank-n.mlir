// nv.tma_load of memrefs of rank 3 to 5 (attention's [B, H, S, D]): one leading coordinate per outer dim,
// outermost first, before row and col; evict_first goes with any rank. Parses, verifies and prints back unchanged.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s

// CHECK-LABEL: func.func @loads(
func.func @loads(%Q: memref<?x?x?x?xbf16>, %K: memref<?x?x?xf16>, %V: memref<?x?x?x?x?xf32>, %b: index, %h: index,
                 %i: index, %once: i1) attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a"} {
  // CHECK: nv.tma_load %Q[%b, %h, %i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?x?x?xbf16>
  nv.tma_load %Q[%b, %h, %i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?x?x?xbf16>
  // CHECK-NEXT: nv.tma_load %K[%h, %i, %i], %i evict_first %once {dst = 32768 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?x?xf16>
  nv.tma_load %K[%h, %i, %i], %i evict_first %once {dst = 32768 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?x?xf16>
  // CHECK-NEXT: nv.tma_load %V[%b, %b, %h, %i, %i], %i {dst = 1024 : i64, stage_bytes = 1024 : i64, bar = 65536 : i64, box = array<i64: 8, 4>, swizzle = 0 : i64} : memref<?x?x?x?x?xf32>
  nv.tma_load %V[%b, %b, %h, %i, %i], %i {dst = 1024 : i64, stage_bytes = 1024 : i64, bar = 65536 : i64, box = array<i64: 8, 4>, swizzle = 0 : i64} : memref<?x?x?x?x?xf32>
  func.return
}
