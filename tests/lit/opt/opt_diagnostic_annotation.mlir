// OPT_DIAGNOSTIC_ANNOTATION: malformed expected-error annotations are errors, not silently skipped.
// RUN: not tessera-opt --split-input-file --verify-diagnostics %s 2>&1 | FileCheck %s

func.func @no_braces() {
  // CHECK: .mlir:[[# @LINE + 1]]:26: error: OPT_DIAGNOSTIC_ANNOTATION: cannot read the annotation 'expected-error TILE_ATTR_INVALID'
  %a = tile.program_id 7 // expected-error TILE_ATTR_INVALID
  func.return
}

// -----

func.func @empty() {
  // CHECK: .mlir:[[# @LINE + 1]]:26: error: OPT_DIAGNOSTIC_ANNOTATION: expected-error has an empty
  %a = tile.program_id 7 // expected-error {{}}
  func.return
}

// -----

func.func @warning() {
  // CHECK: .mlir:[[# @LINE + 1]]:26: error: OPT_DIAGNOSTIC_ANNOTATION: expected-warning is not supported
  %a = tile.program_id 7 // expected-warning {{TILE_ATTR_INVALID}}
  func.return
}

// -----

func.func @outside() {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: OPT_DIAGNOSTIC_ANNOTATION: expected-error points at line [[# @LINE + 11]], outside this input
  // expected-error@+10 {{TILE_ATTR_INVALID}}
  func.return
}
