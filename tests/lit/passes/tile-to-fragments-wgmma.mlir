// tile-to-fragments{arch=sm_90a}: wgmma fragments over a warpgroup grid; warps= overrides the grid.
// RUN: tessera-opt %s --pass-pipeline='tile-to-fragments{arch=sm_90a}' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='tile-to-fragments{arch=sm_90a warps=1,2}' | FileCheck %s --check-prefix=GRID
// The same kernel for sm_90 (no wgmma there) gets mma_sync fragments.
// RUN: tessera-opt %s --pass-pipeline='tile-to-fragments{arch=sm_90}' | FileCheck %s --check-prefix=SM90

// CHECK:      %acc_init = tile.fragment_zero : [[ACC:!tile.fragment<m=64, n=256, k=64, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">]]
// CHECK:      %frag_a = tile.fragment_pack %sa[%c0, %c0] warps [2, 1] : !tile.tile<128x64xbf16, smem> -> !tile.fragment<m=64, n=256, k=64, elem=bf16, acc=f32, role="a", layout="row", family="wgmma">
// CHECK-NEXT: %frag_b = tile.fragment_pack %sb[%c0, %c0] warps [2, 1] : !tile.tile<64x256xbf16, smem> -> !tile.fragment<m=64, n=256, k=64, elem=bf16, acc=f32, role="b", layout="row", family="wgmma">
// CHECK-NEXT: %d = tile.fragment_mma %frag_a, %frag_b, %c
// CHECK:      tile.fragment_store %acc, %C[%m0, %n0] warps [2, 1] : [[ACC]] -> memref<?x?xf32>
// GRID:       tile.fragment_zero : !tile.fragment<m=128, n=128, k=64, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">
// GRID:       tile.fragment_store %acc, %C[%m0, %n0] warps [1, 2]
// SM90:       tile.fragment_zero : !tile.fragment<m=64, n=64, k=64, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
// SM90:       tile.fragment_store %acc, %C[%m0, %n0] warps [2, 4]
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c256 : index
  %init = tile.constant 0.0 : !tile.tile<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x256xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.load %B[%k, %n0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<128x256xf32>
    scf.yield %d : !tile.tile<128x256xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x256xf32> -> memref<?x?xf32>
  func.return
}
