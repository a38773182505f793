// schedule=pingpong on the general loop body passes turns between consumer warpgroups: a 64-row tile has one
// consumer, so it is refused at the mma with a hint (NV_WGMMA_UNSUPPORTED), never lowered to a barrier no one
// arrives on.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2 schedule=pingpong}' 2>&1 | FileCheck %s
// CHECK: error: NV_WGMMA_{{UNSUPPORTED}}: schedule=pingpong passes turns between consumer warpgroups; a 64-row tile has 1
// CHECK: hint: use BLOCK_M = 128 or 192, or schedule=cooperative
func.func @two_mmas(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %V: memref<?x64xbf16>, %O: memref<?x64xf32>) {
  %pid = tile.program_id 0
  %c128 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %n = memref.dim %K, %c0 : memref<?x64xbf16>
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %pid, %c128 : index
  %q = tile.load %Q[%m0, %c0] pad 0.0 : memref<?x64xbf16> -> !tile.tile<64x64xbf16>
  %zero = tile.constant 0.0 : !tile.tile<64x64xf32>
  %acc = scf.for %n0 = %c0 to %n step %c64 iter_args(%o = %zero) -> (!tile.tile<64x64xf32>) {
    %k = tile.load %K[%n0, %c0] pad 0.0 : memref<?x64xbf16> -> !tile.tile<64x64xbf16>
    %v = tile.load %V[%n0, %c0] pad 0.0 : memref<?x64xbf16> -> !tile.tile<64x64xbf16>
    %kt = tile.transpose %k : !tile.tile<64x64xbf16> -> !tile.tile<64x64xbf16>
    %s = tile.mma %q, %kt, %zero : !tile.tile<64x64xbf16>, !tile.tile<64x64xbf16>, !tile.tile<64x64xf32>
    %e = tile.exp2 %s : !tile.tile<64x64xf32>
    %p = tile.convert %e : !tile.tile<64x64xf32> -> !tile.tile<64x64xbf16>
    %o2 = tile.mma %p, %v, %o : !tile.tile<64x64xbf16>, !tile.tile<64x64xbf16>, !tile.tile<64x64xf32>
    scf.yield %o2 : !tile.tile<64x64xf32>
  }
  tile.store %acc, %O[%m0, %c0] : !tile.tile<64x64xf32> -> memref<?x64xf32>
  func.return
}
