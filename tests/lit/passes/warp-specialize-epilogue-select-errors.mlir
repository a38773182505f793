// The wgmma epilogue computes compares, selects, masked stores and atomic adds slot by slot, but a running sum
// along a row (tile.scan) crosses lanes it does not hold: refused at that op with NV_WGMMA_UNSUPPORTED, a
// message that lists what the epilogue takes, and a hint.
// The same with the TMA store epilogue (store=tma), and with whole-tile ping-pong.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 store=registers}' 2>&1 | FileCheck %s
// CHECK: error: NV_WGMMA_{{UNSUPPORTED}}: tile.scan in a warp-specialised consumer: it runs elementwise ops, compares, selects,
// CHECK: hint:
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 store=tma}' 2>&1 | FileCheck %s
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 schedule=pingpong}' 2>&1 | FileCheck %s
func.func @row_test(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
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
  %cs = tile.scan sum 1 %z : !tile.tile<128x128xf32> -> !tile.tile<128x128xf32>
  tile.store %cs, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
