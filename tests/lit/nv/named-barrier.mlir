// nv.named_barrier: bar.sync (mode "sync": arrive and wait) or bar.arrive (mode "arrive": count without waiting)
// on hardware barrier %id of `threads` threads parses, verifies and prints back unchanged; it needs sm_80 or newer,
// so it lowers on sm_90a. Warp-specialised consumers use a pair to take turns at the tensor cores.
// RUN: tessera-opt %s > %t.once
// RUN: tessera-opt %t.once > %t.twice
// RUN: diff %t.once %t.twice
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_90a}' | FileCheck %s

// CHECK-LABEL: func.func @turns(
func.func @turns(%c: index) attributes {nv.num_threads = 384 : i64, nv.arch = "sm_90a"} {
  %c8 = arith.constant 8 : index
  %mine = arith.addi %c, %c8 : index
  // CHECK: nv.named_barrier %mine {threads = 256 : i64, mode = "sync"}
  nv.named_barrier %mine {threads = 256 : i64, mode = "sync"}
  // CHECK-NEXT: nv.named_barrier %c8 {threads = 256 : i64, mode = "arrive"}
  nv.named_barrier %c8 {threads = 256 : i64, mode = "arrive"}
  func.return
}
