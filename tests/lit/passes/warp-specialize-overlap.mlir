// overlap (the default) on the general loop body: the loop is rotated one step (ws_overlap.py), so in the
// loop S(j+1) = Q K(j+1)^T and O += P(j) V(j) are issued back to back, the softmax-like tail of S(j+1) reads it
// after a wait that leaves O's group in flight (pending 1), and O's wait (pending 0, holding P's registers) comes
// before P(j+1) is written. The prologue (step 0's S) and the final step's O sit in an scf.if on lb < ub, so a
// loop of no steps returns its inits. overlap=0 waits for each wgmma where it is issued, in the loop as written.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2}' | FileCheck %s
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2 overlap=0}' | FileCheck %s --check-prefix=PLAIN
// CHECK: func.func @two_mmas
// CHECK: arith.cmpi slt
// CHECK: scf.if
// CHECK: nv.wgmma
// CHECK: nv.wgmma_wait {{.*}}pending = 0
// CHECK: scf.for
// CHECK: nv.wgmma %
// CHECK-NEXT: nv.wgmma_rs
// CHECK: nv.wgmma_wait {{.*}}pending = 1
// CHECK: nv.map "exp2"
// CHECK: nv.wgmma_wait {{.*}} hold {{.*}}pending = 0
// CHECK: nv.convert
// CHECK: scf.yield
// CHECK: nv.wgmma_rs
// CHECK: nv.wgmma_wait {{.*}} hold {{.*}}pending = 0
// CHECK-NOT: tile.
// PLAIN: scf.for
// PLAIN: nv.wgmma %
// PLAIN-NEXT: nv.wgmma_wait {{.*}}pending = 0
// PLAIN: nv.wgmma_rs
// PLAIN-NEXT: nv.wgmma_wait {{.*}} hold {{.*}}pending = 0
// PLAIN-NOT: scf.if
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
