// nv.wgacc_store with a mask (`if %m`, an i1 vector in the accumulator's D layout): the elements whose mask slot
// is false are not written (tl.store(..., mask=) in a wgmma epilogue); it parses, verifies and prints back.
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s | tessera-opt | FileCheck %s
// CHECK-LABEL: func.func @masked(
// CHECK: nv.wgacc_store %v, %C[%r, %c] if %m : vector<64xi1> {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
// CHECK: nv.wgacc_store %v, %C[%r, %c] {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
func.func @masked(%v: vector<64xf32>, %m: vector<64xi1>, %C: memref<?x?xf32>, %r: index, %c: index)
    attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a"} {
  nv.wgacc_store %v, %C[%r, %c] if %m : vector<64xi1> {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
  nv.wgacc_store %v, %C[%r, %c] {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
  func.return
}
