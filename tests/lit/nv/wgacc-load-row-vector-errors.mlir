// A 1-D memref is only a row to broadcast: nv.wgacc_load of one without broadcast_rows would read a 64 x n
// window from a vector, so it is NV_OP_INVALID naming the memref.
// RUN: tessera-opt %s --verify-diagnostics
// RUN: not tessera-opt %s 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.wgacc_load: memref memref<?xf16> must be 2-D
func.func @window_from_a_vector(%bias: memref<?xf16>, %n0: index) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_load: memref memref<?xf16> must be 2-D}}
  %bv = nv.wgacc_load %bias[%c0, %n0] {n = 128 : i64, broadcast_rows = false, pad = 0.0 : f64} : memref<?xf16> -> vector<64xf16>
  func.return
}
