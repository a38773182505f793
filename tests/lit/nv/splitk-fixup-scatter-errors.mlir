// Verifier rules of the scatter fixup and the windowed TMA store, each a coded NV_OP_INVALID naming the rule.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.splitk_fixup: scatter with splits=3: the n=128 block's 16 8-column groups must split evenly among the splits

// -----

func.func @groups_do_not_split_evenly(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.splitk_fixup: scatter with splits=3: the n=128 block's 16 8-column groups must split evenly among the splits}}
  %s, %l = nv.splitk_fixup %v, %t, %t, %t, %t {n = 128 : i64, splits = 3 : i64, blocks = 2 : i64, flag = 0 : i64, scatter} : vector<64xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @boxes_do_not_split_evenly(%C: memref<?x?xbf16>, %i: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xbf16>
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store_tma: parts=4: the 2 boxes of n=128 must split into 2 to 16 equal runs}}
  nv.wgacc_store_tma %v, %C[%i, %i], %i window %i {n = 128 : i64, stage = 0 : i64, parts = 4 : i64} : vector<64xbf16>, memref<?x?xbf16>
  func.return
}

// -----

func.func @window_without_parts(%C: memref<?x?xbf16>, %i: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xbf16>
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store_tma: a window takes both the operand (`window %part`) and the parts property}}
  nv.wgacc_store_tma %v, %C[%i, %i], %i window %i {n = 128 : i64, stage = 0 : i64} : vector<64xbf16>, memref<?x?xbf16>
  func.return
}

// -----

func.func @parts_without_window(%C: memref<?x?xbf16>, %i: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xbf16>
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store_tma: a window takes both the operand (`window %part`) and the parts property}}
  nv.wgacc_store_tma %v, %C[%i, %i], %i {n = 128 : i64, stage = 0 : i64, parts = 2 : i64} : vector<64xbf16>, memref<?x?xbf16>
  func.return
}
