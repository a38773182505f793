// OPT_PIPELINE_SYNTAX: malformed pipelines are rejected before the input is read, located in the pipeline text.
// RUN: not tessera-opt %s -p 'cse{' 2>&1 | FileCheck %s --check-prefix=OPEN
// RUN: not tessera-opt %s -p 'cse}' 2>&1 | FileCheck %s --check-prefix=CLOSE
// RUN: not tessera-opt %s -p 'cse,,dce' 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not tessera-opt %s -p 'builtin.module(func.func(cse))' 2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not tessera-opt %s -p 'builtin.module(cse' 2>&1 | FileCheck %s --check-prefix=WRAPPER
// RUN: not tessera-opt %s -p 'cse dce' 2>&1 | FileCheck %s --check-prefix=SPACE
// RUN: not tessera-opt %s -p 'tile-verify-target{arch=sm_80' 2>&1 | FileCheck %s --check-prefix=OPEN2
// RUN: not tessera-opt %s -p 'cse{=1}' 2>&1 | FileCheck %s --check-prefix=KEY

// OPEN: <pass-pipeline>:1:5: error: OPT_PIPELINE_SYNTAX: unclosed '{'
// CLOSE: <pass-pipeline>:1:4: error: OPT_PIPELINE_SYNTAX: unbalanced '}'
// EMPTY: <pass-pipeline>:1:5: error: OPT_PIPELINE_SYNTAX: empty pass name (a stray comma?)
// NESTED: <pass-pipeline>:1:16: error: OPT_PIPELINE_SYNTAX: nested pipeline 'func.func(...)' is not supported
// WRAPPER: <pass-pipeline>:1:1: error: OPT_PIPELINE_SYNTAX: expected 'builtin.module(' ... ')' around the pass list
// SPACE: <pass-pipeline>:1:1: error: OPT_PIPELINE_SYNTAX: in 'cse dce': Expected a comma or pass arguments here
// OPEN2: <pass-pipeline>:1:30: error: OPT_PIPELINE_SYNTAX: unclosed '{'
// KEY: <pass-pipeline>:1:1: error: OPT_PIPELINE_SYNTAX: in 'cse{=1}': Expected argument name here
// CHECK-NOT: Traceback
