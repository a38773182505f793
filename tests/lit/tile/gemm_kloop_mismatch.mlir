// The GEMM K-loop of gemm_kloop.mlir with a mismatched fragment at the loop boundary: each
// contract field that differs is named by its own code, at the op where the types meet.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

// Role: the loop yields the A operand instead of the accumulator.
func.func @yield_role(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %sa = tile.alloc : !tile.tile<128x32xbf16, smem>
  %sb = tile.alloc : !tile.tile<32x128xbf16, smem>
  %z = tile.fragment_zero : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %z) -> (!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">) {
    %va = tile.view %A[%c0, %k] : memref<?x?xbf16> -> !tile.tile<128x32xbf16, global>
    %vb = tile.view %B[%k, %c0] : memref<?x?xbf16> -> !tile.tile<32x128xbf16, global>
    %ta = tile.async_copy %va, %sa pad 0.0 : !tile.tile<128x32xbf16, global>, !tile.tile<128x32xbf16, smem>
    %tb = tile.async_copy %vb, %sb pad 0.0 : !tile.tile<32x128xbf16, global>, !tile.tile<32x128xbf16, smem>
    tile.wait %ta, %tb
    %fa = tile.fragment_pack %sa[%c0, %c0] warps [2, 2] : !tile.tile<128x32xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
    %fb = tile.fragment_pack %sb[%c0, %c0] warps [2, 2] : !tile.tile<32x128xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">
    %d = tile.fragment_mma %fa, %fb, %c : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">, !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">, !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
    // CHECK: .mlir:[[# @LINE + 2]]:5: error: TILE_FRAGMENT_ROLE_MISMATCH: scf.for: yielded value #0 has role 'a' where 'acc' is required
    // expected-error@+1 {{TILE_FRAGMENT_ROLE_MISMATCH: scf.for: yielded value #0 has role 'a' where 'acc' is required}}
    scf.yield %fa : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
  }
  tile.fragment_store %acc, %C[%c0, %c0] warps [2, 2] : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync"> -> memref<?x?xf32>
  func.return
}

// -----

// Family: a family="auto" fragment flows back into a family="mma_sync" accumulator (auto equals only auto).
func.func @yield_family(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %sa = tile.alloc : !tile.tile<128x32xbf16, smem>
  %sb = tile.alloc : !tile.tile<32x128xbf16, smem>
  %z = tile.fragment_zero : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %z) -> (!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">) {
    %va = tile.view %A[%c0, %k] : memref<?x?xbf16> -> !tile.tile<128x32xbf16, global>
    %vb = tile.view %B[%k, %c0] : memref<?x?xbf16> -> !tile.tile<32x128xbf16, global>
    %ta = tile.async_copy %va, %sa pad 0.0 : !tile.tile<128x32xbf16, global>, !tile.tile<128x32xbf16, smem>
    %tb = tile.async_copy %vb, %sb pad 0.0 : !tile.tile<32x128xbf16, global>, !tile.tile<32x128xbf16, smem>
    tile.wait %ta, %tb
    %fa = tile.fragment_pack %sa[%c0, %c0] warps [2, 2] : !tile.tile<128x32xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
    %fb = tile.fragment_pack %sb[%c0, %c0] warps [2, 2] : !tile.tile<32x128xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">
    %d = tile.fragment_mma %fa, %fb, %c : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">, !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">, !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
    %w = tile.fragment_zero : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="auto">
    // CHECK: .mlir:[[# @LINE + 2]]:5: error: TILE_FRAGMENT_FAMILY_MISMATCH: scf.for: yielded value #0 has family 'auto' where 'mma_sync' is required
    // expected-error@+1 {{TILE_FRAGMENT_FAMILY_MISMATCH: scf.for: yielded value #0 has family 'auto' where 'mma_sync' is required}}
    scf.yield %w : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="auto">
  }
  tile.fragment_store %acc, %C[%c0, %c0] warps [2, 2] : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync"> -> memref<?x?xf32>
  func.return
}

// -----

// Accumulator type: an f16 accumulator is yielded for the f32 one.
func.func @yield_acc(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %sa = tile.alloc : !tile.tile<128x32xbf16, smem>
  %sb = tile.alloc : !tile.tile<32x128xbf16, smem>
  %z = tile.fragment_zero : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %z) -> (!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">) {
    %va = tile.view %A[%c0, %k] : memref<?x?xbf16> -> !tile.tile<128x32xbf16, global>
    %vb = tile.view %B[%k, %c0] : memref<?x?xbf16> -> !tile.tile<32x128xbf16, global>
    %ta = tile.async_copy %va, %sa pad 0.0 : !tile.tile<128x32xbf16, global>, !tile.tile<128x32xbf16, smem>
    %tb = tile.async_copy %vb, %sb pad 0.0 : !tile.tile<32x128xbf16, global>, !tile.tile<32x128xbf16, smem>
    tile.wait %ta, %tb
    %fa = tile.fragment_pack %sa[%c0, %c0] warps [2, 2] : !tile.tile<128x32xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
    %fb = tile.fragment_pack %sb[%c0, %c0] warps [2, 2] : !tile.tile<32x128xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">
    %d = tile.fragment_mma %fa, %fb, %c : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">, !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">, !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
    %h = tile.fragment_zero : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f16, role="acc", layout="row", family="mma_sync">
    // CHECK: .mlir:[[# @LINE + 2]]:5: error: TILE_FRAGMENT_ACC_MISMATCH: scf.for: yielded value #0 has acc 'f16' where 'f32' is required
    // expected-error@+1 {{TILE_FRAGMENT_ACC_MISMATCH: scf.for: yielded value #0 has acc 'f16' where 'f32' is required}}
    scf.yield %h : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f16, role="acc", layout="row", family="mma_sync">
  }
  tile.fragment_store %acc, %C[%c0, %c0] warps [2, 2] : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync"> -> memref<?x?xf32>
  func.return
}
