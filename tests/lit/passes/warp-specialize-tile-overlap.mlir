// Tile overlap (ws_tile_overlap.py) on the general loop body: with overlap on, consumers sharing each tile and
// room for two slots of the once-per-tile operand (Q), Q is double-buffered by tile parity (each wgmma reading it
// names its slot: a_slot) and the consumer's tile loop is rotated: step 0's S = Q K(0)^T of the next tile is
// issued after this tile's loop (its barrier waits under `if` the next tile runs a step), this tile's epilogue
// (the store) runs while it computes, then it is waited for and the next tile starts from its result, carried by
// the tile loop. A tile whose loop runs no step waits for its Q before it frees the slot. schedule=pingpong and
// overlap=0 keep one Q slot and no tile overlap. (store=registers: the TMA store epilogue, which would stage O in
// shared memory, is not what this fixture checks; see warp-specialize-body-tma-store.mlir.)
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a store=registers stages=2}' | FileCheck %s
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a store=registers stages=2 schedule=pingpong}' | FileCheck %s --check-prefix=OFF
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a store=registers stages=2 overlap=0}' | FileCheck %s --check-prefix=OFF
// CHECK: func.func @two_mmas{{.*}}nv.smem_bytes = 65632
// CHECK-NEXT: nv.mbarrier_init {base = 65536 : i64, count = 2 : i64, arrivals = 1 : i64}
// CHECK-NEXT: nv.mbarrier_init {base = 65552 : i64, count = 2 : i64, arrivals = 256 : i64}
// CHECK: nv.tma_load %Q{{.*}}stage_bytes = 16384
// The first tile's head, before the tile loop:
// CHECK: scf.if
// CHECK-NEXT: nv.mbarrier_wait {{.*}}base = 65536
// CHECK-NEXT: nv.mbarrier_wait {{.*}}base = 65568
// CHECK: nv.wgmma {{.*}} a_slot
// CHECK-NEXT: nv.wgmma_wait {{.*}}pending = 0
// CHECK-NEXT: scf.if
// CHECK-NEXT: nv.mbarrier_arrive {{.*}}base = 65584
// CHECK: scf.for {{.*}} -> (index, vector<32xf32>)
// CHECK: } else {
// CHECK-NEXT: nv.mbarrier_wait {{.*}}base = 65536
// CHECK-NEXT: nv.mbarrier_arrive {{.*}}base = 65552 : i64, per = "thread"
// The next tile's head, this tile's store under it, then its wait:
// CHECK: scf.if
// CHECK-NEXT: nv.mbarrier_wait {{.*}}base = 65536
// CHECK-NEXT: nv.mbarrier_wait {{.*}}base = 65568
// CHECK: nv.wgmma {{.*}} a_slot
// CHECK-NOT: nv.wgmma_wait
// CHECK: nv.wgacc_store
// CHECK-NEXT: nv.wgmma_wait {{.*}}pending = 0
// CHECK-NEXT: scf.if
// CHECK-NEXT: nv.mbarrier_arrive {{.*}}base = 65584
// CHECK: scf.yield {{.*}} : index, vector<32xf32>
// OFF: nv.mbarrier_init {base = {{[0-9]+}} : i64, count = 1 : i64, arrivals = 1 : i64}
// OFF-NOT: a_slot
func.func @two_mmas(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %V: memref<?x64xbf16>, %O: memref<?x64xf32>) {
  %pid = tile.program_id 0
  %c128 = arith.constant 128 : index
  %c0 = arith.constant 0 : index
  %n = memref.dim %K, %c0 : memref<?x64xbf16>
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %pid, %c128 : index
  %q = tile.load %Q[%m0, %c0] pad 0.0 : memref<?x64xbf16> -> !tile.tile<128x64xbf16>
  %zero = tile.constant 0.0 : !tile.tile<128x64xf32>
  %acc = scf.for %n0 = %c0 to %n step %c64 iter_args(%o = %zero) -> (!tile.tile<128x64xf32>) {
    %k = tile.load %K[%n0, %c0] pad 0.0 : memref<?x64xbf16> -> !tile.tile<64x64xbf16>
    %v = tile.load %V[%n0, %c0] pad 0.0 : memref<?x64xbf16> -> !tile.tile<64x64xbf16>
    %kt = tile.transpose %k : !tile.tile<64x64xbf16> -> !tile.tile<64x64xbf16>
    %s = tile.mma %q, %kt, %zero : !tile.tile<128x64xbf16>, !tile.tile<64x64xbf16>, !tile.tile<128x64xf32>
    %e = tile.exp2 %s : !tile.tile<128x64xf32>
    %p = tile.convert %e : !tile.tile<128x64xf32> -> !tile.tile<128x64xbf16>
    %o2 = tile.mma %p, %v, %o : !tile.tile<128x64xbf16>, !tile.tile<64x64xbf16>, !tile.tile<128x64xf32>
    scf.yield %o2 : !tile.tile<128x64xf32>
  }
  tile.store %acc, %O[%m0, %c0] : !tile.tile<128x64xf32> -> memref<?x64xf32>
  func.return
}
