// warp-specialize{splitk=2}: split-K in one launch. The persistent loop walks tiles x 2 units; unit t is split
// t % 2 of tile t / 2, which runs K steps [s * per, min(K, (s + 1) * per)) with per = ceil(steps / 2) steps.
// Both roles walk the same units (the producer loads only its split's K range). Before the epilogue each consumer
// hands its 64-row block to nv.splitk_fixup with the tile's linear index (its scratch record) and the split;
// only where it reports `last` does the epilogue run, on the sum. The shared-memory map gains one verdict word
// per consumer warpgroup after the barriers (180272: 4 + 4 bytes), and the kernel says nv.splitk = 2 so the
// runtime launches CTAs for the units, not the tiles.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 splitk=2}' | FileCheck %s
// The named pipeline forwards splitk= to warp-specialize.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 splitk=2}' > %t.direct
// RUN: tessera-opt %s -p 'tessera-lower-to-nv{arch=sm_90a stages=3 splitk=2}' > %t.named
// RUN: diff %t.direct %t.named
// splitk=1 (the default) is the unsplit kernel: no fixup, no attribute.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 splitk=1}' | FileCheck %s --check-prefix=ONE
// ONE-NOT: nv.splitk
// Option values outside [1, 16] are coded errors naming the option.
// RUN: not tessera-opt %s -p 'warp-specialize{arch=sm_90a splitk=0}' 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: splitk=0 must be an integer from 1 to 16
// RUN: not tessera-opt %s -p 'warp-specialize{arch=sm_90a splitk=17}' 2>&1 | FileCheck %s --check-prefix=MANY
// MANY: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: splitk=17 must be an integer from 1 to 16

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:  nv.smem_bytes = 180280 : i64, nv.arch = "sm_90a", nv.splitk = 2 : i64}
// The producer's unit loop: split and tile of unit t, then its K range ends at min(K, lo + per * 64).
// CHECK:       scf.for %[[T:[0-9]+]] =
// CHECK:       %[[S:[0-9]+]] = arith.remsi %[[T]], %{{[0-9]+}} : index
// CHECK:       arith.divsi %[[T]], %{{[0-9]+}} : index
// CHECK:       %[[LO:[0-9]+]] = arith.addi %c0, %{{[0-9]+}} : index
// CHECK:       %[[HI:[0-9]+]] = arith.minsi %K, %{{[0-9]+}} : index
// CHECK:       scf.for %{{[0-9]+}} = %[[LO]] to %[[HI]] step %c64
// CHECK:       nv.tma_load %A
// The consumers: the same units, then the fixup and the epilogue under its verdict.
// CHECK:       nv.setmaxnreg {regs = 232 : i64, action = "inc"}
// CHECK:       %[[CS:[0-9]+]] = arith.remsi %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK:       arith.minsi %K_1, %{{[0-9]+}} : index
// CHECK-NEXT:  %[[ROW:[0-9]+]] = arith.muli %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK-NEXT:  %[[TILE:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[ROW]] : index
// CHECK:       nv.wgmma
// CHECK:       %[[SUM:[0-9]+]], %[[LAST:[0-9]+]] = nv.splitk_fixup %{{[0-9]+}}, %[[TILE]], %[[CS]], %[[C:[0-9]+]], %[[C]] {n = 256 : i64, splits = 2 : i64, blocks = 2 : i64, flag = 180272 : i64} : vector<128xf32> -> vector<128xf32>
// CHECK-NEXT:  scf.if %[[LAST]] {
// CHECK-NEXT:  nv.splat %alpha
// CHECK-NOT:   nv.splitk_fixup
// CHECK:       nv.wgacc_store_tma
// CHECK:       nv.tma_store_drain
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %bias: memref<1x?xf32>, %alpha: f32) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c256 : index
  %init = tile.constant 0.0 : !tile.tile<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x256xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %b = tile.transpose %bt : !tile.tile<256x64xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<128x256xf32>
    scf.yield %d : !tile.tile<128x256xf32>
  }
  %al = tile.splat %alpha : f32 -> !tile.tile<128x256xf32>
  %scaled = tile.mul %acc, %al : !tile.tile<128x256xf32>
  %b1 = tile.load %bias[%c0, %n0] pad 0.0 : memref<1x?xf32> -> !tile.tile<1x256xf32>
  %bb = tile.broadcast %b1 : !tile.tile<1x256xf32> -> !tile.tile<128x256xf32>
  %x = tile.add %scaled, %bb : !tile.tile<128x256xf32>
  tile.store %x, %C[%m0, %n0] : !tile.tile<128x256xf32> -> memref<?x?xf32>
  func.return
}
