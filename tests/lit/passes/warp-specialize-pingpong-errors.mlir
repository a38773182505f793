// schedule=pingpong keeps a whole 128 x BN tile per consumer warpgroup: BN = 256 would need 256 accumulator
// registers per thread, so it is refused at the mma with a hint.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 schedule=pingpong}' 2>&1 | FileCheck %s
// CHECK: error: NV_WGMMA_{{UNSUPPORTED}}: schedule=pingpong with a 128x256 tile
// CHECK: hint: use BM=128, BN<=128 for pingpong, or schedule=cooperative
builtin.module {
  func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %alpha: f32) {
    %0 = tile.program_id 0
    %1 = arith.constant 128 : index
    %2 = tile.program_id 1
    %3 = arith.constant 256 : index
    %4 = arith.constant 0 : index
    %5 = arith.constant 1 : index
    %6 = memref.dim %A, %5 : memref<?x?xbf16>
    %7 = arith.constant 64 : index
    %8 = arith.muli %0, %1 : index
    %9 = arith.muli %2, %3 : index
    %10 = tile.constant 0.0 : !tile.tile<128x256xf32>
    %acc = scf.for %k = %4 to %6 step %7 iter_args(%acc_1 = %10) -> (!tile.tile<128x256xf32>) {
      %11 = tile.load %A[%8, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
      %12 = tile.load %B[%9, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
      %13 = tile.transpose %12 : !tile.tile<256x64xbf16> -> !tile.tile<64x256xbf16>
      %14 = tile.mma %11, %13, %acc_1 : !tile.tile<128x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<128x256xf32>
      scf.yield %14 : !tile.tile<128x256xf32>
    }
    %15 = tile.splat %alpha : f32 -> !tile.tile<128x256xf32>
    %16 = tile.mul %acc, %15 : !tile.tile<128x256xf32>
    %17 = tile.convert %16 : !tile.tile<128x256xf32> -> !tile.tile<128x256xbf16>
    tile.store %17, %C[%8, %9] : !tile.tile<128x256xbf16> -> memref<?x?xbf16>
    func.return
  }
}

