// A rank-1 row reshaped to a [BM, 1] column: the consumer's registers hold rank-1 values as rows of the D layout
// only, so the reshape is refused at its op with a coded error and a hint.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 store=registers}' 2>&1 | FileCheck %s
// CHECK: error: NV_WGMMA_{{UNSUPPORTED}}: tile.reshape of a cols value to 128x1: a consumer reshapes rank-1 rows to [1, N] only
// CHECK: hint: use the row as x[None, :]
func.func @rank1_column(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %bias: memref<?xf32>, %C: memref<?x?xf32>, %K: index) {
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
  %row = tile.reshape %bv : !tile.tile<128xf32> -> !tile.tile<128x1xf32>
  %bb = tile.broadcast %row : !tile.tile<128x1xf32> -> !tile.tile<128x128xf32>
  %x = tile.add %acc, %bb : !tile.tile<128x128xf32>
  tile.store %x, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
