// IR_INPUT: unreadable or non-UTF-8 input is a coded error located at the first bad byte.
// RUN: not tessera-opt %S/Inputs/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tessera-opt %S/Inputs/latin1.mlir 2>&1 | FileCheck %s --check-prefix=LATIN1
// RUN: not tessera-opt < %S/Inputs/latin1.mlir 2>&1 | FileCheck %s --check-prefix=STDIN
// RUN: not tessera-opt %S 2>&1 | FileCheck %s --check-prefix=DIR

// MISSING: Inputs/does-not-exist.mlir:1:1: error: IR_INPUT: cannot read '{{.*}}does-not-exist.mlir': No such file or directory
// MISSING-NEXT: hint: pass a readable UTF-8 .mlir file or '-' for stdin
// LATIN1: Inputs/latin1.mlir:2:9: error: IR_INPUT: the input is not valid UTF-8: byte 0xe9 at byte offset 25
// STDIN: <stdin>:2:9: error: IR_INPUT: the input is not valid UTF-8
// DIR: error: IR_INPUT: cannot read '{{.*}}': Is a directory
