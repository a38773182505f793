// Every Hopper nv op (thread/grid identity, setmaxnreg, mbarriers, TMA, wgmma, accumulator-layout epilogue
// loads and stores) parses, verifies and prints back unchanged.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s

// Shared memory of a 3-stage 128x64 @ 256x64 ring: A slots at 0 (16 KiB each), B slots at 49152 (32 KiB each),
// the `full` barriers at 147456 and the `empty` barriers at 147480.
// CHECK-LABEL: func.func @hopper(
// CHECK-SAME:  attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a"}
func.func @hopper(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %bias: memref<1x?xf32>,
                  %H: memref<?x?xf16>) attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: %tid = nv.thread_id : index
  %tid = nv.thread_id : index
  // CHECK-NEXT: %gm = nv.logical_grid {axis = 0 : i64} : index
  %gm = nv.logical_grid {axis = 0 : i64} : index
  // CHECK-NEXT: %gz = nv.logical_grid {axis = 2 : i64} : index
  %gz = nv.logical_grid {axis = 2 : i64} : index
  // CHECK-NEXT: nv.setmaxnreg {regs = 40 : i64, action = "dec"}
  nv.setmaxnreg {regs = 40 : i64, action = "dec"}
  // CHECK-NEXT: nv.setmaxnreg {regs = 232 : i64, action = "inc"}
  nv.setmaxnreg {regs = 232 : i64, action = "inc"}
  // CHECK-NEXT: nv.mbarrier_init {base = 147456 : i64, count = 3 : i64, arrivals = 1 : i64}
  nv.mbarrier_init {base = 147456 : i64, count = 3 : i64, arrivals = 1 : i64}
  // CHECK-NEXT: nv.mbarrier_init {base = 147480 : i64, count = 3 : i64, arrivals = 2 : i64}
  nv.mbarrier_init {base = 147480 : i64, count = 3 : i64, arrivals = 2 : i64}
  // CHECK-NEXT: nv.mbarrier_wait %c0, %c1 {base = 147480 : i64}
  nv.mbarrier_wait %c0, %c1 {base = 147480 : i64}
  // CHECK-NEXT: nv.mbarrier_expect_tx %c0 {base = 147456 : i64, bytes = 49152 : i64}
  nv.mbarrier_expect_tx %c0 {base = 147456 : i64, bytes = 49152 : i64}
  // CHECK-NEXT: nv.tma_load %A[%c0, %c0], %c0 {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 147456 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  nv.tma_load %A[%c0, %c0], %c0 {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 147456 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  // CHECK-NEXT: nv.tma_load %B[%c0, %c0], %c0 {dst = 49152 : i64, stage_bytes = 32768 : i64, bar = 147456 : i64, box = array<i64: 256, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  nv.tma_load %B[%c0, %c0], %c0 {dst = 49152 : i64, stage_bytes = 32768 : i64, bar = 147456 : i64, box = array<i64: 256, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  // A 64-byte swizzle with a 32-element bf16 row, and an unswizzled f32 box (rows of 16 bytes).
  // CHECK-NEXT: nv.tma_load %A[%c0, %c1], %c1 {dst = 2048 : i64, stage_bytes = 4096 : i64, bar = 147464 : i64, box = array<i64: 64, 32>, swizzle = 64 : i64} : memref<?x?xbf16>
  nv.tma_load %A[%c0, %c1], %c1 {dst = 2048 : i64, stage_bytes = 4096 : i64, bar = 147464 : i64, box = array<i64: 64, 32>, swizzle = 64 : i64} : memref<?x?xbf16>
  // CHECK-NEXT: nv.tma_load %C[%c0, %c0], %c0 {dst = 128 : i64, stage_bytes = 256 : i64, bar = 147456 : i64, box = array<i64: 8, 4>, swizzle = 0 : i64} : memref<?x?xf32>
  nv.tma_load %C[%c0, %c0], %c0 {dst = 128 : i64, stage_bytes = 256 : i64, bar = 147456 : i64, box = array<i64: 8, 4>, swizzle = 0 : i64} : memref<?x?xf32>
  // m64n256k64 on consumer warpgroup %c1: a 128-element f32 accumulator per thread.
  // CHECK-NEXT: %z = nv.fill {value = 0.000000e+00 : f64} : vector<128xf32>
  %z = nv.fill {value = 0.0 : f64} : vector<128xf32>
  // CHECK-NEXT: %d = nv.wgmma %z, %c0, %c1 {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
  %d = nv.wgmma %z, %c0, %c1 {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
  // CHECK-NEXT: %w = nv.wgmma_wait %d {pending = 1 : i64} : vector<128xf32> -> vector<128xf32>
  %w = nv.wgmma_wait %d {pending = 1 : i64} : vector<128xf32> -> vector<128xf32>
  // CHECK-NEXT: %w0 = nv.wgmma_wait %w {pending = 0 : i64} : vector<128xf32> -> vector<128xf32>
  %w0 = nv.wgmma_wait %w {pending = 0 : i64} : vector<128xf32> -> vector<128xf32>
  // f16 operands and the smallest n: 4 slots per thread.
  %z8 = nv.fill {value = 0.0 : f64} : vector<4xf32>
  // CHECK: %d8 = nv.wgmma %z8, %c0, %c0 {n = 8 : i64, k = 16 : i64, dtype = f16, a = array<i64: 0, 2048, 64, 2048>, b = array<i64: 2048, 256, 8>, swizzle = 32 : i64} : vector<4xf32> -> vector<4xf32>
  %d8 = nv.wgmma %z8, %c0, %c0 {n = 8 : i64, k = 16 : i64, dtype = f16, a = array<i64: 0, 2048, 64, 2048>, b = array<i64: 2048, 256, 8>, swizzle = 32 : i64} : vector<4xf32> -> vector<4xf32>
  // MN-major operands (A stored k x M, B stored k x N: imm-trans 1) print their major; K-major is the default.
  // CHECK: %dt = nv.wgmma %z, %c0, %c1 {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64, a_major = "mn", b_major = "mn"} : vector<128xf32> -> vector<128xf32>
  %dt = nv.wgmma %z, %c0, %c1 {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64, a_major = "mn", b_major = "mn"} : vector<128xf32> -> vector<128xf32>
  // A in a slot of its own (a per-tile operand double-buffered beside B's ring): a_slot picks it.
  // CHECK: %ds = nv.wgmma %z, %c0, %c1 a_slot %c1 {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
  %ds = nv.wgmma %z, %c0, %c1 a_slot %c1 {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
  // CHECK-NEXT: nv.mbarrier_arrive %c0 {base = 147480 : i64, per = "warpgroup"}
  nv.mbarrier_arrive %c0 {base = 147480 : i64, per = "warpgroup"}
  // CHECK-NEXT: nv.mbarrier_arrive %c1 {base = 147480 : i64, per = "thread"}
  nv.mbarrier_arrive %c1 {base = 147480 : i64, per = "thread"}
  // Epilogue: a [1, 256] bias row broadcast over the rows, a full-tile load with a non-zero pad, stores.
  // CHECK-NEXT: %bv = nv.wgacc_load %bias[%c0, %c0] {n = 256 : i64, broadcast_rows = true, pad = 0.000000e+00 : f64} : memref<1x?xf32> -> vector<128xf32>
  %bv = nv.wgacc_load %bias[%c0, %c0] {n = 256 : i64, broadcast_rows = true, pad = 0.0 : f64} : memref<1x?xf32> -> vector<128xf32>
  // CHECK-NEXT: %cv = nv.wgacc_load %C[%c0, %c0] {n = 256 : i64, broadcast_rows = false, pad = -1.500000e+00 : f64} : memref<?x?xf32> -> vector<128xf32>
  %cv = nv.wgacc_load %C[%c0, %c0] {n = 256 : i64, broadcast_rows = false, pad = -1.5 : f64} : memref<?x?xf32> -> vector<128xf32>
  %s = nv.map "add" %w0, %bv : vector<128xf32>
  // CHECK: nv.wgacc_store %s, %C[%c1, %c0] {n = 256 : i64} : vector<128xf32>, memref<?x?xf32>
  nv.wgacc_store %s, %C[%c1, %c0] {n = 256 : i64} : vector<128xf32>, memref<?x?xf32>
  %h = nv.convert %d8 : vector<4xf32> -> vector<4xf16>
  // CHECK: nv.wgacc_store %h, %H[%c0, %c0] {n = 8 : i64} : vector<4xf16>, memref<?x?xf16>
  nv.wgacc_store %h, %H[%c0, %c0] {n = 8 : i64} : vector<4xf16>, memref<?x?xf16>
  func.return
}
