// TILE_MEMREF_MISMATCH: Tiles and memrefs that disagree on rank, offsets or element type.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%A: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_MEMREF_MISMATCH: tile.load: 1 offsets given for a rank-2 memref
  %x = tile.load %A[%c0] pad 0.0 : memref<?x?xf32> -> !tile.tile<4x4xf32>  // expected-error {{TILE_MEMREF_MISMATCH: tile.load: 1 offsets given for a rank-2 memref}}
  func.return
}

// -----

func.func @f(%A: memref<?x?xf16>, %t: !tile.tile<4x4xf32>) {
  %c0 = arith.constant 0 : index
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_MEMREF_MISMATCH: tile.store: memref element type f16 differs from tile element type f32
  tile.store %t, %A[%c0, %c0] : !tile.tile<4x4xf32> -> memref<?x?xf16>  // expected-error {{TILE_MEMREF_MISMATCH: tile.store: memref element type f16 differs from tile element type f32}}
  func.return
}
