// warp-specialize{streamk=1}: stream-K. Each CTA (c of P, from nv.block_id / nv.grid_dim) walks its own list of
// units 0, 1, ...: first its whole tiles, then the pieces of the streamed tiles (the partial last wave and one
// wave before it) that its equal share of their K steps crosses. A unit's K range is a piece of its tile's
// steps; before the epilogue each consumer hands its 64-row block to nv.streamk_fixup with the tile's linear
// index (its counters), the piece, the tile's piece count and the scratch slots; only where it reports `last`
// does the epilogue run, on the sum. The kernel says nv.streamk = 1, so the runtime launches a CTA per SM.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 streamk=1}' | FileCheck %s
// The named pipeline forwards streamk= to warp-specialize.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 streamk=1}' > %t.direct
// RUN: tessera-opt %s -p 'tessera-lower-to-nv{arch=sm_90a stages=3 streamk=1}' > %t.named
// RUN: diff %t.direct %t.named
// streamk=0 (the default) is the data-parallel kernel: no fixup, no attribute.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 streamk=0}' | FileCheck %s --check-prefix=OFF
// OFF-NOT: streamk
// A 2-CTA cluster streams pairs of tiles: each CTA of a pair owns its own two slots (slot_stride 4).
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 streamk=1 cluster=2}' | FileCheck %s --check-prefix=PAIR
// PAIR: nv.cluster = 2 : i64, nv.streamk = 1 : i64}
// PAIR: nv.streamk_fixup {{.*}} {n = 256 : i64, blocks = 2 : i64, slot_stride = 4 : i64, flag = {{[0-9]+}} : i64}

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:  nv.smem_bytes = 180280 : i64, nv.arch = "sm_90a", nv.streamk = 1 : i64}
// The producer: CTA c of P, then its units 0 .. units-1 in steps of 1, each a K range of its tile.
// CHECK:       %[[C:[0-9]+]] = nv.block_id {axis = 0 : i64} : index
// CHECK-NEXT:  %[[P:[0-9]+]] = nv.grid_dim {axis = 0 : i64} : index
// CHECK:       arith.remsi %{{[0-9]+}}, %[[P]] : index
// CHECK:       arith.cmpi sgt
// CHECK:       %{{[0-9]+}} = scf.for %{{[0-9]+}} = %{{[0-9]+}} to %{{[0-9]+}} step %{{[0-9]+}} iter_args(
// CHECK:       %[[LO:[0-9]+]] = arith.addi %c0_1, %{{[0-9]+}} : index
// CHECK:       %[[HI:[0-9]+]] = arith.minsi %K_1, %{{[0-9]+}} : index
// CHECK:       scf.for %{{[0-9]+}} = %[[LO]] to %[[HI]] step %c64_1
// CHECK:       nv.tma_load %A
// The consumers: the same units, then the fixup and the epilogue under its verdict.
// CHECK:       nv.setmaxnreg {regs = 232 : i64, action = "inc"}
// CHECK:       nv.wgmma
// CHECK:       %[[SUM:[0-9]+]], %[[LAST:[0-9]+]] = nv.streamk_fixup %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[B:[0-9]+]], %[[B]] {n = 256 : i64, blocks = 2 : i64, slot_stride = 2 : i64, flag = 180272 : i64} : vector<128xf32> -> vector<128xf32>
// CHECK-NEXT:  scf.if %[[LAST]] {
// CHECK-NEXT:  nv.splat %alpha
// CHECK-NOT:   nv.streamk_fixup
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
