// An all-f32 tile.mma runs on CUDA cores in f32, never on tensor cores in tf32. tile-to-fragments leaves
// it a tile-level op (a bf16 one still becomes fragments); lower-tile-to-nv stages A and B through the
// scratch region (barrier, write, barrier) and runs nv.blocked_mma on the loop-carried accumulator.
// RUN: tessera-opt %s --split-input-file -p 'tile-to-fragments{arch=sm_80}' | FileCheck %s --check-prefix=FRAG
// FRAG-LABEL: func.func @gemm_f32(
// FRAG-NOT: tile.fragment
// FRAG: tile.mma %{{.*}} : !tile.tile<64x16xf32>, !tile.tile<16x64xf32>, !tile.tile<64x64xf32>
// FRAG-NOT: tile.fragment
// FRAG-LABEL: func.func @gemm_bf16(
// FRAG-NOT: tile.mma
// FRAG: tile.fragment_mma
// FRAG-NOT: tile.mma
//
// RUN: tessera-opt %s --split-input-file -p 'tessera-lower-to-nv{arch=sm_80}' | FileCheck %s
// RUN: tessera-opt %s --split-input-file -p 'tessera-lower-to-nv{arch=sm_90 stages=2}' | FileCheck %s
// CHECK-LABEL: func.func @gemm_f32(
// CHECK-SAME: nv.num_threads = 128 : i64
// CHECK: %[[C:.*]] = nv.load_global %C
// CHECK: scf.for %{{.*}} iter_args(%[[ACC:.*]] = %[[C]]) -> (vector<32xf32>)
// CHECK: %[[A:.*]] = nv.load_global %A
// CHECK: %[[B:.*]] = nv.load_global %B
// CHECK: %[[SA:.*]] = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x16xf32, 20>
// CHECK-NEXT: %[[SB:.*]] = nv.alloc_shared {offset = 5120 : i64} : !nv.smem<16x64xf32, 68>
// CHECK-NEXT: nv.barrier
// CHECK-NEXT: nv.store_shared %[[A]], %[[SA]]
// CHECK-NEXT: nv.store_shared %[[B]], %[[SB]]
// CHECK-NEXT: nv.barrier
// CHECK-NEXT: %[[D:.*]] = nv.blocked_mma %[[SA]], %[[SB]], %[[ACC]] {shape = array<i64: 64, 64>, threads = 128 : i64} : !nv.smem<64x16xf32, 20>, !nv.smem<16x64xf32, 68>, vector<32xf32> -> vector<32xf32>
// CHECK-NEXT: scf.yield %[[D]] : vector<32xf32>
// CHECK-NOT: tile.
// CHECK-LABEL: func.func @gemm_bf16(
// CHECK-NOT: nv.blocked_mma
// CHECK: nv.mma_sync

// C += A @ B over a K loop, the accumulator starting from C's tile.
func.func @gemm_f32(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %init = tile.load %C[%c0, %c0] pad 0.0 : memref<?x?xf32> -> !tile.tile<64x64xf32>
  %acc = scf.for %k = %c0 to %K step %c16 iter_args(%c = %init) -> (!tile.tile<64x64xf32>) {
    %a = tile.load %A[%c0, %k] pad 0.0 : memref<?x?xf32> -> !tile.tile<64x16xf32>
    %b = tile.load %B[%k, %c0] pad 0.0 : memref<?x?xf32> -> !tile.tile<16x64xf32>
    %d = tile.mma %a, %b, %c : !tile.tile<64x16xf32>, !tile.tile<16x64xf32>, !tile.tile<64x64xf32>
    scf.yield %d : !tile.tile<64x64xf32>
  }
  tile.store %acc, %C[%c0, %c0] : !tile.tile<64x64xf32> -> memref<?x?xf32>
  func.return
}

// -----

// The same kernel with bf16 inputs: tensor-core fragments and mma.sync, as before.
func.func @gemm_bf16(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %init = tile.load %C[%c0, %c0] pad 0.0 : memref<?x?xf32> -> !tile.tile<64x64xf32>
  %acc = scf.for %k = %c0 to %K step %c16 iter_args(%c = %init) -> (!tile.tile<64x64xf32>) {
    %a = tile.load %A[%c0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x16xbf16>
    %b = tile.load %B[%k, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<16x64xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<64x16xbf16>, !tile.tile<16x64xbf16>, !tile.tile<64x64xf32>
    scf.yield %d : !tile.tile<64x64xf32>
  }
  tile.store %acc, %C[%c0, %c0] : !tile.tile<64x64xf32> -> memref<?x?xf32>
  func.return
}
