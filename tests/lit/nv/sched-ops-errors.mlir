// The dynamic tile scheduler's shared-memory words are 4-byte aligned offsets inside a CTA's shared memory, each a
// coded NV_OP_INVALID naming the op and the offset; nv.tile_fetch's result is an index (a parse-time type error).
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.smem_put: word base 1026 must be a multiple of 4 in [0, 232448)
// CHECK: error: NV_OP_INVALID: nv.smem_get: word base -4 must be a multiple of 4 in [0, 232448)
// CHECK: error: NV_OP_INVALID: nv.smem_get: word base 240000 must be a multiple of 4 in [0, 232448)
// RUN: not tessera-opt %S/Inputs/tile-fetch-not-index.mlir 2>&1 | FileCheck %s --check-prefix=FETCH
// FETCH: error: IR_PARSE: i32 should be of base attribute index

// -----

func.func @misaligned(%v: index, %n: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.smem_put: word base 1026 must be a multiple of 4 in [0, 232448)}}
  nv.smem_put %v, %n {base = 1026 : i64}
  func.return
}

// -----

func.func @negative(%n: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.smem_get: word base -4 must be a multiple of 4 in [0, 232448)}}
  %v = nv.smem_get %n {base = -4 : i64} : index
  func.return
}

// -----

func.func @outside(%n: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.smem_get: word base 240000 must be a multiple of 4 in [0, 232448)}}
  %v = nv.smem_get %n {base = 240000 : i64} : index
  func.return
}
