// A wgacc_store mask has one i1 slot per stored slot (n / 2 per thread): another length is NV_OP_INVALID naming
// the mask.
// RUN: tessera-opt %s --verify-diagnostics
// RUN: not tessera-opt %s 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.wgacc_store: mask vector<32xi1> must hold 64 elements per thread
func.func @short_mask(%v: vector<64xf32>, %m: vector<32xi1>, %C: memref<?x?xf32>, %r: index, %c: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store: mask vector<32xi1> must hold 64 elements per thread}}
  nv.wgacc_store %v, %C[%r, %c] if %m : vector<32xi1> {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
  func.return
}
