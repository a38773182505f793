// nv.tma_load rank rules: one leading coordinate per dim before row and col, a rank of at most 5 (what
// cp.async.bulk.tensor copies), and multicast boxes of 2-D memrefs only; each a coded NV_OP_INVALID.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.tma_load: source memref<?x?x?x?xbf16> has rank 4: it is read at 4 coordinates [outer..., row, col] (2 before row and col), got 3

// -----

func.func @too_few_outer(%Q: memref<?x?x?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: source memref<?x?x?x?xbf16> has rank 4: it is read at 4 coordinates [outer..., row, col] (2 before row and col), got 3}}
  nv.tma_load %Q[%i, %i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?x?x?xbf16>
  func.return
}

// -----

func.func @outer_on_2d(%A: memref<?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: source memref<?x?xbf16> has rank 2: it is read at 2 coordinates [outer..., row, col] (0 before row and col), got 3}}
  nv.tma_load %A[%i, %i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @multicast_rank_4(%Q: memref<?x?x?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: a multicast box of the rank-4 source memref<?x?x?x?xbf16>: multicast loads are 2-D only}}
  nv.tma_load %Q[%i, %i, %i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64, multicast = 3 : i64} : memref<?x?x?x?xbf16>
  func.return
}

// -----

func.func @rank_6(%T: memref<?x?x?x?x?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: source memref<?x?x?x?x?x?xbf16> must be a 2-D bf16, f16 or f32 memref, or one of rank 3 to 5 read at [outer..., row, col]}}
  nv.tma_load %T[%i, %i, %i, %i, %i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?x?x?x?x?xbf16>
  func.return
}

// -----

func.func @one_coordinate(%A: memref<?x?xbf16>, %i: index) {
  // expected-error@+1 {{nv.tma_load needs at least [row, col], got 1 coordinate(s)}}
  nv.tma_load %A[%i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  func.return
}
