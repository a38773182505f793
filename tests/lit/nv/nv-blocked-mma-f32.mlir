// nv.blocked_mma (acc + A @ B on CUDA cores, the result blocked over the CTA) parses, verifies and prints back.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s

// CHECK-LABEL: func.func @f32(
func.func @f32(%c: vector<32xf32>) attributes {nv.num_threads = 128 : i64} {
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x16xf32, 20>
  %sb = nv.alloc_shared {offset = 5120 : i64} : !nv.smem<16x64xf32, 68>
  // A 64x64 result over 128 threads: 32 slots per thread.
  // CHECK: nv.blocked_mma %sa, %sb, %c {shape = array<i64: 64, 64>, threads = 128 : i64} : !nv.smem<64x16xf32, 20>, !nv.smem<16x64xf32, 68>, vector<32xf32> -> vector<32xf32>
  %d = nv.blocked_mma %sa, %sb, %c {shape = array<i64: 64, 64>, threads = 128 : i64} : !nv.smem<64x16xf32, 20>, !nv.smem<16x64xf32, 68>, vector<32xf32> -> vector<32xf32>
  func.return
}

// A ragged 10x12 result (120 elements) over 64 threads is 2 slots per thread, the last 8 unused; f64 works too.
// CHECK-LABEL: func.func @f64_ragged(
func.func @f64_ragged(%c: vector<2xf64>) attributes {nv.num_threads = 64 : i64} {
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<10x3xf64, 4>
  %sb = nv.alloc_shared {offset = 384 : i64} : !nv.smem<3x12xf64, 14>
  // CHECK: nv.blocked_mma %sa, %sb, %c {shape = array<i64: 10, 12>, threads = 64 : i64} : !nv.smem<10x3xf64, 4>, !nv.smem<3x12xf64, 14>, vector<2xf64> -> vector<2xf64>
  %d = nv.blocked_mma %sa, %sb, %c {shape = array<i64: 10, 12>, threads = 64 : i64} : !nv.smem<10x3xf64, 4>, !nv.smem<3x12xf64, 14>, vector<2xf64> -> vector<2xf64>
  func.return
}
