// schedule=pingpong on the general loop body: the consumer warpgroups take turns at issuing each loop step's
// wgmmas (warp-scheduler barriers). Consumer c syncs on hardware barrier 8 + c (256 threads: its own 128 and its
// predecessor's arrival) before the step's first wgmma and arrives on its successor's, 8 + (c + 1) % consumers,
// after the last; consumer 0 opens its own first turn. The rotated loop brackets S(j+1) = Q K(j+1)^T and
// O += P(j) V(j) together, with the waits after the hand-over; the prologue and the final step take no turn.
// overlap=0 (each wgmma waited for where it is issued): one turn per wgmma, around the issue only.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2 schedule=pingpong}' | FileCheck %s
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2 schedule=pingpong overlap=0}' | FileCheck %s --check-prefix=PLAIN
// CHECK: func.func @two_mmas
// CHECK: nv.setmaxnreg {regs = 232 : i64, action = "inc"}
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT: %[[MINE:.*]] = arith.addi %{{.*}}, %[[C8]] : index
// CHECK: %[[NEXT:.*]] = arith.remsi
// CHECK-NEXT: %[[AFTER:.*]] = arith.addi %[[NEXT]], %[[C8]] : index
// CHECK: scf.if
// CHECK-NEXT: nv.named_barrier %[[MINE]] {threads = 256 : i64, mode = "arrive"}
// CHECK: scf.for
// CHECK: nv.wgmma_wait {{.*}}pending = 0
// CHECK: scf.for
// CHECK: nv.named_barrier %[[MINE]] {threads = 256 : i64, mode = "sync"}
// CHECK-NEXT: nv.wgmma %
// CHECK: nv.wgmma_rs
// CHECK-NEXT: nv.named_barrier %[[AFTER]] {threads = 256 : i64, mode = "arrive"}
// CHECK-NEXT: nv.wgmma_wait {{.*}}pending = 1
// CHECK: scf.yield
// CHECK-NOT: nv.named_barrier
// CHECK: func.return
// PLAIN: scf.for
// PLAIN: nv.named_barrier %{{.*}} {threads = 256 : i64, mode = "sync"}
// PLAIN-NEXT: nv.wgmma %
// PLAIN-NEXT: nv.named_barrier %{{.*}} {threads = 256 : i64, mode = "arrive"}
// PLAIN-NEXT: nv.wgmma_wait {{.*}}pending = 0
// PLAIN: nv.named_barrier %{{.*}} {threads = 256 : i64, mode = "sync"}
// PLAIN-NEXT: nv.wgmma_rs
// PLAIN-NEXT: nv.named_barrier %{{.*}} {threads = 256 : i64, mode = "arrive"}
// PLAIN-NEXT: nv.wgmma_wait {{.*}} hold {{.*}}pending = 0
// PLAIN-NOT: pending = 1
func.func @two_mmas(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %V: memref<?x64xbf16>, %O: memref<?x64xf32>) {
  %pid = tile.program_id 0
  %c128 = arith.constant 128 : index
  %c0 = arith.constant 0 : index
  %n = memref.dim %K, %c0 : memref<?x64xbf16>
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %pid, %c128 : index
  %q = tile.load %Q[%m0, %c0] pad 0.0 : memref<?x64xbf16> -> !tile.tile<128x64xbf16>
  %zero = tile.constant 0.0 : !tile.tile<128x64xf32>
  %acc = scf.for %n0 = %c0 to %n step %c64 iter_args(%o = %zero) -> (!tile.tile<128x64xf32>) {
    %k = tile.load %K[%n0, %c0] pad 0.0 : memref<?x64xbf16> -> !tile.tile<64x64xbf16>
    %v = tile.load %V[%n0, %c0] pad 0.0 : memref<?x64xbf16> -> !tile.tile<64x64xbf16>
    %kt = tile.transpose %k : !tile.tile<64x64xbf16> -> !tile.tile<64x64xbf16>
    %s = tile.mma %q, %kt, %zero : !tile.tile<128x64xbf16>, !tile.tile<64x64xbf16>, !tile.tile<128x64xf32>
    %e = tile.exp2 %s : !tile.tile<128x64xf32>
    %p = tile.convert %e : !tile.tile<128x64xf32> -> !tile.tile<128x64xbf16>
    %o2 = tile.mma %p, %v, %o : !tile.tile<128x64xbf16>, !tile.tile<64x64xbf16>, !tile.tile<128x64xf32>
    scf.yield %o2 : !tile.tile<128x64xf32>
  }
  tile.store %acc, %O[%m0, %c0] : !tile.tile<128x64xf32> -> memref<?x64xf32>
  func.return
}
