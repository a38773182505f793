// TILE_TYPE_MISMATCH: Operands of elementwise ops (or non-tiles) with the wrong type.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%a: !tile.tile<4x4xf32>, %b: !tile.tile<4x4xf16>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_TYPE_MISMATCH: tile.add: operand #1 has type !tile.tile<4x4xf16> but the result is !tile.tile<4x4xf32>
  %x = tile.add %a, %b : !tile.tile<4x4xf32>  // expected-error {{TILE_TYPE_MISMATCH: tile.add: operand #1 has type !tile.tile<4x4xf16> but the result is !tile.tile<4x4xf32>}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x4xf32>, %s: f16) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_TYPE_MISMATCH: tile.splat: scalar of type f16 cannot fill
  %x = tile.splat %s : f16 -> !tile.tile<4x4xf32>  // expected-error {{TILE_TYPE_MISMATCH: tile.splat: scalar of type f16 cannot fill}}
  func.return
}
