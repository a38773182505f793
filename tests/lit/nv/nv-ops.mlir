// Every nv op parses, verifies and prints back unchanged (target IR is text like every other level).
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s

// CHECK-LABEL: func.func @ops(
func.func @ops(%A: memref<?x?xbf16>, %C: memref<?x?xf32>, %s: f32) attributes {nv.num_threads = 128 : i64} {
  %c0 = arith.constant 0 : index
  // CHECK: nv.block_id {axis = 1 : i64} : index
  %b = nv.block_id {axis = 1 : i64} : index
  // CHECK: nv.grid_dim {axis = 0 : i64} : index
  %g = nv.grid_dim {axis = 0 : i64} : index
  // CHECK: nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x32xbf16, 40>
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x32xbf16, 40>
  %sb = nv.alloc_shared {offset = 5120 : i64} : !nv.smem<32x64xbf16, 72>
  %sc = nv.alloc_shared {offset = 9728 : i64} : !nv.smem<64x64xf32, 68>
  // CHECK: nv.cp_async_tile %A[%c0, %c0], %sa {pad = 0.000000e+00 : f64} : memref<?x?xbf16>, !nv.smem<64x32xbf16, 40> -> !nv.async_group
  %t0 = nv.cp_async_tile %A[%c0, %c0], %sa {pad = 0.000000e+00 : f64} : memref<?x?xbf16>, !nv.smem<64x32xbf16, 40> -> !nv.async_group
  %t1 = nv.cp_async_tile %A[%c0, %c0], %sb {pad = 0xFFF0000000000000 : f64} : memref<?x?xbf16>, !nv.smem<32x64xbf16, 72> -> !nv.async_group
  // CHECK: nv.cp_async_wait %t0, %t1 : !nv.async_group, !nv.async_group
  nv.cp_async_wait %t0, %t1 : !nv.async_group, !nv.async_group
  // CHECK: nv.barrier
  nv.barrier
  // A 2x2 grid of 32x32x32 warp tiles: a is 32x32 (2x2 atoms, 32 bf16 slots), b 32x32 (2x4 atoms), acc 32x32 f32.
  // CHECK: nv.ldfrag_shared %sa[%c0, %c0] {family = "mma_sync", role = "a", mnk = array<i64: 32, 32, 32>, dtype = bf16, warps = array<i64: 2, 2>} : !nv.smem<64x32xbf16, 40> -> vector<32xbf16>
  %fa = nv.ldfrag_shared %sa[%c0, %c0] {family = "mma_sync", role = "a", mnk = array<i64: 32, 32, 32>, dtype = bf16, warps = array<i64: 2, 2>} : !nv.smem<64x32xbf16, 40> -> vector<32xbf16>
  %fb = nv.ldfrag_shared %sb[%c0, %c0] {family = "mma_sync", role = "b", mnk = array<i64: 32, 32, 32>, dtype = bf16, warps = array<i64: 2, 2>} : !nv.smem<32x64xbf16, 72> -> vector<32xbf16>
  %z = nv.fill {value = 0.000000e+00 : f64} : vector<32xf32>
  // CHECK: nv.mma_sync %fa, %fb, %z {mnk = array<i64: 32, 32, 32>, dtype = bf16} : vector<32xbf16>, vector<32xbf16>, vector<32xf32> -> vector<32xf32>
  %d = nv.mma_sync %fa, %fb, %z {mnk = array<i64: 32, 32, 32>, dtype = bf16} : vector<32xbf16>, vector<32xbf16>, vector<32xf32> -> vector<32xf32>
  // CHECK: nv.stfrag_shared %d, %sc[%c0, %c0]
  nv.stfrag_shared %d, %sc[%c0, %c0] {family = "mma_sync", role = "acc", mnk = array<i64: 32, 32, 32>, dtype = bf16, warps = array<i64: 2, 2>} : vector<32xf32>, !nv.smem<64x64xf32, 68>
  // CHECK: nv.stfrag_global %d, %C[%c0, %c0]
  nv.stfrag_global %d, %C[%c0, %c0] {family = "mma_sync", role = "acc", mnk = array<i64: 32, 32, 32>, dtype = bf16, warps = array<i64: 2, 2>} : vector<32xf32>, memref<?x?xf32>
  // Blocked register tiles: a 64x64 tile over 128 threads is 32 slots per thread.
  // CHECK: nv.load_global %C[%c0, %c0] {shape = array<i64: 64, 64>, threads = 128 : i64, pad = 0.000000e+00 : f64} : memref<?x?xf32> -> vector<32xf32>
  %x = nv.load_global %C[%c0, %c0] {shape = array<i64: 64, 64>, threads = 128 : i64, pad = 0.000000e+00 : f64} : memref<?x?xf32> -> vector<32xf32>
  // CHECK: nv.store_shared %x, %sc {shape = array<i64: 64, 64>, threads = 128 : i64}
  nv.store_shared %x, %sc {shape = array<i64: 64, 64>, threads = 128 : i64} : vector<32xf32>, !nv.smem<64x64xf32, 68>
  // CHECK: nv.load_shared %sc {shape = array<i64: 64, 64>, threads = 128 : i64, strides = array<i64: 1, 68>}
  %xt = nv.load_shared %sc {shape = array<i64: 64, 64>, threads = 128 : i64, strides = array<i64: 1, 68>} : !nv.smem<64x64xf32, 68> -> vector<32xf32>
  // CHECK: nv.reduce_shared %sc {shape = array<i64: 64, 1>, threads = 128 : i64, kind = "max", axis = 1 : i64} : !nv.smem<64x64xf32, 68> -> vector<1xf32>
  %r = nv.reduce_shared %sc {shape = array<i64: 64, 1>, threads = 128 : i64, kind = "max", axis = 1 : i64} : !nv.smem<64x64xf32, 68> -> vector<1xf32>
  // CHECK: nv.iota {shape = array<i64: 64, 64>, threads = 128 : i64, axis = 1 : i64} : vector<32xi32>
  %i = nv.iota {shape = array<i64: 64, 64>, threads = 128 : i64, axis = 1 : i64} : vector<32xi32>
  // CHECK: nv.map "exp" %x : vector<32xf32>
  %e = nv.map "exp" %x : vector<32xf32>
  // CHECK: nv.map "add" %e, %xt : vector<32xf32>
  %y = nv.map "add" %e, %xt : vector<32xf32>
  // CHECK: nv.cmp "lt" %y, %x : vector<32xf32> -> vector<32xi1>
  %m = nv.cmp "lt" %y, %x : vector<32xf32> -> vector<32xi1>
  // CHECK: nv.select %m, %y, %x : vector<32xi1>, vector<32xf32>
  %sel = nv.select %m, %y, %x : vector<32xi1>, vector<32xf32>
  // CHECK: nv.convert %sel : vector<32xf32> -> vector<32xbf16>
  %h = nv.convert %sel : vector<32xf32> -> vector<32xbf16>
  // CHECK: nv.splat %s : f32 -> vector<32xf32>
  %sp = nv.splat %s : f32 -> vector<32xf32>
  // CHECK: nv.store_global %sp, %C[%c0, %c0] {shape = array<i64: 64, 64>, threads = 128 : i64} : vector<32xf32>, memref<?x?xf32>
  nv.store_global %sp, %C[%c0, %c0] {shape = array<i64: 64, 64>, threads = 128 : i64} : vector<32xf32>, memref<?x?xf32>
  func.return
}
