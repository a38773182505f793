// A GEMM-shaped K-loop whose accumulator is a typed fragment carried as an scf.for iter_arg:
// the iter_arg's type states the contract, so init, block argument, yield and result verify by type equality.
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tile-verify-target{arch=sm_80})' | FileCheck %s

// CHECK-LABEL: func.func @gemm(
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %sa = tile.alloc : !tile.tile<128x32xbf16, smem>
  %sb = tile.alloc : !tile.tile<32x128xbf16, smem>
  %z = tile.fragment_zero : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
  // CHECK: %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %z) -> (!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">) {
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %z) -> (!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">) {
    %va = tile.view %A[%m0, %k] : memref<?x?xbf16> -> !tile.tile<128x32xbf16, global>
    %vb = tile.view %B[%k, %n0] : memref<?x?xbf16> -> !tile.tile<32x128xbf16, global>
    %ta = tile.async_copy %va, %sa pad 0.0 : !tile.tile<128x32xbf16, global>, !tile.tile<128x32xbf16, smem>
    %tb = tile.async_copy %vb, %sb pad 0.0 : !tile.tile<32x128xbf16, global>, !tile.tile<32x128xbf16, smem>
    // CHECK: tile.wait %ta, %tb
    tile.wait %ta, %tb
    %fa = tile.fragment_pack %sa[%c0, %c0] warps [2, 2] : !tile.tile<128x32xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
    %fb = tile.fragment_pack %sb[%c0, %c0] warps [2, 2] : !tile.tile<32x128xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">
    // CHECK: %d = tile.fragment_mma %fa, %fb, %c :
    %d = tile.fragment_mma %fa, %fb, %c : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">, !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">, !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
    // CHECK: scf.yield %d : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
    scf.yield %d : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
  }
  // CHECK: tile.fragment_store %acc, %C[%m0, %n0] warps [2, 2]
  tile.fragment_store %acc, %C[%m0, %n0] warps [2, 2] : !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync"> -> memref<?x?xf32>
  func.return
}

// Two loop-carried values (a fragment accumulator and a running-max tile), as in flash attention.
// CHECK-LABEL: func.func @two_carried(
func.func @two_carried(%A: memref<?x?xf32>, %N: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = tile.fragment_zero : !tile.fragment<m=16, n=8, k=8, elem=f32, acc=f32, role="acc", layout="row", family="auto">
  %m = tile.constant -inf : !tile.tile<16x1xf32>
  // CHECK: %r, %r_1 = scf.for %i = %c0 to %N step %c1 iter_args(%acc = %z, %mx = %m) -> (!tile.fragment<{{.*}}family="auto">, !tile.tile<16x1xf32>) {
  %r:2 = scf.for %i = %c0 to %N step %c1 iter_args(%acc = %z, %mx = %m) -> (!tile.fragment<m=16, n=8, k=8, elem=f32, acc=f32, role="acc", layout="row", family="auto">, !tile.tile<16x1xf32>) {
    %t = tile.load %A[%i, %c0] pad -inf : memref<?x?xf32> -> !tile.tile<16x1xf32>
    %nm = tile.max %mx, %t : !tile.tile<16x1xf32>
    scf.yield %acc, %nm : !tile.fragment<m=16, n=8, k=8, elem=f32, acc=f32, role="acc", layout="row", family="auto">, !tile.tile<16x1xf32>
  }
  func.return
}
