// nv.wgacc_atomic_add adds what atomicAdd takes on every target arch: f32, f64 or i32; a bf16 window is
// NV_OP_INVALID naming the type.
// RUN: tessera-opt %s --verify-diagnostics
// RUN: not tessera-opt %s 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.wgacc_atomic_add: atomicAdd takes f32, f64 or i32, not bf16
func.func @bf16_adds(%v: vector<64xbf16>, %C: memref<?x?xbf16>, %r: index, %c: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_atomic_add: atomicAdd takes f32, f64 or i32, not bf16}}
  nv.wgacc_atomic_add %v, %C[%r, %c] {n = 128 : i64} : vector<64xbf16>, memref<?x?xbf16>
  func.return
}
