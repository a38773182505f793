// A 192 x 256 tile on three consumer warpgroups: each would hold 128 accumulator registers, but three consumers
// run at 160 registers (setmaxnreg, 512 threads): a coded refusal with a hint.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3}' 2>&1 | FileCheck %s
// CHECK: error: NV_WGMMA_UNSUPPORTED{{:}} wgmma accumulators of 128 registers per thread on 3 consumer warpgroups of 160 registers (192-row tiles): at most 96 leave room for the loop body and the epilogue
// CHECK: hint: use narrower tiles (a smaller N per wgmma) or fewer rows per CTA

func.func @gemm192x256(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c192 = arith.constant 192 : index
  %c256 = arith.constant 256 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c192 : index
  %n0 = arith.muli %pn, %c256 : index
  %init = tile.constant 0.0 : !tile.tile<192x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<192x256xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<192x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %b = tile.transpose %bt : !tile.tile<256x64xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<192x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<192x256xf32>
    scf.yield %d : !tile.tile<192x256xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<192x256xf32> -> memref<?x?xf32>
  func.return
}
