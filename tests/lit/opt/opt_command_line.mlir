// OPT_COMMAND_LINE: unknown flags and conflicting arguments are coded errors (exit 1), not argparse's exit 2.
// RUN: not tessera-opt %s --bogus-flag 2>&1 | FileCheck %s
// RUN: not tessera-opt %s -p cse --pass-pipeline=dce 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not tessera-opt %s %s 2>&1 | FileCheck %s --check-prefix=TWOFILES

// CHECK: <command-line>:1:1: error: OPT_COMMAND_LINE: unrecognized arguments: --bogus-flag
// CHECK-NEXT: hint: run tessera-opt --help for the accepted arguments
// TWICE: <command-line>:1:1: error: OPT_COMMAND_LINE: give --pass-pipeline (or -p) once
// TWOFILES: <command-line>:1:1: error: OPT_COMMAND_LINE: unrecognized arguments:
