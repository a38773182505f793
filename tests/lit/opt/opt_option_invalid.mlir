// OPT_OPTION_INVALID: ill-typed or out-of-range option values name the pass, the option, the value and
// what is accepted.
// RUN: not tessera-opt %s -p 'tile-verify-target{arch=sm_12}' 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not tessera-opt %s -p 'tile-verify-target{arch=90}' 2>&1 | FileCheck %s --check-prefix=NUMBER
// RUN: not tessera-opt %s -p 'tile-verify-target{arch=sm_80,sm_90}' 2>&1 | FileCheck %s --check-prefix=LIST
// RUN: not tessera-opt %s -p 'tile-verify-target{arch=sm_80 arch=sm_90a}' 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not tessera-opt %s -p 'test-pass-crash{message}' 2>&1 | FileCheck %s --check-prefix=NOVALUE

// ARCH: <pass-pipeline>:1:1: error: OPT_OPTION_INVALID: pass 'tile-verify-target' option 'arch': 'sm_12' is not a supported arch: expected one of sm_80|sm_86|sm_89|sm_90|sm_90a
// NUMBER: error: OPT_OPTION_INVALID: pass 'tile-verify-target' option 'arch': '90' is not a supported arch
// LIST: error: OPT_OPTION_INVALID: pass 'tile-verify-target' option 'arch': takes one value, not a list of 2
// TWICE: error: OPT_OPTION_INVALID: pass 'tile-verify-target' option 'arch' is given more than once
// NOVALUE: error: OPT_OPTION_INVALID: pass 'test-pass-crash' option 'message': needs a value (string)
