// lower-tile-to-nv: tile.masked_store (and tile.atomic_add, below) becomes nv.store_global with the mask's blocked slots (`if %m`), which the
// emitter turns into one more condition on each element's store; a plain store has none. The nv op parses and
// prints back the same.
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_80}' | FileCheck %s
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_80}' | tessera-opt | FileCheck %s
// CHECK-LABEL: func.func @keep_positive(
// CHECK: %pos = nv.cmp "gt" %x, %zero : vector<2xf32> -> vector<2xi1>
// CHECK: nv.store_global %x, %Y[%m0, %c0] if %pos : vector<2xi1> {shape = array<i64: 4, 64>, threads = 128 : i64{{.*}}} : vector<2xf32>, memref<?x64xf32>
// CHECK: nv.store_global %x, %Z[%m0, %c0] {shape = array<i64: 4, 64>, threads = 128 : i64{{.*}}} : vector<2xf32>, memref<?x64xf32>
// tile.atomic_add becomes nv.atomic_add_global (atomicAdd per element), with or without a mask.
// CHECK: nv.atomic_add_global %x, %Z[%m0, %c0] if %pos : vector<2xi1> {shape = array<i64: 4, 64>
// CHECK: nv.atomic_add_global %x, %Z[%m0, %c0] {shape = array<i64: 4, 64>
func.func @keep_positive(%X: memref<?x64xf32>, %Y: memref<?x64xf32>, %Z: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %pid = tile.program_id 0
  %c4 = arith.constant 4 : index
  %m0 = arith.muli %pid, %c4 : index
  %x = tile.load %X[%m0, %c0] pad 0.0 : memref<?x64xf32> -> !tile.tile<4x64xf32>
  %zero = tile.constant 0.0 : !tile.tile<4x64xf32>
  %pos = tile.cmp gt %x, %zero : !tile.tile<4x64xf32>
  tile.masked_store %x, %Y[%m0, %c0] if %pos : !tile.tile<4x64xf32> -> memref<?x64xf32>
  tile.store %x, %Z[%m0, %c0] : !tile.tile<4x64xf32> -> memref<?x64xf32>
  tile.atomic_add %x, %Z[%m0, %c0] if %pos : !tile.tile<4x64xf32> -> memref<?x64xf32>
  tile.atomic_add %x, %Z[%m0, %c0] : !tile.tile<4x64xf32> -> memref<?x64xf32>
  func.return
}
