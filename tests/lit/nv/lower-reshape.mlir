// lower-tile-to-nv: tile.reshape keeps a blocked register tile's row-major order and count, so it lowers to
// nothing: the [64] row loaded from a rank-1 weight is the [1, 64] row the broadcast reads (same vector),
// which the broadcast then spreads over the 4 x 64 tile through shared memory as it would a [1, 64] load.
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_80}' | FileCheck %s
// CHECK-LABEL: func.func @row_weight(
// CHECK: %w = nv.load_global %W[%c0] {shape = array<i64: 64>, threads = 128 : i64, pad = 0.000000e+00 : f64} : memref<64xf32> -> vector<1xf32>
// CHECK-NOT: tile.reshape
// CHECK: nv.store_shared %w, %scratch {shape = array<i64: 1, 64>
// CHECK-NOT: tile.
func.func @row_weight(%X: memref<?x64xf32>, %W: memref<64xf32>, %Y: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %pid = tile.program_id 0
  %c4 = arith.constant 4 : index
  %m0 = arith.muli %pid, %c4 : index
  %x = tile.load %X[%m0, %c0] pad 0.0 : memref<?x64xf32> -> !tile.tile<4x64xf32>
  %w = tile.load %W[%c0] pad 0.0 : memref<64xf32> -> !tile.tile<64xf32>
  %row = tile.reshape %w : !tile.tile<64xf32> -> !tile.tile<1x64xf32>
  %wb = tile.broadcast %row : !tile.tile<1x64xf32> -> !tile.tile<4x64xf32>
  %y = tile.mul %x, %wb : !tile.tile<4x64xf32>
  tile.store %y, %Y[%m0, %c0] : !tile.tile<4x64xf32> -> memref<?x64xf32>
  func.return
}
