// IR_PARSE: Malformed text: unknown ops and dialects, undefined values, bad syntax.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f() {
  // CHECK: .mlir:[[# @LINE + 1]]:19: error: IR_PARSE: Operation tile.bogus is not registered
  %x = tile.bogus 1  // expected-error {{IR_PARSE: Operation tile.bogus is not registered}}
  func.return
}

// -----

func.func @f() {
  // CHECK: .mlir:[[# @LINE + 1]]:16: error: IR_PARSE: Operation foo.bar is not registered
  %x = foo.bar : i32  // expected-error {{IR_PARSE: Operation foo.bar is not registered}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x4xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:21: error: IR_PARSE: SSA value used before assignment
  %x = tile.add %a, %nope : !tile.tile<4x4xf32>  // expected-error {{IR_PARSE: SSA value used before assignment}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x4xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:21: error: IR_PARSE
  %x = tile.load %a pad : !tile.tile<4x4xf32>  // expected-error {{IR_PARSE}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:28: error: IR_PARSE
func.func @f(%a: !nope.type<1>) {  // expected-error {{IR_PARSE}}
  func.return
}
