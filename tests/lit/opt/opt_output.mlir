// -o FILE writes the IR there; OPT_OUTPUT when the file cannot be written.
// RUN: rm -rf %t && mkdir -p %t
// RUN: tessera-opt %s -o %t/out.mlir
// RUN: FileCheck %s --input-file=%t/out.mlir
// RUN: not tessera-opt %s -o %t/missing-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=ERR

// CHECK: func.func @f() {
// ERR: missing-dir/out.mlir:1:1: error: OPT_OUTPUT: cannot write '{{.*}}missing-dir/out.mlir': No such file or directory
func.func @f() {
  func.return
}
