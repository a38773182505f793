// --split-input-file: each `// -----` chunk is parsed, verified and printed on its own; diagnostics
// keep the file's true line numbers; a failing chunk does not stop the others, but sets exit 1.
// RUN: not tessera-opt --split-input-file %s -p 'builtin.module(cse)' 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR --input-file=%t.err
// RUN: not tessera-opt --split-input-file %s -p cse --print-ir-after-all -o %t.never 2>&1 | FileCheck %s --check-prefix=BAD
// Without the flag the separators are comments, and the second @b is a redefinition.
// RUN: not tessera-opt %s 2>&1 | FileCheck %s --check-prefix=WHOLE

// CHECK: builtin.module {
// CHECK-NEXT: func.func @a()
// CHECK: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT: func.func @b()
// CHECK: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT: func.func @b()
// CHECK: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT: func.func @d()
// CHECK-NOT: // -----
// ERR: split_input_file.mlir:[[# @LINE + 22]]:3: error: TILE_ATTR_INVALID: tile.program_id: axis 9
// ERR-NOT: error
func.func @a() {
  func.return
}

// -----

func.func @b() {
  func.return
}

// -----

func.func @b() {
  func.return
}
// BAD-COUNT-3: // -----// IR Dump After cse //----- //
// BAD: split_input_file.mlir:[[# @LINE + 4]]:3: error: TILE_ATTR_INVALID
// BAD: // -----// IR Dump After cse //----- //
// -----
func.func @c() {
  %x = tile.program_id 9
  func.return
}
// -----
func.func @d() {
  func.return
}
// WHOLE: split_input_file.mlir:1:1: error: IR_VERIFY: Redefinition of symbol "b"
