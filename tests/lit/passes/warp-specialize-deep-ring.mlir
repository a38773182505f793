// warp-specialize{stages=12}: the ring may be 12 slots deep (the most the knob takes; 13 is an error in
// warp-specialize-errors.mlir). A decode-shaped GEMM (64 x 16 tiles, 64-deep K steps: 8 KiB of A and 2 KiB of B a
// stage) keeps 12 stages of its stream in flight: A slots at 0, B slots at 98304, the `full` barriers at 122880
// and the `empty` ones at 122976, 12 of each. The swapped decode candidates use this depth to keep more of the
// weight in flight per CTA.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=12 store=registers}' | FileCheck %s
// The named pipeline takes the same depth (pipeline-smem, which shares the knob, leaves wgmma loops alone).
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=12 store=registers}' > %t.direct
// RUN: tessera-opt %s -p 'tessera-lower-to-nv{arch=sm_90a stages=12 store=registers}' > %t.named
// RUN: diff %t.direct %t.named

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:  nv.smem_bytes = 123072 : i64
// CHECK:       nv.mbarrier_init {base = 122880 : i64, count = 12 : i64, arrivals = 1 : i64}
// CHECK-NEXT:  nv.mbarrier_init {base = 122976 : i64, count = 12 : i64, arrivals = 1 : i64}
// CHECK:       nv.tma_load %A
// CHECK:       nv.tma_load %B
// CHECK:       nv.wgmma
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c64 : index
  %n0 = arith.muli %pn, %c16 : index
  %init = tile.constant 0.0 : !tile.tile<64x16xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<64x16xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<16x64xbf16>
    %b = tile.transpose %bt : !tile.tile<16x64xbf16> -> !tile.tile<64x16xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<64x64xbf16>, !tile.tile<64x16xbf16>, !tile.tile<64x16xf32>
    scf.yield %d : !tile.tile<64x16xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<64x16xf32> -> memref<?x?xf32>
  func.return
}
