// TILE_MMA_DTYPE_MISMATCH: tile.mma with unsupported dtype combinations.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%a: !tile.tile<64x32xbf16>, %b: !tile.tile<32x64xbf16>, %c: !tile.tile<64x64xf16>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_MMA_DTYPE_MISMATCH: tile.mma: bf16 inputs with a f16 accumulator are not supported
  %x = tile.mma %a, %b, %c : !tile.tile<64x32xbf16>, !tile.tile<32x64xbf16>, !tile.tile<64x64xf16>  // expected-error {{TILE_MMA_DTYPE_MISMATCH: tile.mma: bf16 inputs with a f16 accumulator are not supported}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<64x32xbf16>, %b: !tile.tile<32x64xf16>, %c: !tile.tile<64x64xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_MMA_DTYPE_MISMATCH: tile.mma: a is bf16 but b is f16
  %x = tile.mma %a, %b, %c : !tile.tile<64x32xbf16>, !tile.tile<32x64xf16>, !tile.tile<64x64xf32>  // expected-error {{TILE_MMA_DTYPE_MISMATCH: tile.mma: a is bf16 but b is f16}}
  func.return
}
