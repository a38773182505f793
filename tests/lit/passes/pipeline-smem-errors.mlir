// pipeline-smem refuses, naming why, a loop it cannot pipeline, and pipelines nothing partially.
// (The code is matched as TILE_PIPELINE_ + {{UNSUPPORTED}}: lit reads "UNSUPPORTED" and a colon as a directive.)
// RUN: tessera-opt %s --split-input-file --verify-diagnostics --pass-pipeline='pipeline-smem{stages=2}'
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='pipeline-smem{stages=2}' 2>&1 | FileCheck %s --check-prefix=MSG
// MSG: pipeline-smem-errors.mlir:{{[0-9]+}}:5: error: TILE_PIPELINE_{{UNSUPPORTED}}: pipeline-smem{stages=2}: cannot pipeline the scf.for at {{.*}}pipeline-smem-errors.mlir:{{[0-9]+}}:3: the copy's source depends on a loop-carried value; only the induction variable and loop invariants can be re-computed for later iterations
// MSG: error: TILE_PIPELINE_{{UNSUPPORTED}}: {{.*}}: buffer !tile.tile<64x16xbf16, smem> is also used by tile.fragment_pack at {{.*}}pipeline-smem-errors.mlir:{{[0-9]+}}:3; a pipelined buffer may only be filled by one copy and read by fragment_pack in this loop
// MSG: error: TILE_PIPELINE_{{UNSUPPORTED}}: {{.*}}: buffer !tile.tile<64x16xbf16, smem> is read before the tile.wait on its copy
//
// stages is required and bounded; unknown options are errors.
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='pipeline-smem' 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: OPT_OPTION_MISSING: pass 'pipeline-smem' requires option 'stages'
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='pipeline-smem{stages=0}' 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: OPT_OPTION_INVALID: {{.*}}stages=0 must be an integer from 1 to 12
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='pipeline-smem{stages=2 bogus=1}' 2>&1 | FileCheck %s --check-prefix=BOGUS
// BOGUS: error: OPT_OPTION_UNKNOWN: pass 'pipeline-smem' has no option 'bogus'

// The view's K offset is loop-carried (%kk), so iteration k+1's view cannot be computed at iteration k.
func.func @carried_offset(%A: memref<?x?xbf16>, %K: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %sa = tile.alloc : !tile.tile<64x16xbf16, smem>
  %kend = scf.for %k = %c0 to %K step %c16 iter_args(%kk = %c0) -> (index) {
    %ga = tile.view %A[%c0, %kk] : memref<?x?xbf16> -> !tile.tile<64x16xbf16, global>
    // expected-error@+1 {{depends on a loop-carried value}}
    %ta = tile.async_copy %ga, %sa pad 0.0 : !tile.tile<64x16xbf16, global>, !tile.tile<64x16xbf16, smem>
    tile.wait %ta
    %f = tile.fragment_pack %sa[%c0, %c0] warps [2, 1] : !tile.tile<64x16xbf16, smem> -> !tile.fragment<m=32, n=8, k=16, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
    %kn = arith.addi %kk, %c16 : index
    scf.yield %kn : index
  }
  func.return
}

// -----

// The buffer is read again after the loop: rotating it would change what that read sees.
func.func @read_after_loop(%A: memref<?x?xbf16>, %K: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %sa = tile.alloc : !tile.tile<64x16xbf16, smem>
  scf.for %k = %c0 to %K step %c16 {
    %ga = tile.view %A[%c0, %k] : memref<?x?xbf16> -> !tile.tile<64x16xbf16, global>
    // expected-error@+1 {{is also used by tile.fragment_pack}}
    %ta = tile.async_copy %ga, %sa pad 0.0 : !tile.tile<64x16xbf16, global>, !tile.tile<64x16xbf16, smem>
    tile.wait %ta
    %f = tile.fragment_pack %sa[%c0, %c0] warps [2, 1] : !tile.tile<64x16xbf16, smem> -> !tile.fragment<m=32, n=8, k=16, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
  }
  %late = tile.fragment_pack %sa[%c0, %c0] warps [2, 1] : !tile.tile<64x16xbf16, smem> -> !tile.fragment<m=32, n=8, k=16, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
  func.return
}

// -----

// The pack reads the buffer before waiting for the copy into it.
func.func @pack_before_wait(%A: memref<?x?xbf16>, %K: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %sa = tile.alloc : !tile.tile<64x16xbf16, smem>
  scf.for %k = %c0 to %K step %c16 {
    %ga = tile.view %A[%c0, %k] : memref<?x?xbf16> -> !tile.tile<64x16xbf16, global>
    %ta = tile.async_copy %ga, %sa pad 0.0 : !tile.tile<64x16xbf16, global>, !tile.tile<64x16xbf16, smem>
    // expected-error@+1 {{is read before the tile.wait on its copy}}
    %f = tile.fragment_pack %sa[%c0, %c0] warps [2, 1] : !tile.tile<64x16xbf16, smem> -> !tile.fragment<m=32, n=8, k=16, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
    tile.wait %ta
  }
  func.return
}
