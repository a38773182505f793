// `tessera-opt --help` lists the flags, every registered pass with its options (type, default or
// "required") and one-line purpose, and the named pipelines.
// RUN: tessera-opt --help | FileCheck %s
// RUN: tessera-opt -h | FileCheck %s

// CHECK: usage: tessera-opt
// CHECK-DAG: --pass-pipeline PIPELINE, -p PIPELINE
// CHECK-DAG: -o FILE, --output FILE
// CHECK-DAG: --split-input-file
// CHECK-DAG: --verify-diagnostics
// CHECK-DAG: --print-ir-after-all
// CHECK: passes:
// CHECK-DAG: {{^}}  canonicalize {{ *}}Apply every op's canonicalization patterns
// CHECK-DAG: {{^}}  cse {{ *}}Merge identical side-effect-free ops
// CHECK-DAG: {{^}}  dce {{ *}}Erase side-effect-free ops whose results are unused
// CHECK-DAG: {{^}}  test-pass-crash {{ *}}Testing only: raise an uncoded exception
// CHECK-DAG: {{^ +}}message: string (default: deliberate failure)
// CHECK-DAG: {{^}}  tile-verify-target {{ *}}Check that every fragment family in the module runs on the target arch
// CHECK-DAG: {{^ +}}arch: one of sm_80|sm_86|sm_89|sm_90|sm_90a (required)
// CHECK: named pipelines:
