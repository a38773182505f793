// TILE_ATTR_INVALID: Op attributes with illegal values.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f() {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ATTR_INVALID: tile.program_id: axis 5 is not 0, 1 or 2
  %a = tile.program_id 5  // expected-error {{TILE_ATTR_INVALID: tile.program_id: axis 5 is not 0, 1 or 2}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x4xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ATTR_INVALID: tile.reduce: kind 'prod' is not one of sum, max, min
  %x = tile.reduce prod 1 %a : !tile.tile<4x4xf32> -> !tile.tile<4x1xf32>  // expected-error {{TILE_ATTR_INVALID: tile.reduce: kind 'prod' is not one of sum, max, min}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x4xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ATTR_INVALID: tile.cmp: predicate 'lte'
  %x = tile.cmp lte %a, %a : !tile.tile<4x4xf32>  // expected-error {{TILE_ATTR_INVALID: tile.cmp: predicate 'lte'}}
  func.return
}

// -----

func.func @f() {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ATTR_INVALID: tile.constant: 1.5 is not an integer value
  %x = tile.constant 1.5 : !tile.tile<4x4xi32>  // expected-error {{TILE_ATTR_INVALID: tile.constant: 1.5 is not an integer value}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x64xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ATTR_INVALID: tile.scan: axis 2 is out of range for !tile.tile<4x64xf32>
  %x = tile.scan sum 2 %a : !tile.tile<4x64xf32> -> !tile.tile<4x64xf32>  // expected-error {{TILE_ATTR_INVALID: tile.scan: axis 2 is out of range for !tile.tile<4x64xf32>}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x64xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ATTR_INVALID: tile.scan: kind 'max' is not one of sum
  %x = tile.scan max 1 %a : !tile.tile<4x64xf32> -> !tile.tile<4x64xf32>  // expected-error {{TILE_ATTR_INVALID: tile.scan: kind 'max' is not one of sum}}
  func.return
}
