// nv.splitk_fixup with `scatter` (split-K fixup=scatter) and nv.wgacc_store_tma with a window parse, verify and
// print back unchanged; lower-tile-to-nv keeps them. Split %split of 4 sums its own 64 columns of the 128 x 256
// tile's block %c1 once every split has arrived, then stores only box %split of the four 64-column boxes.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_90a}' | FileCheck %s --check-prefix=LOWERED
// LOWERED: nv.splitk_fixup {{.*}}scatter
// LOWERED: nv.wgacc_store_tma {{.*}} window

// CHECK-LABEL: func.func @scatter(
func.func @scatter(%C: memref<?x?xbf16>, %tile: index, %split: index)
    attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a", nv.smem_bytes = 197632 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = nv.fill {value = 2.0 : f64} : vector<128xf32>
  // CHECK: %sum, %last = nv.splitk_fixup %acc, %tile, %split, %c1, %c0 {n = 256 : i64, splits = 4 : i64, blocks = 2 : i64, flag = 1024 : i64, scatter} : vector<128xf32> -> vector<128xf32>
  %sum, %last = nv.splitk_fixup %acc, %tile, %split, %c1, %c0 {n = 256 : i64, splits = 4 : i64, blocks = 2 : i64, flag = 1024 : i64, scatter} : vector<128xf32> -> vector<128xf32>
  %out = nv.convert %sum : vector<128xf32> -> vector<128xbf16>
  // CHECK: nv.wgacc_store_tma %out, %C[%c0, %c0], %c0 window %split {n = 256 : i64, stage = 163840 : i64, parts = 4 : i64} : vector<128xbf16>, memref<?x?xbf16>
  nv.wgacc_store_tma %out, %C[%c0, %c0], %c0 window %split {n = 256 : i64, stage = 163840 : i64, parts = 4 : i64} : vector<128xbf16>, memref<?x?xbf16>
  nv.tma_store_drain
  func.return
}
