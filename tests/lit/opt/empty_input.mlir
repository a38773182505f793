// Input with no operations (empty, or only comments like this file) is an empty module, as in mlir-opt.
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt < %s | FileCheck %s
// RUN: tessera-opt --split-input-file %s | FileCheck %s --check-prefix=SPLIT

// CHECK: builtin.module {
// CHECK-NEXT: }
// SPLIT: builtin.module {
// SPLIT-NEXT: }
// SPLIT-NEXT: // -----
// SPLIT-NEXT: builtin.module {
// SPLIT-NEXT: }
// -----
