// OPT_DIAGNOSTIC_UNEXPECTED: --verify-diagnostics fails on an error no annotation expects; chunks that
// behave as annotated still pass and print their IR.
// RUN: not tessera-opt --split-input-file --verify-diagnostics %s 2>&1 | FileCheck %s

// CHECK: func.func @fine()
func.func @fine() {
  func.return
}

// -----

func.func @unannotated() {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: OPT_DIAGNOSTIC_UNEXPECTED: unexpected error TILE_ATTR_INVALID: tile.program_id: axis 3 is not 0, 1 or 2
  %a = tile.program_id 3
  func.return
}

// -----

func.func @matched() {
  %a = tile.program_id 4 // expected-error {{TILE_ATTR_INVALID: tile.program_id: axis 4}}
  func.return
}
// CHECK-NOT: axis 4
