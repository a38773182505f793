// OPT_OPTION_UNKNOWN: an option the pass does not have is an error, never silently ignored (DESIGN lesson 4).
// RUN: not tessera-opt %s -p 'tile-verify-target{arch=sm_90a bogus=1}' 2>&1 | FileCheck %s
// RUN: not tessera-opt %s -p 'builtin.module(cse{arch=sm_90a})' 2>&1 | FileCheck %s --check-prefix=NONE

// CHECK: <pass-pipeline>:1:1: error: OPT_OPTION_UNKNOWN: pass 'tile-verify-target' has no option 'bogus' (its options: arch)
// NONE: <pass-pipeline>:1:16: error: OPT_OPTION_UNKNOWN: pass 'cse' has no option 'arch' (its options: none)
