// nv.tma_load's optional `evict_first` operand (an i1 decided at run time: no other CTA reads this box) parses,
// verifies and prints back unchanged; without it the op prints as before.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s

// CHECK-LABEL: func.func @loads(
func.func @loads(%B: memref<?x?xbf16>, %i: index, %once: i1)
    attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a", nv.smem_bytes = 65600 : i64} {
  // CHECK: nv.tma_load %B[%i, %i], %i evict_first %once {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  nv.tma_load %B[%i, %i], %i evict_first %once {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  // CHECK-NEXT: nv.tma_load %B[%i, %i], %i {dst = 32768 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  nv.tma_load %B[%i, %i], %i {dst = 32768 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  func.return
}
