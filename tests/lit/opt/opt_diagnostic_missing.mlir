// OPT_DIAGNOSTIC_MISSING: --verify-diagnostics fails when an expected error is not produced: on a clean
// line, on the wrong line, or with other text.
// RUN: not tessera-opt --split-input-file --verify-diagnostics %s 2>&1 | FileCheck %s

func.func @clean() {
  // CHECK: .mlir:[[# @LINE + 1]]:26: error: OPT_DIAGNOSTIC_MISSING: expected error {{[{][{]}}TILE_ATTR_INVALID{{[}][}]}} on line [[# @LINE + 1]] was not produced; no error was produced
  %a = tile.program_id 0 // expected-error {{TILE_ATTR_INVALID}}
  func.return
}

// -----

func.func @wrong_line() {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: OPT_DIAGNOSTIC_UNEXPECTED: unexpected error TILE_ATTR_INVALID: tile.program_id: axis 7
  %a = tile.program_id 7
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: OPT_DIAGNOSTIC_MISSING: expected error {{.*}} on line [[# @LINE + 2]] was not produced; produced instead: {{.*}}:[[# @LINE - 1]]:3: error: TILE_ATTR_INVALID
  // expected-error@+1 {{TILE_ATTR_INVALID}}
  func.return
}

// -----

func.func @wrong_text() {
  // CHECK: .mlir:[[# @LINE + 1]]:26: error: OPT_DIAGNOSTIC_MISSING: expected error {{[{][{]}}TILE_TYPE_INVALID{{[}][}]}} on line [[# @LINE + 1]] was not produced
  %a = tile.program_id 7 // expected-error {{TILE_TYPE_INVALID}}
  func.return
}
