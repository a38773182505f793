// tile-to-fragments{arch=sm_80}: a Tile IR GEMM becomes staged, typed mma_sync fragments.
// RUN: tessera-opt %s --pass-pipeline='tile-to-fragments{arch=sm_80}' | FileCheck %s
// The output is valid Fragment IR that prints and parses back unchanged.
// RUN: tessera-opt %s --pass-pipeline='tile-to-fragments{arch=sm_80}' > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice

// C = A @ B over a K-loop: the accumulator starts as fragment_zero and is carried as a fragment.
// CHECK-LABEL: func.func @gemm(
// CHECK:      %sa = tile.alloc : !tile.tile<128x32xbf16, smem>
// CHECK-NEXT: %sb = tile.alloc : !tile.tile<32x128xbf16, smem>
// CHECK-NEXT: %acc_init = tile.fragment_zero : [[ACC:!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">]]
// CHECK-NEXT: %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %acc_init) -> ([[ACC]]) {
// CHECK-NEXT:   %ga = tile.view %A[%m0, %k] : memref<?x?xbf16> -> !tile.tile<128x32xbf16, global>
// CHECK-NEXT:   %ta = tile.async_copy %ga, %sa pad 0.0 : !tile.tile<128x32xbf16, global>, !tile.tile<128x32xbf16, smem>
// CHECK-NEXT:   %gb = tile.view %B[%k, %n0] : memref<?x?xbf16> -> !tile.tile<32x128xbf16, global>
// CHECK-NEXT:   %tb = tile.async_copy %gb, %sb pad 0.0 : !tile.tile<32x128xbf16, global>, !tile.tile<32x128xbf16, smem>
// CHECK-NEXT:   tile.wait %ta, %tb
// CHECK-NEXT:   %frag_a = tile.fragment_pack %sa[%c0, %c0] warps [2, 2] : !tile.tile<128x32xbf16, smem> -> [[A:!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">]]
// CHECK-NEXT:   %frag_b = tile.fragment_pack %sb[%c0, %c0] warps [2, 2] : !tile.tile<32x128xbf16, smem> -> [[B:!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">]]
// CHECK-NEXT:   %d = tile.fragment_mma %frag_a, %frag_b, %c : [[A]], [[B]], [[ACC]]
// CHECK-NEXT:   scf.yield %d : [[ACC]]
// CHECK-NEXT: }
// CHECK-NEXT: tile.fragment_store %acc, %C[%m0, %n0] warps [2, 2] : [[ACC]] -> memref<?x?xf32>
// CHECK-NOT:  tile.mma
// CHECK-NOT:  tile.load
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %init = tile.constant 0.0 : !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %init) -> (!tile.tile<128x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x32xbf16>
    %b = tile.load %B[%k, %n0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<32x128xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x32xbf16>, !tile.tile<32x128xbf16>, !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}

// C += A @ B^T, then relu: the incoming C tile is packed (never replaced by a zero), B^T is packed from
// registers after the transpose, and the epilogue reads the accumulator through one unpack.
// CHECK-LABEL: func.func @gemm_acc_bt_relu(
// CHECK:      %init = tile.load %C[%m0, %n0] pad 0.0 : memref<?x?xf32> -> !tile.tile<16x64xf32>
// CHECK-NEXT: %sa = tile.alloc : !tile.tile<16x32xf16, smem>
// CHECK-NEXT: %acc_init = tile.fragment_pack %init[%c0, %c0] warps [1, 4] : !tile.tile<16x64xf32> -> [[ACC2:!tile.fragment<m=16, n=16, k=32, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">]]
// CHECK-NEXT: %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %acc_init) -> ([[ACC2]]) {
// CHECK-NOT:    tile.alloc
// CHECK:        %bt = tile.load %Bt[%n0, %k] pad 0.0 : memref<?x?xf16> -> !tile.tile<64x32xf16>
// CHECK-NEXT:   %b = tile.transpose %bt : !tile.tile<64x32xf16> -> !tile.tile<32x64xf16>
// CHECK:        tile.wait %ta
// CHECK-NEXT:   %frag_a = tile.fragment_pack %sa[%c0, %c0] warps [1, 4] : !tile.tile<16x32xf16, smem>
// CHECK-NEXT:   %frag_b = tile.fragment_pack %b[%c0, %c0] warps [1, 4] : !tile.tile<32x64xf16> -> !tile.fragment<m=16, n=16, k=32, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">
// CHECK-NEXT:   %d = tile.fragment_mma %frag_a, %frag_b, %c :
// CHECK-NEXT:   scf.yield %d : [[ACC2]]
// CHECK-NEXT: }
// CHECK-NEXT: %acc_1 = tile.fragment_unpack %acc warps [1, 4] : [[ACC2]] -> !tile.tile<16x64xf32>
// CHECK-NEXT: %zero = tile.constant 0.0 : !tile.tile<16x64xf32>
// CHECK-NEXT: %r = tile.max %acc_1, %zero : !tile.tile<16x64xf32>
// CHECK-NEXT: tile.store %r, %C[%m0, %n0] : !tile.tile<16x64xf32> -> memref<?x?xf32>
// CHECK-NOT:  tile.fragment_zero
func.func @gemm_acc_bt_relu(%A: memref<?x?xf16>, %Bt: memref<?x?xf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %pm, %c16 : index
  %n0 = arith.muli %pn, %c64 : index
  %init = tile.load %C[%m0, %n0] pad 0.0 : memref<?x?xf32> -> !tile.tile<16x64xf32>
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %init) -> (!tile.tile<16x64xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xf16> -> !tile.tile<16x32xf16>
    %bt = tile.load %Bt[%n0, %k] pad 0.0 : memref<?x?xf16> -> !tile.tile<64x32xf16>
    %b = tile.transpose %bt : !tile.tile<64x32xf16> -> !tile.tile<32x64xf16>
    %d = tile.mma %a, %b, %c : !tile.tile<16x32xf16>, !tile.tile<32x64xf16>, !tile.tile<16x64xf32>
    scf.yield %d : !tile.tile<16x64xf32>
  }
  %zero = tile.constant 0.0 : !tile.tile<16x64xf32>
  %r = tile.max %acc, %zero : !tile.tile<16x64xf32>
  tile.store %r, %C[%m0, %n0] : !tile.tile<16x64xf32> -> memref<?x?xf32>
  func.return
}

// No loop: a single mma on a loaded accumulator, stored straight back (C += A @ B for one K-tile).
// CHECK-LABEL: func.func @single_step(
// CHECK:      %frag_acc = tile.fragment_pack %c[%c0, %c0] warps [2, 2] : !tile.tile<64x64xf32>
// CHECK-NEXT: %d = tile.fragment_mma %frag_a, %frag_b, %frag_acc
// CHECK-NEXT: tile.fragment_store %d, %C[%c0, %c0] warps [2, 2]
func.func @single_step(%A: memref<64x16xbf16>, %B: memref<16x64xbf16>, %C: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] pad 0.0 : memref<64x16xbf16> -> !tile.tile<64x16xbf16>
  %b = tile.load %B[%c0, %c0] pad 0.0 : memref<16x64xbf16> -> !tile.tile<16x64xbf16>
  %c = tile.load %C[%c0, %c0] pad 0.0 : memref<64x64xf32> -> !tile.tile<64x64xf32>
  %d = tile.mma %a, %b, %c : !tile.tile<64x16xbf16>, !tile.tile<16x64xbf16>, !tile.tile<64x64xf32>
  tile.store %d, %C[%c0, %c0] : !tile.tile<64x64xf32> -> memref<64x64xf32>
  func.return
}
