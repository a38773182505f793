// schedule=pingpong keeps a whole 128 x BN tile per consumer warpgroup: BN = 256 would need 256 accumulator
// registers per thread, so it is refused at the mma with a hint.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 schedule=pingpong}' 2>&1 | FileCheck %s
// CHECK: error: NV_WGMMA_{{UNSUPPORTED}}: wgmma accumulators of 256 registers per thread (2 blocks of 64 rows each) on 2 consumer warpgroups of 232 registers (128-row tiles): at most 160 leave room for the loop body and the epilogue
// CHECK: hint: use narrower tiles (a smaller N per wgmma) or fewer rows per CTA
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


// -----
// Whole-tile ping-pong with an operand staged once per tile (A, loaded before the loop, K = 64): the consumers would
// free its slot in turn, each for its own tiles; refused at the mma. Cooperative consumers take it (FIXED-OK).
// RUN: not tessera-opt %s --split-input-file -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 schedule=pingpong}' 2>&1 | FileCheck %s --check-prefix=FIXED
// FIXED: error: NV_WGMMA_{{UNSUPPORTED}}: schedule=pingpong on a loop that only accumulates, with an operand staged once per tile: whole-tile consumers would free its slot in turn
// FIXED: hint: use schedule=cooperative
// RUN: tessera-opt %s --split-input-file -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3}' 2>&1 | FileCheck %s --check-prefix=FIXED-OK
// FIXED-OK: func.func @fixed_a(
// FIXED-OK-SAME: nv.num_threads = 384
// FIXED-OK: nv.wgmma
builtin.module {
  func.func @fixed_a(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
    %pm = tile.program_id 0
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %N = memref.dim %B, %c0 : memref<?x?xbf16>
    %m0 = arith.muli %pm, %c128 : index
    %a = tile.load %A[%m0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %init = tile.constant 0.0 : !tile.tile<128x64xf32>
    %acc = scf.for %n = %c0 to %N step %c64 iter_args(%c = %init) -> (!tile.tile<128x64xf32>) {
      %bt = tile.load %B[%n, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x64xbf16>
      %b = tile.transpose %bt : !tile.tile<64x64xbf16> -> !tile.tile<64x64xbf16>
      %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x64xbf16>, !tile.tile<128x64xf32>
      scf.yield %d : !tile.tile<128x64xf32>
    }
    tile.store %acc, %C[%m0, %c0] : !tile.tile<128x64xf32> -> memref<?x?xf32>
    func.return
  }
}
