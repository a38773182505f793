// The dynamic tile scheduler's ops (ir/sched_ops.py) parse, verify and print back unchanged, and lower on sm_90a:
// nv.tile_fetch takes the next tile from the launch's counter (ctas + the counter's old value), nv.smem_put and
// nv.smem_get move an index through the 4-byte shared-memory word base + 4 * slot.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_90a}' | FileCheck %s

// CHECK-LABEL: func.func @hand_over(
func.func @hand_over(%total: index, %ctas: index, %n: index) attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a"} {
  // CHECK: %next = nv.tile_fetch %total, %ctas : index
  %next = nv.tile_fetch %total, %ctas : index
  // CHECK-NEXT: nv.smem_put %next, %n {base = 1024 : i64}
  nv.smem_put %next, %n {base = 1024 : i64}
  // CHECK-NEXT: %got = nv.smem_get %n {base = 1024 : i64} : index
  %got = nv.smem_get %n {base = 1024 : i64} : index
  func.return
}
