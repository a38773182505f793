// nv.cluster_splitk_fixup (split-K inside a 2-CTA cluster) parses, verifies and prints back unchanged;
// lower-tile-to-nv keeps it (its CUDA: tests/unit/test_emit_hopper.py).
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_90a}' | FileCheck %s --check-prefix=LOWERED
// LOWERED: nv.cluster_splitk_fixup

// CHECK-LABEL: func.func @fixup(
func.func @fixup(%C: memref<?x?xf32>, %rank: index, %ordinal: index)
    attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a", nv.smem_bytes = 66592 : i64, nv.cluster = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = nv.fill {value = 2.0 : f64} : vector<64xf32>
  // Consumer %c1 hands its 64 x 128 block over through slot %c1 of two (32 KiB each from 1024; barriers at
  // 66560 and 66576).
  // CHECK: %sum, %last = nv.cluster_splitk_fixup %acc, %rank, %ordinal, %c1, %c1 {n = 128 : i64, slots = 2 : i64, buffer = 1024 : i64, full = 66560 : i64, empty = 66576 : i64} : vector<64xf32> -> vector<64xf32>
  %sum, %last = nv.cluster_splitk_fixup %acc, %rank, %ordinal, %c1, %c1 {n = 128 : i64, slots = 2 : i64, buffer = 1024 : i64, full = 66560 : i64, empty = 66576 : i64} : vector<64xf32> -> vector<64xf32>
  // CHECK-NEXT: scf.if %last {
  scf.if %last {
    nv.wgacc_store %sum, %C[%c0, %c0] {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
  }
  func.return
}
