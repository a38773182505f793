// store=tma (the default) on the general loop body: an epilogue whose one store writes a whole [BM, N] tile of a
// bf16/f16/f32 memref stages it in shared memory, 16 KiB per consumer warpgroup after the ring slots, and writes
// it with TMA boxes (nv.wgacc_store_tma); each consumer drains its bulk stores before the kernel ends. @gemm:
// 128 x 256, 3 stages of A (16 KiB) and B (32 KiB) = 147456 bytes, then 2 x 16 KiB of staging, then the barriers.
// Negative (@gemm_c): an epilogue that also loads a whole tile (C) keeps the register store (no staging, no drain),
// as does any epilogue with a second store (attention's row sums).
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3}' | FileCheck %s
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:    nv.smem_bytes = 180272
// CHECK-NEXT:    nv.mbarrier_init {base = 180224 : i64, count = 3 : i64, arrivals = 1 : i64}
// CHECK:         nv.wgacc_store_tma %{{[0-9]+}}, %C[%{{[0-9]+}}, %n0_1], %{{[0-9]+}} {n = 256 : i64, stage = 147456 : i64}
// CHECK-NOT:     nv.wgacc_store
// CHECK:         nv.tma_store_drain
// CHECK-LABEL: func.func @gemm_c(
// CHECK-SAME:    nv.smem_bytes = 147504
// CHECK-NOT:     nv.wgacc_store_tma
// CHECK:         nv.wgacc_store %{{[0-9]+}}, %C
// CHECK-NOT:     nv.tma_store_drain
// CHECK:         func.return
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %bias: memref<1x?xf32>, %alpha: f32) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c256 : index
  %init = tile.constant 0.0 : !tile.tile<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x256xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %b = tile.transpose %bt : !tile.tile<256x64xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<128x256xf32>
    scf.yield %d : !tile.tile<128x256xf32>
  }
  %al = tile.splat %alpha : f32 -> !tile.tile<128x256xf32>
  %scaled = tile.mul %acc, %al : !tile.tile<128x256xf32>
  %b1 = tile.load %bias[%c0, %n0] pad 0.0 : memref<1x?xf32> -> !tile.tile<1x256xf32>
  %bb = tile.broadcast %b1 : !tile.tile<1x256xf32> -> !tile.tile<128x256xf32>
  %x = tile.add %scaled, %bb : !tile.tile<128x256xf32>
  tile.store %x, %C[%m0, %n0] : !tile.tile<128x256xf32> -> memref<?x?xf32>
  func.return
}
func.func @gemm_c(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %bias: memref<1x?xf32>, %alpha: f32, %Cin: memref<?x?xf32>) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c256 : index
  %init = tile.constant 0.0 : !tile.tile<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x256xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %b = tile.transpose %bt : !tile.tile<256x64xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<128x256xf32>
    scf.yield %d : !tile.tile<128x256xf32>
  }
  %al = tile.splat %alpha : f32 -> !tile.tile<128x256xf32>
  %scaled = tile.mul %acc, %al : !tile.tile<128x256xf32>
  %b1 = tile.load %bias[%c0, %n0] pad 0.0 : memref<1x?xf32> -> !tile.tile<1x256xf32>
  %bb = tile.broadcast %b1 : !tile.tile<1x256xf32> -> !tile.tile<128x256xf32>
  %x0 = tile.add %scaled, %bb : !tile.tile<128x256xf32>
  %cin = tile.load %Cin[%m0, %n0] pad 0.0 : memref<?x?xf32> -> !tile.tile<128x256xf32>
  %x = tile.add %x0, %cin : !tile.tile<128x256xf32>
  tile.store %x, %C[%m0, %n0] : !tile.tile<128x256xf32> -> memref<?x?xf32>
  func.return
}
