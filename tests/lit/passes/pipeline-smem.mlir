// pipeline-smem{stages=3} after tile-to-fragments: three rotating buffers per operand, a prologue issuing
// iterations 0 and 1, a steady state that waits for iteration k and issues k+2, and an epilogue drain.
// RUN: tessera-opt %s --pass-pipeline='tile-to-fragments{arch=sm_80},pipeline-smem{stages=3}' | FileCheck %s
// stages=1 changes nothing: the Fragment IR is byte-identical with and without the pass (DESIGN lesson 6).
// RUN: tessera-opt %s --pass-pipeline='tile-to-fragments{arch=sm_80}' > %t.frag
// RUN: tessera-opt %s --pass-pipeline='tile-to-fragments{arch=sm_80},pipeline-smem{stages=1}' > %t.one
// RUN: diff %t.frag %t.one
// On Tile IR (no async copies yet) it has nothing to do either.
// RUN: tessera-opt %s > %t.tile
// RUN: tessera-opt %s --pass-pipeline='pipeline-smem{stages=3}' > %t.tile3
// RUN: diff %t.tile %t.tile3

// CHECK-LABEL: func.func @gemm(
// CHECK:      %sa = tile.alloc : [[SA:!tile.tile<128x32xbf16, smem>]]
// CHECK-NEXT: %sa1 = tile.alloc : [[SA]]
// CHECK-NEXT: %sa2 = tile.alloc : [[SA]]
// CHECK-NEXT: %sb = tile.alloc : [[SB:!tile.tile<32x128xbf16, smem>]]
// CHECK-NEXT: %sb1 = tile.alloc : [[SB]]
// CHECK-NEXT: %sb2 = tile.alloc : [[SB]]
// CHECK-NEXT: %acc_init = tile.fragment_zero : [[ACC:!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">]]
// Prologue: iteration 0 (k = lb) into stage 0, iteration 1 (k = lb + step) into stage 1.
// CHECK-NEXT: %ga = tile.view %A[%m0, %c0] : memref<?x?xbf16> -> !tile.tile<128x32xbf16, global>
// CHECK-NEXT: %gb = tile.view %B[%c0, %n0] : memref<?x?xbf16> -> !tile.tile<32x128xbf16, global>
// CHECK-NEXT: %ta = tile.async_copy %ga, %sa pad 0.0
// CHECK-NEXT: %tb = tile.async_copy %gb, %sb pad 0.0
// CHECK-NEXT: %k1 = arith.addi %c0, %cbk : index
// CHECK-NEXT: %ga_1 = tile.view %A[%m0, %k1]
// CHECK-NEXT: %gb_1 = tile.view %B[%k1, %n0]
// CHECK-NEXT: %ta_1 = tile.async_copy %ga_1, %sa1 pad 0.0
// CHECK-NEXT: %tb_1 = tile.async_copy %gb_1, %sb1 pad 0.0
// CHECK-NEXT: %c2 = arith.constant 2 : index
// CHECK-NEXT: [[TWO_STEPS:%.+]] = arith.muli %cbk, %c2 : index
// CHECK-NEXT: %acc, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %ta_pending0, %ta_pending1, %tb_pending0, %tb_pending1 = scf.for %k = %c0 to %K step %cbk iter_args(%c = %acc_init, %sa_s0 = %sa, %sa_s1 = %sa1, %sa_s2 = %sa2, %sb_s0 = %sb, %sb_s1 = %sb1, %sb_s2 = %sb2, %ta_s0 = %ta, %ta_s1 = %ta_1, %tb_s0 = %tb, %tb_s1 = %tb_1) -> ([[ACC]], [[SA]], [[SA]], [[SA]], [[SB]], [[SB]], [[SB]], !tile.async_token, !tile.async_token, !tile.async_token, !tile.async_token) {
// Steady state: wait for iteration k, then refill the buffer iteration k-1 read with iteration k+2.
// CHECK-NEXT:   tile.wait %ta_s0, %tb_s0
// CHECK-NEXT:   %k_next = arith.addi %k, [[TWO_STEPS]] : index
// CHECK-NEXT:   %ga_2 = tile.view %A[%m0, %k_next]
// CHECK-NEXT:   %gb_2 = tile.view %B[%k_next, %n0]
// CHECK-NEXT:   %ta_2 = tile.async_copy %ga_2, %sa_s2 pad 0.0
// CHECK-NEXT:   %tb_2 = tile.async_copy %gb_2, %sb_s2 pad 0.0
// CHECK-NEXT:   %frag_a = tile.fragment_pack %sa_s0[%c0, %c0] warps [2, 2]
// CHECK-NEXT:   %frag_b = tile.fragment_pack %sb_s0[%c0, %c0] warps [2, 2]
// CHECK-NEXT:   %d = tile.fragment_mma %frag_a, %frag_b, %c :
// CHECK-NEXT:   scf.yield %d, %sa_s1, %sa_s2, %sa_s0, %sb_s1, %sb_s2, %sb_s0, %ta_s1, %ta_2, %tb_s1, %tb_2 :
// CHECK-NEXT: }
// Epilogue: drain the two copies per operand still in flight.
// CHECK-NEXT: tile.wait %ta_pending0, %ta_pending1, %tb_pending0, %tb_pending1
// CHECK-NEXT: tile.fragment_store %acc, %C[%m0, %n0] warps [2, 2] : [[ACC]] -> memref<?x?xf32>
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
