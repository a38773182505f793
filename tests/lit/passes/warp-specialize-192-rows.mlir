// warp-specialize on a 192 x 160 tile (the tile cuBLAS runs for 4000^3: 21 x 25 tiles, 3.98 waves of 132):
// tile-to-fragments puts it on three warpgroups of 64 rows ([3, 1], fragment m = 64, n = 160), so the kernel has
// a producer and three consumer warpgroups (512 threads). setmaxnreg gives the producer 32 registers and each
// consumer 160 (128 x 32 + 384 x 160 = 64K, as FlashAttention-3); `empty` counts three arrivals. Each consumer runs one m64n160
// wgmma per K step and stores its 64 x 160 block through TMA in five 32-column boxes of 64-byte rows (160
// columns are not whole 128-byte rows). A slots 192 x 64 (24 KiB), B slots 160 x 64 (20 KiB), 4 stages and
// 3 x 16 KiB of staging: 229440 bytes with the barriers.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=4}' | FileCheck %s
// Whole-tile ping-pong alternates two consumers; a 192-row tile has three: a coded refusal.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=4 schedule=pingpong}' 2>&1 | FileCheck %s --check-prefix=PINGPONG
// PINGPONG: error: NV_WGMMA_UNSUPPORTED{{:}} schedule=pingpong on a loop that only accumulates: two consumer warpgroups take alternate whole tiles; a 192-row tile has 3

// CHECK-LABEL: func.func @gemm192(
// CHECK-SAME:  attributes {nv.num_threads = 512 : i64, nv.smem_bytes = 229440 : i64, nv.arch = "sm_90a"}
// CHECK-NEXT:  nv.mbarrier_init {base = 229376 : i64, count = 4 : i64, arrivals = 1 : i64}
// CHECK-NEXT:  nv.mbarrier_init {base = 229408 : i64, count = 4 : i64, arrivals = 3 : i64}
// CHECK:       nv.setmaxnreg {regs = 32 : i64, action = "dec"}
// CHECK:       nv.tma_load %A[%m0, %{{[0-9]+}}], %{{[0-9]+}} evict_first %{{[0-9]+}} {dst = 0 : i64, stage_bytes = 24576 : i64, bar = 229376 : i64, box = array<i64: 192, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
// CHECK-NEXT:  nv.tma_load %B[%n0, %{{[0-9]+}}], %{{[0-9]+}} evict_first %{{[0-9]+}} {dst = 98304 : i64, stage_bytes = 20480 : i64, bar = 229376 : i64, box = array<i64: 160, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
// CHECK:       nv.setmaxnreg {regs = 160 : i64, action = "inc"}
// CHECK:       %[[C:[0-9]+]] = arith.subi %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK:       nv.wgmma %{{[0-9]+}}, %{{[0-9]+}}, %[[C]] {n = 160 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 24576, 192, 8192>, b = array<i64: 98304, 20480, 160>, swizzle = 128 : i64} : vector<80xf32> -> vector<80xf32>
// CHECK-NEXT:  nv.wgmma_wait %{{[0-9]+}} {pending = 1 : i64}
// CHECK:       nv.wgacc_store_tma %{{[0-9]+}}, %C[%{{[0-9]+}}, %n0_1], %[[C]] {n = 160 : i64, stage = 180224 : i64} : vector<80xbf16>, memref<?x?xbf16>
// CHECK:       nv.tma_store_drain
func.func @gemm192(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %bias: memref<1x?xf32>, %alpha: f32) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c160 = arith.constant 160 : index
  %c192 = arith.constant 192 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c192 : index
  %n0 = arith.muli %pn, %c160 : index
  %init = tile.constant 0.0 : !tile.tile<192x160xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<192x160xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<192x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<160x64xbf16>
    %b = tile.transpose %bt : !tile.tile<160x64xbf16> -> !tile.tile<64x160xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<192x64xbf16>, !tile.tile<64x160xbf16>, !tile.tile<192x160xf32>
    scf.yield %d : !tile.tile<192x160xf32>
  }
  %al = tile.splat %alpha : f32 -> !tile.tile<192x160xf32>
  %scaled = tile.mul %acc, %al : !tile.tile<192x160xf32>
  %b1 = tile.load %bias[%c0, %n0] pad 0.0 : memref<1x?xf32> -> !tile.tile<1x160xf32>
  %bb = tile.broadcast %b1 : !tile.tile<1x160xf32> -> !tile.tile<192x160xf32>
  %x = tile.add %scaled, %bb : !tile.tile<192x160xf32>
  %y = tile.convert %x : !tile.tile<192x160xf32> -> !tile.tile<192x160xbf16>
  tile.store %y, %C[%m0, %n0] : !tile.tile<192x160xbf16> -> memref<?x?xbf16>
  func.return
}
