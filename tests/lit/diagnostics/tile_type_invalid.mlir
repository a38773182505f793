// TILE_TYPE_INVALID: Malformed !tile.tile types.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

// CHECK: .mlir:[[# @LINE + 1]]:37: error: TILE_TYPE_INVALID: tile dims must be positive
func.func @f(%a: !tile.tile<0x4xf32>) {  // expected-error {{TILE_TYPE_INVALID: tile dims must be positive}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:32: error: TILE_TYPE_INVALID: dynamic dims are not allowed in a tile
func.func @f(%a: !tile.tile<?x4xf32>) {  // expected-error {{TILE_TYPE_INVALID: dynamic dims are not allowed in a tile}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:44: error: TILE_TYPE_INVALID: unknown tile space 'shared'
func.func @f(%a: !tile.tile<4x4xf32, shared>) {  // expected-error {{TILE_TYPE_INVALID: unknown tile space 'shared'}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:39: error: TILE_TYPE_INVALID: tile element type must be a float or integer type
func.func @f(%a: !tile.tile<4x4xindex>) {  // expected-error {{TILE_TYPE_INVALID: tile element type must be a float or integer type}}
  func.return
}

// -----

func.func @f() {
  // CHECK: .mlir:[[# @LINE + 1]]:21: error: TILE_TYPE_INVALID: expected '<' after !tile.tile
  %s = tile.alloc : !tile.tile  // expected-error {{TILE_TYPE_INVALID: expected '<' after !tile.tile}}
  func.return
}
