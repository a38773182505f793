// warp-specialize's general loop body keeps wgmma groups in flight across loop steps when the loop's only
// register work is its wgmmas accumulating into what it carries (ws_match.accumulates_only): a GEMM's K-loop, or
// two accumulators at once (@dual: the gate and up projections of a gated MLP, read from A and two weights).
// Step j issues its wgmmas on step j-1's accumulators still in flight (wgmma chains on its own accumulator
// registers), waits until only its own groups are pending, and only then frees step j-1's ring slots; after the
// loop it waits for all and frees the last step's. Operands waited for in one tile.wait share one barrier pair
// (one expect_tx of their bytes).
// Negative (@rescaled): an accumulator the loop rescales before its wgmma is register work on a wgmma result, so
// each wgmma is waited for where it is issued and frees its own slot.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 store=registers}' | FileCheck %s
// CHECK-LABEL: func.func @dual(
// CHECK:         nv.mbarrier_expect_tx %{{[0-9]+}} {base = 147456 : i64, bytes = 24576 : i64}
// CHECK-NEXT:    nv.tma_load %A
// CHECK-NEXT:    nv.tma_load %B1
// CHECK:         %{{[0-9]+}}, %[[G:[0-9]+]], %[[U:[0-9]+]] = scf.for %{{[0-9]+}} = %c0_1 to %K step %c64_1 iter_args(%[[STEP:[0-9]+]] = %[[FIRST:[0-9]+]], %[[GIN:[0-9]+]] = %{{[0-9]+}}, %[[UIN:[0-9]+]] = %{{[0-9]+}})
// CHECK:           %[[GD:[0-9]+]] = nv.wgmma %[[GIN]]
// CHECK:           %[[UD:[0-9]+]] = nv.wgmma %[[UIN]]
// CHECK-NEXT:      %[[GW:[0-9]+]] = nv.wgmma_wait %[[GD]] {pending = 2 : i64}
// CHECK-NEXT:      %[[UW:[0-9]+]] = nv.wgmma_wait %[[UD]] {pending = 2 : i64}
// CHECK-NEXT:      %[[STARTED:[0-9]+]] = arith.cmpi ne, %[[STEP]], %[[FIRST]] : index
// CHECK-NEXT:      scf.if %[[STARTED]] {
// CHECK:             nv.mbarrier_arrive %{{[0-9]+}} {base = 147480 : i64, per = "warpgroup"}
// CHECK-NEXT:        nv.mbarrier_arrive %{{[0-9]+}} {base = 147528 : i64, per = "warpgroup"}
// CHECK:           scf.yield %{{[0-9]+}}, %[[GW]], %[[UW]]
// CHECK:         nv.wgmma_wait %[[G]] {pending = 0 : i64}
// CHECK-NEXT:    nv.wgmma_wait %[[U]] {pending = 0 : i64}
// CHECK:         nv.wgacc_store
// CHECK-LABEL: func.func @rescaled(
// CHECK:         nv.mbarrier_expect_tx %{{[0-9]+}} {base = 98304 : i64, bytes = 32768 : i64}
// CHECK:         nv.map "mul"
// CHECK-NEXT:    nv.mbarrier_wait
// CHECK-NEXT:    %[[D:[0-9]+]] = nv.wgmma
// CHECK-NEXT:    nv.wgmma_wait %[[D]] {pending = 0 : i64}
// CHECK-NEXT:    nv.mbarrier_arrive
// CHECK-NOT:     pending = 1
// CHECK:         func.return
func.func @dual(%A: memref<?x?xbf16>, %B1: memref<?x?xbf16>, %B2: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c64 : index
  %zero = tile.constant 0.0 : !tile.tile<128x64xf32>
  %acc:2 = scf.for %k = %c0 to %K step %c64 iter_args(%g = %zero, %u = %zero) -> (!tile.tile<128x64xf32>, !tile.tile<128x64xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b1t = tile.load %B1[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x64xbf16>
    %b2t = tile.load %B2[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x64xbf16>
    %b1 = tile.transpose %b1t : !tile.tile<64x64xbf16> -> !tile.tile<64x64xbf16>
    %b2 = tile.transpose %b2t : !tile.tile<64x64xbf16> -> !tile.tile<64x64xbf16>
    %g2 = tile.mma %a, %b1, %g : !tile.tile<128x64xbf16>, !tile.tile<64x64xbf16>, !tile.tile<128x64xf32>
    %u2 = tile.mma %a, %b2, %u : !tile.tile<128x64xbf16>, !tile.tile<64x64xbf16>, !tile.tile<128x64xf32>
    scf.yield %g2, %u2 : !tile.tile<128x64xf32>, !tile.tile<128x64xf32>
  }
  %x = tile.mul %acc#0, %acc#1 : !tile.tile<128x64xf32>
  tile.store %x, %C[%m0, %n0] : !tile.tile<128x64xf32> -> memref<?x?xf32>
  func.return
}
func.func @rescaled(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %zero = tile.constant 0.0 : !tile.tile<128x128xf32>
  %half = tile.constant 0.5 : !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (!tile.tile<128x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %s = tile.mul %c, %half : !tile.tile<128x128xf32>
    %d = tile.mma %a, %b, %s : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
