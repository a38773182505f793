// TILE_SPACE_INVALID: Tiles in the wrong memory space for the op.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%A: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_SPACE_INVALID: tile.load: result !tile.tile<4x4xf32, smem> must be in space 'reg', not 'smem'
  %x = tile.load %A[%c0, %c0] pad 0.0 : memref<?x?xf32> -> !tile.tile<4x4xf32, smem>  // expected-error {{TILE_SPACE_INVALID: tile.load: result !tile.tile<4x4xf32, smem> must be in space 'reg', not 'smem'}}
  func.return
}

// -----

func.func @f() {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_SPACE_INVALID: tile.alloc: result !tile.tile<4x4xf32> must be in space 'smem'
  %s = tile.alloc : !tile.tile<4x4xf32>  // expected-error {{TILE_SPACE_INVALID: tile.alloc: result !tile.tile<4x4xf32> must be in space 'smem'}}
  func.return
}
