// A per-step mask that is a compare of iota-built index tiles (here the causal `cols <= rows`) is guarded in the
// consumer (passes/ws_masks.py): one scalar test of the tile's bounds (greatest col <= least row), then the
// compare and select only in the branch where some element fails.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2}' | FileCheck %s
// CHECK: func.func @causal_masked
// CHECK: scf.for
// CHECK: nv.wgmma
// CHECK: arith.cmpi sle
// CHECK-NEXT: scf.if {{.*}} -> (vector<64xf32>)
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } else {
// CHECK: nv.cmp
// CHECK: nv.select
// CHECK: scf.yield
// CHECK-NOT: tile.
func.func @causal_masked(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %m0i = arith.index_cast %m0 : index to i32
  %r0 = tile.iota 0 : !tile.tile<128x1xi32>
  %rs = tile.splat %m0i : i32 -> !tile.tile<128x1xi32>
  %rows = tile.add %rs, %r0 : !tile.tile<128x1xi32>
  %init = tile.constant 0.0 : !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%c = %init) -> (!tile.tile<128x128xf32>) {
    %a = tile.load %A[%m0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%k, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %z = tile.constant 0.0 : !tile.tile<128x128xf32>
    %s = tile.mma %a, %b, %z : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
    %ki = arith.index_cast %k : index to i32
    %c1 = tile.iota 1 : !tile.tile<1x128xi32>
    %cs = tile.splat %ki : i32 -> !tile.tile<1x128xi32>
    %cols = tile.add %cs, %c1 : !tile.tile<1x128xi32>
    %cb = tile.broadcast %cols : !tile.tile<1x128xi32> -> !tile.tile<128x128xi32>
    %rb = tile.broadcast %rows : !tile.tile<128x1xi32> -> !tile.tile<128x128xi32>
    %vis = tile.cmp le %cb, %rb : !tile.tile<128x128xi32>
    %m = tile.select %vis, %s, %z : !tile.tile<128x128xf32>
    %d = tile.add %c, %m : !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  tile.store %acc, %C[%m0, %c0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
