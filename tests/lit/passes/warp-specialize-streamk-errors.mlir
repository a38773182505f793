// warp-specialize streamk refusals, each coded and naming what would work:
// - stream-K lays every tile's K steps end to end, so a K-loop whose bound depends on tile.program_id (here a
//   K range that shrinks with the tile row) is refused at the mma;
// - streamk=1 with splitk > 1 asks for two K decompositions at once;
// - streamk takes 0 or 1.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 streamk=1}' 2>&1 | FileCheck %s
// CHECK: error: NV_WGMMA_{{UNSUPPORTED}}: streamk with a K-loop whose bounds depend on tile.program_id
// CHECK: hint: use splitk, or no K decomposition, for kernels whose K range varies by tile
// The same kernel without stream-K lowers.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3}' | FileCheck %s --check-prefix=DP
// DP: nv.wgmma
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 streamk=1 splitk=2}' 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: NV_WGMMA_{{UNSUPPORTED}}: streamk with splitk=2: stream-K already shares a tile's K steps among CTAs
// BOTH: hint: use one of streamk=1 and splitk>1
// RUN: not tessera-opt %s -p 'warp-specialize{arch=sm_90a streamk=2}' 2>&1 | FileCheck %s --check-prefix=TWO
// TWO: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: streamk=2 must be 0 or 1
builtin.module {
  func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %alpha: f32) {
    %0 = tile.program_id 0
    %1 = arith.constant 128 : index
    %2 = tile.program_id 1
    %4 = arith.constant 0 : index
    %5 = arith.constant 1 : index
    %6 = memref.dim %A, %5 : memref<?x?xbf16>
    %7 = arith.constant 64 : index
    %8 = arith.muli %0, %1 : index
    %9 = arith.muli %2, %1 : index
    %ub = arith.subi %6, %8 : index
    %10 = tile.constant 0.0 : !tile.tile<128x128xf32>
    %acc = scf.for %k = %4 to %ub step %7 iter_args(%acc_1 = %10) -> (!tile.tile<128x128xf32>) {
      %11 = tile.load %A[%8, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
      %12 = tile.load %B[%9, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
      %13 = tile.transpose %12 : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
      %14 = tile.mma %11, %13, %acc_1 : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
      scf.yield %14 : !tile.tile<128x128xf32>
    }
    %15 = tile.splat %alpha : f32 -> !tile.tile<128x128xf32>
    %16 = tile.mul %acc, %15 : !tile.tile<128x128xf32>
    %17 = tile.convert %16 : !tile.tile<128x128xf32> -> !tile.tile<128x128xbf16>
    tile.store %17, %C[%8, %9] : !tile.tile<128x128xbf16> -> memref<?x?xbf16>
    func.return
  }
}
