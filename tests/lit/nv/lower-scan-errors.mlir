// nv.scan_shared scans a shared tile in place: its blocked shape is the shared tile's and its kind is sum; any
// other is NV_OP_INVALID naming the op, the kind and the shapes.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.scan_shared: kind 'sum' (sum) and axis 1 must scan !nv.smem<4x256xf32, 260> in place, shape [4, 128]
// CHECK: error: NV_OP_INVALID: nv.scan_shared: kind 'max' (sum) and axis 1

// -----

func.func @shape(%s: !nv.smem<4x256xf32, 260>) {
  // expected-error@+1 {{NV_OP_INVALID: nv.scan_shared: kind 'sum' (sum) and axis 1 must scan !nv.smem<4x256xf32, 260> in place, shape [4, 128]}}
  %r = nv.scan_shared %s {shape = array<i64: 4, 128>, threads = 128 : i64, kind = "sum", axis = 1 : i64} : !nv.smem<4x256xf32, 260> -> vector<4xf32>
  func.return
}

// -----

func.func @kind(%s: !nv.smem<4x256xf32, 260>) {
  // expected-error@+1 {{NV_OP_INVALID: nv.scan_shared: kind 'max' (sum) and axis 1}}
  %r = nv.scan_shared %s {shape = array<i64: 4, 256>, threads = 128 : i64, kind = "max", axis = 1 : i64} : !nv.smem<4x256xf32, 260> -> vector<8xf32>
  func.return
}
