// TILE_FRAGMENT_BARE: A fragment type without its contract.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f() {
  // CHECK: .mlir:[[# @LINE + 1]]:29: error: TILE_FRAGMENT_BARE: a bare !tile.fragment has no contract
  %z = tile.fragment_zero : !tile.fragment  // expected-error {{TILE_FRAGMENT_BARE: a bare !tile.fragment has no contract}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:32: error: TILE_FRAGMENT_BARE
func.func @f(%a: !tile.fragment) {  // expected-error {{TILE_FRAGMENT_BARE}}
  func.return
}
