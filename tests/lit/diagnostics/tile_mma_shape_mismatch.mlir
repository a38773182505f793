// TILE_MMA_SHAPE_MISMATCH: tile.mma operands whose shapes do not compose.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%a: !tile.tile<64x32xbf16>, %b: !tile.tile<64x64xbf16>, %c: !tile.tile<64x64xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_MMA_SHAPE_MISMATCH: tile.mma: a is 64x32 but b is 64x64: inner dims 32 and 64 differ
  %x = tile.mma %a, %b, %c : !tile.tile<64x32xbf16>, !tile.tile<64x64xbf16>, !tile.tile<64x64xf32>  // expected-error {{TILE_MMA_SHAPE_MISMATCH: tile.mma: a is 64x32 but b is 64x64: inner dims 32 and 64 differ}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<64x32xbf16>, %b: !tile.tile<32x64xbf16>, %c: !tile.tile<32x64xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_MMA_SHAPE_MISMATCH: tile.mma: a@b is 64x64 but acc is 32x64
  %x = tile.mma %a, %b, %c : !tile.tile<64x32xbf16>, !tile.tile<32x64xbf16>, !tile.tile<32x64xf32>  // expected-error {{TILE_MMA_SHAPE_MISMATCH: tile.mma: a@b is 64x64 but acc is 32x64}}
  func.return
}
