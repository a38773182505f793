// TILE_LOOP_TYPE_MISMATCH: scf.for loop-carried values whose types change.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%a: !tile.tile<4x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %a) -> (!tile.tile<4x4xf32>) {
    %h = tile.convert %t : !tile.tile<4x4xf32> -> !tile.tile<4x4xf16>
    // CHECK: .mlir:[[# @LINE + 1]]:5: error: TILE_LOOP_TYPE_MISMATCH: scf.for: yielded value #0 has type !tile.tile<4x4xf16> but !tile.tile<4x4xf32> is required
    scf.yield %h : !tile.tile<4x4xf16>  // expected-error {{TILE_LOOP_TYPE_MISMATCH: scf.for: yielded value #0 has type !tile.tile<4x4xf16> but !tile.tile<4x4xf32> is required}}
  }
  func.return
}
