// warp-specialize's overlap option is 0 or 1; anything else is refused before the pass runs.
// RUN: not tessera-opt %s -p 'warp-specialize{arch=sm_90a overlap=2}' 2>&1 | FileCheck %s
// CHECK: warp-specialize: overlap=2 must be 0 or 1
// RUN: not tessera-opt %s -p 'tessera-lower-to-nv{arch=sm_90a overlap=yes}' 2>&1 | FileCheck %s --check-prefix=WORD
// WORD: overlap
func.func @empty() {
  func.return
}
