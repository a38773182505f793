// nv.wgacc_load of a 1-D memref: a rank-1 bias vector (tl.load(Bias, [n0], (BN,))[None, :] in a kernel) is a
// row broadcast over the wgmma accumulator's rows (broadcast_rows, row 0); it parses, verifies and prints back.
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s | tessera-opt | FileCheck %s
// CHECK-LABEL: func.func @row_vector(
// CHECK: %bv = nv.wgacc_load %bias[%c0, %n0] {n = 128 : i64, broadcast_rows = true, pad = 0.000000e+00 : f64} : memref<?xf16> -> vector<64xf16>
func.func @row_vector(%bias: memref<?xf16>, %n0: index) attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a"} {
  %c0 = arith.constant 0 : index
  %bv = nv.wgacc_load %bias[%c0, %n0] {n = 128 : i64, broadcast_rows = true, pad = 0.0 : f64} : memref<?xf16> -> vector<64xf16>
  func.return
}
