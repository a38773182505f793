// OPT_OPTION_MISSING: arch has no default anywhere (DESIGN lesson 3): leaving it out is a pipeline error.
// RUN: not tessera-opt %s -p 'tile-verify-target' 2>&1 | FileCheck %s
// RUN: not tessera-opt %s -p 'builtin.module(cse,tile-verify-target{})' 2>&1 | FileCheck %s --check-prefix=EMPTY

// CHECK: <pass-pipeline>:1:1: error: OPT_OPTION_MISSING: pass 'tile-verify-target' requires option 'arch' (one of sm_80|sm_86|sm_89|sm_90|sm_90a)
// CHECK-NEXT: hint: required options (arch among them) have no default
// EMPTY: <pass-pipeline>:1:20: error: OPT_OPTION_MISSING: pass 'tile-verify-target' requires option 'arch'
