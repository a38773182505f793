// OPT_PASS_FAILED: a pass that raises an uncoded exception (a bug) is reported as a coded diagnostic
// naming the pass and the exception, located at the input, never as a traceback.
// RUN: not tessera-opt %s -p 'cse,test-pass-crash{message="boom"}' 2>&1 | FileCheck %s
// RUN: not tessera-opt --split-input-file %s -p 'test-pass-crash' 2>&1 | FileCheck %s --check-prefix=SPLIT

// CHECK: opt_pass_failed.mlir:1:1: error: OPT_PASS_FAILED: pass 'test-pass-crash' failed with RuntimeError: boom
// CHECK-NOT: Traceback
// SPLIT: opt_pass_failed.mlir:1:1: error: OPT_PASS_FAILED: pass 'test-pass-crash' failed with RuntimeError: deliberate failure
// SPLIT: opt_pass_failed.mlir:[[# @LINE + 2]]:1: error: OPT_PASS_FAILED
// -----
func.func @f() {
  func.return
}
