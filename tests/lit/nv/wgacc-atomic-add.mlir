// nv.wgacc_atomic_add: a wgmma accumulator window added into memory element by element with atomicAdd (a
// tl.atomic_add in a tensor-core epilogue: split-K by atomics), masked or not; it parses, verifies and prints back.
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s | tessera-opt | FileCheck %s
// CHECK-LABEL: func.func @adds(
// CHECK: nv.wgacc_atomic_add %v, %C[%r, %c] {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
// CHECK: nv.wgacc_atomic_add %v, %C[%r, %c] if %m : vector<64xi1> {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
func.func @adds(%v: vector<64xf32>, %m: vector<64xi1>, %C: memref<?x?xf32>, %r: index, %c: index)
    attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a"} {
  nv.wgacc_atomic_add %v, %C[%r, %c] {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
  nv.wgacc_atomic_add %v, %C[%r, %c] if %m : vector<64xi1> {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
  func.return
}
