// The register ops on wgmma's D layout (row reductions, row broadcasts, indices, row-vector stores, RS wgmma)
// and the rank-4 window store parse, verify and print back unchanged; lower-tile-to-nv keeps them.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_90a}' | FileCheck %s --check-prefix=LOWERED
// LOWERED: nv.wgacc_reduce_rows "max"
// LOWERED: nv.wgmma_rs

// CHECK-LABEL: func.func @softmax_rows(
func.func @softmax_rows(%s: vector<64xf32>, %O: memref<?x?x?x?xbf16>, %LSE: memref<?x?x?xf32>, %b: index, %h: index,
                        %row: index, %stage: index)
    attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a", nv.smem_bytes = 65536 : i64} {
  // CHECK: %m = nv.wgacc_reduce_rows "max" %s {n = 128 : i64} : vector<64xf32> -> vector<2xf32>
  %m = nv.wgacc_reduce_rows "max" %s {n = 128 : i64} : vector<64xf32> -> vector<2xf32>
  // CHECK-NEXT: %l = nv.wgacc_reduce_rows "sum" %s {n = 128 : i64} : vector<64xf32> -> vector<2xf32>
  %l = nv.wgacc_reduce_rows "sum" %s {n = 128 : i64} : vector<64xf32> -> vector<2xf32>
  // CHECK-NEXT: %mb = nv.wgrows_broadcast %m {n = 128 : i64} : vector<2xf32> -> vector<64xf32>
  %mb = nv.wgrows_broadcast %m {n = 128 : i64} : vector<2xf32> -> vector<64xf32>
  // CHECK-NEXT: %cols = nv.wgacc_index {axis = 1 : i64, n = 128 : i64} : vector<64xi32>
  %cols = nv.wgacc_index {axis = 1 : i64, n = 128 : i64} : vector<64xi32>
  // CHECK-NEXT: %rows = nv.wgrows_index : vector<2xi32>
  %rows = nv.wgrows_index : vector<2xi32>
  %p = nv.convert %mb : vector<64xf32> -> vector<64xbf16>
  %acc = nv.fill {value = 1.0 : f64} : vector<32xf32>
  // CHECK: %o = nv.wgmma_rs %acc, %p, %stage {n = 64 : i64, k = 128 : i64, dtype = bf16, b = array<i64: 0, 16384, 128>, swizzle = 128 : i64, b_major = "mn"} : vector<32xf32>, vector<64xbf16> -> vector<32xf32>
  %o = nv.wgmma_rs %acc, %p, %stage {n = 64 : i64, k = 128 : i64, dtype = bf16, b = array<i64: 0, 16384, 128>, swizzle = 128 : i64, b_major = "mn"} : vector<32xf32>, vector<64xbf16> -> vector<32xf32>
  // The wait names the RS wgmma's A registers (`hold`): they stay the hardware's until the group is done.
  // CHECK: %w = nv.wgmma_wait %o hold %p : vector<64xbf16> {pending = 0 : i64} : vector<32xf32> -> vector<32xf32>
  %w = nv.wgmma_wait %o hold %p : vector<64xbf16> {pending = 0 : i64} : vector<32xf32> -> vector<32xf32>
  %ob = nv.convert %w : vector<32xf32> -> vector<32xbf16>
  // CHECK: nv.wgacc_store %ob, %O[%b, %h, %row, %row] {n = 64 : i64} : vector<32xbf16>, memref<?x?x?x?xbf16>
  nv.wgacc_store %ob, %O[%b, %h, %row, %row] {n = 64 : i64} : vector<32xbf16>, memref<?x?x?x?xbf16>
  // CHECK-NEXT: nv.wgrows_store %l, %LSE[%b, %h, %row] : vector<2xf32>, memref<?x?x?xf32>
  nv.wgrows_store %l, %LSE[%b, %h, %row] : vector<2xf32>, memref<?x?x?xf32>
  func.return
}
