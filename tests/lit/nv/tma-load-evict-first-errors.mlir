// nv.tma_load evict_first rules: the hint is for a box one CTA reads once, so not with a multicast box (a coded
// NV_OP_INVALID), and the predicate is an i1 (a verifier error naming the operand).
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.tma_load: evict_first with a multicast box: the hint is for a box one CTA reads once

// -----

func.func @evict_first_multicast(%B: memref<?x?xbf16>, %i: index, %once: i1) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: evict_first with a multicast box: the hint is for a box one CTA reads once}}
  nv.tma_load %B[%i, %i], %i evict_first %once {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64, multicast = 3 : i64} : memref<?x?xbf16>
  func.return
}
