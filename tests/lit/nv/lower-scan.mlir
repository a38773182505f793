// lower-tile-to-nv: tile.scan goes through the scratch buffer like a reduction (barrier, blocked store, barrier),
// then nv.scan_shared scans it in place and reads the blocked result back; it parses and prints back the same.
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_80}' | FileCheck %s
// RUN: tessera-opt %s -p 'lower-tile-to-nv{arch=sm_80}' | tessera-opt | FileCheck %s
// CHECK-LABEL: func.func @running_sums(
// CHECK: nv.store_shared %x, %scratch {shape = array<i64: 4, 256>, threads = 128 : i64}
// CHECK-NEXT: nv.barrier
// CHECK-NEXT: %cs = nv.scan_shared %scratch {shape = array<i64: 4, 256>, threads = 128 : i64, kind = "sum", axis = 1 : i64} : !nv.smem<4x256xf32, {{[0-9]+}}> -> vector<8xf32>
// CHECK-NOT: tile.
func.func @running_sums(%X: memref<?x256xf32>, %Y: memref<?x256xf32>) {
  %c0 = arith.constant 0 : index
  %pid = tile.program_id 0
  %c4 = arith.constant 4 : index
  %m0 = arith.muli %pid, %c4 : index
  %x = tile.load %X[%m0, %c0] pad 0.0 : memref<?x256xf32> -> !tile.tile<4x256xf32>
  %cs = tile.scan sum 1 %x : !tile.tile<4x256xf32> -> !tile.tile<4x256xf32>
  tile.store %cs, %Y[%m0, %c0] : !tile.tile<4x256xf32> -> memref<?x256xf32>
  func.return
}
