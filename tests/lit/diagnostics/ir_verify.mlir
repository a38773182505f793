// IR_VERIFY: Structural violations with no more specific code.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%a: !tile.tile<4x4xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: IR_VERIFY: tile.add takes 2 operand(s), got 1
  %x = tile.add %a : !tile.tile<4x4xf32>  // expected-error {{IR_VERIFY: tile.add takes 2 operand(s), got 1}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x4xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: IR_VERIFY: tile.neg takes 1 operand(s), got 2
  %x = tile.neg %a, %a : !tile.tile<4x4xf32>  // expected-error {{IR_VERIFY: tile.neg takes 1 operand(s), got 2}}
  func.return
}
