// 256-row tiles the lowering refuses, each with a code and a hint. With warps=2,1 a 256 x 256 tile would give
// each consumer warpgroup 128 x 256 accumulators, 256 registers per thread (at most 160 of the 232 a consumer has
// leave room for the rest of the kernel); the default plan puts it on a [2, 2] warp grid, which the lowering does not take either.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a warps=2,1},warp-specialize{arch=sm_90a stages=2}' 2>&1 | FileCheck %s
// CHECK: error: NV_WGMMA_UNSUPPORTED{{:}} wgmma accumulators of 256 registers per thread (2 blocks of 64 rows each) on 2 consumer warpgroups of 232 registers (256-row tiles): at most 160 leave room for the loop body and the epilogue
// CHECK: hint: use narrower tiles (a smaller N per wgmma) or fewer rows per CTA
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2}' 2>&1 | FileCheck %s --check-prefix=GRID
// GRID: error: NV_WGMMA_UNSUPPORTED{{:}} BM=256 on warpgroups [2, 2] of 128 rows: this lowering runs one consumer warpgroup per 64 rows (BM = 64, 128 or 192), or two of 128 (BM = 256)

func.func @gemm256x256(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c256 : index
  %n0 = arith.muli %pn, %c256 : index
  %init = tile.constant 0.0 : !tile.tile<256x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<256x256xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %b = tile.transpose %bt : !tile.tile<256x64xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<256x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<256x256xf32>
    scf.yield %d : !tile.tile<256x256xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<256x256xf32> -> memref<?x?xf32>
  func.return
}
