// warp-specialize on a 256 x 128 tile: tile-to-fragments gives each of the two consumer warpgroups 128 rows
// (fragment m = 128), so consumer c (= warpgroup - 1) owns 64-row blocks 2c and 2c + 1: two m64n128 wgmmas per
// K step on accumulators of 64 registers each (128 per thread), two groups kept in flight, and the epilogue
// (bias, bf16, TMA store through the consumer's staging) once per block. A slots are 256 x 64 (32 KiB), B slots
// 128 x 64 (16 KiB), 4 stages + 2 x 16 KiB staging: 229440 bytes with the barriers.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=4}' | FileCheck %s
// Ping-pong keeps whole tiles per consumer: four 64-row blocks of 64 accumulator registers do not fit, a coded refusal.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=4 schedule=pingpong}' 2>&1 | FileCheck %s --check-prefix=PINGPONG
// PINGPONG: error: NV_WGMMA_UNSUPPORTED{{:}} wgmma accumulators of 256 registers per thread (4 blocks of 64 rows each) on 2 consumer warpgroups of 232 registers (256-row tiles): at most 160 leave room for the loop body and the epilogue

// CHECK-LABEL: func.func @gemm256(
// CHECK-SAME:  attributes {nv.num_threads = 384 : i64, nv.smem_bytes = 229440 : i64, nv.arch = "sm_90a"}
// CHECK:       nv.tma_load %A[%m0, %{{[0-9]+}}], %{{[0-9]+}} evict_first %{{[0-9]+}} {dst = 0 : i64, stage_bytes = 32768 : i64, bar = 229376 : i64, box = array<i64: 256, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
// CHECK:       nv.setmaxnreg {regs = 232 : i64, action = "inc"}
// CHECK:       %[[C:[0-9]+]] = arith.subi %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK:       %[[B0:[0-9]+]] = arith.muli %[[C]], %{{[0-9]+}} : index
// CHECK-NEXT:  %[[ONE:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:  %[[B1:[0-9]+]] = arith.addi %[[B0]], %[[ONE]] : index
// CHECK:       scf.for
// CHECK:       nv.wgmma %{{[0-9]+}}, %{{[0-9]+}}, %[[B0]] {n = 128 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 32768, 256, 8192>, b = array<i64: 131072, 16384, 128>, swizzle = 128 : i64} : vector<64xf32> -> vector<64xf32>
// CHECK-NEXT:  nv.wgmma %{{[0-9]+}}, %{{[0-9]+}}, %[[B1]] {{.*}} : vector<64xf32> -> vector<64xf32>
// CHECK-NEXT:  nv.wgmma_wait %{{[0-9]+}} {pending = 2 : i64}
// CHECK-NEXT:  nv.wgmma_wait %{{[0-9]+}} {pending = 2 : i64}
// CHECK:       nv.wgacc_store_tma %{{[0-9]+}}, %C[%{{[0-9]+}}, %n0_1], %[[C]] {n = 128 : i64, stage = 196608 : i64} : vector<64xbf16>, memref<?x?xbf16>
// CHECK:       nv.wgacc_store_tma %{{[0-9]+}}, %C[%{{[0-9]+}}, %n0_1], %[[C]] {n = 128 : i64, stage = 196608 : i64} : vector<64xbf16>, memref<?x?xbf16>
// CHECK:       nv.tma_store_drain
func.func @gemm256(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %bias: memref<1x?xf32>, %alpha: f32) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c256 : index
  %n0 = arith.muli %pn, %c128 : index
  %init = tile.constant 0.0 : !tile.tile<256x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<256x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<256x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<256x128xf32>
    scf.yield %d : !tile.tile<256x128xf32>
  }
  %al = tile.splat %alpha : f32 -> !tile.tile<256x128xf32>
  %scaled = tile.mul %acc, %al : !tile.tile<256x128xf32>
  %b1 = tile.load %bias[%c0, %n0] pad 0.0 : memref<1x?xf32> -> !tile.tile<1x128xf32>
  %bb = tile.broadcast %b1 : !tile.tile<1x128xf32> -> !tile.tile<256x128xf32>
  %x = tile.add %scaled, %bb : !tile.tile<256x128xf32>
  %y = tile.convert %x : !tile.tile<256x128xf32> -> !tile.tile<256x128xbf16>
  tile.store %y, %C[%m0, %n0] : !tile.tile<256x128xbf16> -> memref<?x?xbf16>
  func.return
}
