// nv.streamk_fixup (stream-K's meeting of a tile's pieces) parses, verifies and prints back unchanged;
// lower-tile-to-nv keeps it, and the emitted kernel gets the runtime-owned scratch parameter.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_90a}' | FileCheck %s --check-prefix=LOWERED
// LOWERED: nv.streamk_fixup

// CHECK-LABEL: func.func @fixup(
func.func @fixup(%C: memref<?x?xf32>, %tile: index, %piece: index, %pieces: index, %slot: index, %head: index)
    attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a", nv.smem_bytes = 1032 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = nv.fill {value = 2.0 : f64} : vector<64xf32>
  // Piece %piece of %pieces hands over 64-row block %c1 of a 128 x 128 tile; piece 0's CTA owns slots %slot and
  // %slot + 1 (%head picks the second), piece p's CTA slot %slot + 2p; consumer %c0's verdict word is at 1024.
  // CHECK: %sum, %last = nv.streamk_fixup %acc, %tile, %piece, %pieces, %slot, %head, %c1, %c0 {n = 128 : i64, blocks = 2 : i64, slot_stride = 2 : i64, flag = 1024 : i64} : vector<64xf32> -> vector<64xf32>
  %sum, %last = nv.streamk_fixup %acc, %tile, %piece, %pieces, %slot, %head, %c1, %c0 {n = 128 : i64, blocks = 2 : i64, slot_stride = 2 : i64, flag = 1024 : i64} : vector<64xf32> -> vector<64xf32>
  // CHECK-NEXT: scf.if %last {
  scf.if %last {
    nv.wgacc_store %sum, %C[%c0, %c0] {n = 128 : i64} : vector<64xf32>, memref<?x?xf32>
  }
  func.return
}
