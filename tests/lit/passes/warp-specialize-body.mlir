// An accumulator that starts from a loaded tile (C += A @ B^T) takes the general loop body of warp-specialize
// (passes/ws_body.py): the init is loaded on the consumers' registers in the wgmma D layout, then the K-loop.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3}' | FileCheck %s
// CHECK: func.func @acc_from_c
// CHECK-SAME: nv.num_threads = 384
// CHECK: nv.setmaxnreg
// CHECK: nv.tma_load
// CHECK: nv.wgacc_load
// CHECK: nv.wgmma
// CHECK: nv.wgacc_store
// CHECK-NOT: tile.
// C += A @ B: the accumulator starts from C, not from zero.
func.func @acc_from_c(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %init = tile.load %C[%m0, %n0] pad 0.0 : memref<?x?xf32> -> !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}

