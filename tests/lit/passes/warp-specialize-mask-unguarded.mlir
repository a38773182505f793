// A mask that is not a compare of index tiles (here the scores' own sign) has no scalar test: the consumer keeps
// the plain per-element compare and select, and no guarded branch (passes/ws_masks.py).
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2}' | FileCheck %s
// CHECK: func.func @value_masked
// CHECK: nv.wgmma
// CHECK-NOT: -> (vector<64xf32>)
// CHECK: nv.cmp
// CHECK-NEXT: nv.select
// CHECK-NOT: -> (vector<64xf32>)
// CHECK: nv.wgacc_store
func.func @value_masked(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %init = tile.constant 0.0 : !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%c = %init) -> (!tile.tile<128x128xf32>) {
    %a = tile.load %A[%m0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%k, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %z = tile.constant 0.0 : !tile.tile<128x128xf32>
    %s = tile.mma %a, %b, %z : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
    %pos = tile.cmp gt %s, %z : !tile.tile<128x128xf32>
    %m = tile.select %pos, %s, %z : !tile.tile<128x128xf32>
    %d = tile.add %c, %m : !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  tile.store %acc, %C[%m0, %c0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
