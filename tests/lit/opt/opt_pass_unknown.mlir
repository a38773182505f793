// OPT_PASS_UNKNOWN: a pipeline naming a pass that does not exist fails, naming it (with a suggestion).
// RUN: not tessera-opt %s -p 'cse,canonicalise' 2>&1 | FileCheck %s
// RUN: not tessera-opt %s -p 'builtin.module(cse, lower-everything{arch=sm_90})' 2>&1 | FileCheck %s --check-prefix=WRAPPED

// CHECK: <pass-pipeline>:1:5: error: OPT_PASS_UNKNOWN: unknown pass 'canonicalise'; did you mean 'canonicalize'?
// CHECK-NEXT: hint: run tessera-opt --help for the list of passes
// WRAPPED: <pass-pipeline>:1:21: error: OPT_PASS_UNKNOWN: unknown pass 'lower-everything'
