// The wgmma epilogue takes compares and selects slot-wise, like any elementwise op (slot i of every operand is the
// same element in wgmma's D layout): relu'(z) * dY, the backward of a fused relu, stays in registers.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 store=registers}' | FileCheck %s
// CHECK: func.func @relu_grad
// CHECK: nv.wgacc_load %DY
// CHECK: nv.cmp "gt" %{{.*}}, %{{.*}} : vector<64xf32> -> vector<64xi1>
// CHECK: nv.select %{{.*}}, %{{.*}}, %{{.*}} : vector<64xi1>, vector<64xf32>
// CHECK: nv.wgacc_store
// CHECK-NOT: tile.
func.func @relu_grad(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %DY: memref<?x?xf32>, %C: memref<?x?xf32>) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %zero = tile.constant 0.0 : !tile.tile<128x128xf32>
  %z = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %zero) -> (!tile.tile<128x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %d = tile.mma %a, %b, %acc : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  %dy = tile.load %DY[%m0, %n0] pad 0.0 : memref<?x?xf32> -> !tile.tile<128x128xf32>
  %pos = tile.cmp gt %z, %zero : !tile.tile<128x128xf32>
  %g = tile.select %pos, %dy, %zero : !tile.tile<128x128xf32>
  tile.store %g, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
