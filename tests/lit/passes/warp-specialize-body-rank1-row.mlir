// The general loop body's registers hold a rank-1 row (a bias vector, tl.load(Bias, [n0], (BN,))) as the
// broadcast row it becomes: the load is nv.wgacc_load of row 0 with broadcast_rows, the reshape to [1, N] and the
// broadcast over the tile move nothing. Negative: warp-specialize-body-rank1-row-errors.mlir.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 store=registers}' | FileCheck %s
// CHECK-LABEL: func.func @rank1_bias(
// CHECK:         %[[ROW:[0-9]+]] = nv.wgacc_load %bias[%{{[0-9]+}}, %n0_1] {n = 128 : i64, broadcast_rows = true, pad = 0.000000e+00 : f64} : memref<?xf32> -> vector<64xf32>
// CHECK-NEXT:    %{{[0-9]+}} = nv.map "add" %{{[0-9]+}}, %[[ROW]] : vector<64xf32>
// CHECK-NOT:     tile.
func.func @rank1_bias(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %bias: memref<?xf32>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %zero = tile.constant 0.0 : !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (!tile.tile<128x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  %bv = tile.load %bias[%n0] pad 0.0 : memref<?xf32> -> !tile.tile<128xf32>
  %row = tile.reshape %bv : !tile.tile<128xf32> -> !tile.tile<1x128xf32>
  %bb = tile.broadcast %row : !tile.tile<1x128xf32> -> !tile.tile<128x128xf32>
  %x = tile.add %acc, %bb : !tile.tile<128x128xf32>
  tile.store %x, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
