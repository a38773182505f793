// IR_DOMINANCE: Uses that their definitions do not dominate (xDSL checks no dominance itself).
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f() {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: IR_DOMINANCE: arith.addi: operand #0 is used where its definition does not dominate
  %x = arith.addi %y, %y : index  // expected-error {{IR_DOMINANCE: arith.addi: operand #0 is used where its definition does not dominate}}
  %y = arith.constant 1 : index
  func.return
}

// -----

func.func @f(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // CHECK: .mlir:[[# @LINE + 1]]:5: error: IR_DOMINANCE: arith.addi: operand #1
    %a = arith.addi %i, %b : index  // expected-error {{IR_DOMINANCE: arith.addi: operand #1}}
    scf.yield
  }
  %b = arith.constant 1 : index
  func.return
}
