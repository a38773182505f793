// nv op verifiers: each structural rule fails with NV_OP_INVALID naming the operand, its type and the rule.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: nv-ops-errors.mlir:[[# @LINE + 7]]:{{[0-9]+}}: error: NV_OP_INVALID: nv.ldfrag_shared: result vector<16xbf16> must hold 32 elements per thread

func.func @frag_register_count() {
  %c0 = arith.constant 0 : index
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x32xbf16, 40>
  // A 32x32 a-fragment is 2x2 atoms of 8 slots: 32 registers' worth of bf16 per lane, not 16.
  // expected-error@+1 {{NV_OP_INVALID: nv.ldfrag_shared: result vector<16xbf16> must hold 32 elements per thread}}
  %fa = nv.ldfrag_shared %sa[%c0, %c0] {family = "mma_sync", role = "a", mnk = array<i64: 32, 32, 32>, dtype = bf16, warps = array<i64: 2, 2>} : !nv.smem<64x32xbf16, 40> -> vector<16xbf16>
  func.return
}

// -----

func.func @mma_acc_type(%a: vector<32xbf16>, %b: vector<32xbf16>, %c: vector<32xf16>) {
  // expected-error@+1 {{nv.mma_sync: acc vector<32xf16> must have element type f32}}
  %d = nv.mma_sync %a, %b, %c {mnk = array<i64: 32, 32, 32>, dtype = bf16} : vector<32xbf16>, vector<32xbf16>, vector<32xf16> -> vector<32xf16>
  func.return
}

// -----

func.func @mma_shape(%a: vector<8xbf16>, %b: vector<4xbf16>, %c: vector<4xf32>) {
  // expected-error@+1 {{no lane map for}}
  %d = nv.mma_sync %a, %b, %c {mnk = array<i64: 16, 8, 8>, dtype = bf16} : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
  func.return
}

// -----

func.func @map_fn(%x: vector<4xf32>) {
  // expected-error@+1 {{fn 'cube' with 1 operands is not one of}}
  %y = nv.map "cube" %x : vector<4xf32>
  func.return
}

// -----

func.func @map_float_only(%x: vector<4xi32>) {
  // expected-error@+1 {{fn 'exp' needs float elements}}
  %y = nv.map "exp" %x : vector<4xi32>
  func.return
}

// -----

func.func @blocked_count(%C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  // 64x64 over 128 threads is 32 slots per thread.
  // expected-error@+1 {{nv.load_global: result vector<16xf32> must hold 32 elements per thread}}
  %x = nv.load_global %C[%c0, %c0] {shape = array<i64: 64, 64>, threads = 128 : i64, pad = 0.0 : f64} : memref<?x?xf32> -> vector<16xf32>
  func.return
}

// -----

func.func @strides_out_of_range() {
  %s = nv.alloc_shared {offset = 0 : i64} : !nv.smem<8x8xf32, 8>
  // expected-error@+1 {{strides [9, 1] reach past the end of}}
  %x = nv.load_shared %s {shape = array<i64: 8, 8>, threads = 32 : i64, strides = array<i64: 9, 1>} : !nv.smem<8x8xf32, 8> -> vector<2xf32>
  func.return
}

// -----

func.func @reduce_shape() {
  %s = nv.alloc_shared {offset = 0 : i64} : !nv.smem<8x8xf32, 8>
  // expected-error@+1 {{must give shape [8, 8]}}
  %x = nv.reduce_shared %s {shape = array<i64: 8, 8>, threads = 32 : i64, kind = "sum", axis = 1 : i64} : !nv.smem<8x8xf32, 8> -> vector<2xf32>
  func.return
}

// -----

func.func @alloc_alignment() {
  // expected-error@+1 {{offset 8 must be a non-negative multiple of 16 bytes}}
  %s = nv.alloc_shared {offset = 8 : i64} : !nv.smem<8x8xf32, 8>
  func.return
}

// -----

func.func @cmp_types(%x: vector<4xf32>) {
  // expected-error@+1 {{nv.cmp: result vector<4xf32> must have element type i1}}
  %m = nv.cmp "lt" %x, %x : vector<4xf32> -> vector<4xf32>
  func.return
}

// -----

func.func @fill_int(%x: vector<4xf32>) {
  // expected-error@+1 {{value 0.5 is not an integer}}
  %m = nv.fill {value = 0.5 : f64} : vector<4xi32>
  func.return
}

// -----

func.func @stfrag_global_type(%v: vector<32xf32>, %C: memref<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{must hold f32 (the accumulator type)}}
  nv.stfrag_global %v, %C[%c0, %c0] {family = "mma_sync", role = "acc", mnk = array<i64: 32, 32, 32>, dtype = bf16, warps = array<i64: 2, 2>} : vector<32xf32>, memref<?x?xbf16>
  func.return
}

// -----

func.func @copy_elem(%A: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %s = nv.alloc_shared {offset = 0 : i64} : !nv.smem<8x8xbf16, 8>
  // expected-error@+1 {{memref memref<?x?xf32> and shared tile !nv.smem<8x8xbf16, 8> differ in element type}}
  %t = nv.cp_async_tile %A[%c0, %c0], %s {pad = 0.0 : f64} : memref<?x?xf32>, !nv.smem<8x8xbf16, 8> -> !nv.async_group
  func.return
}

// -----

func.func @select_cond(%c: vector<4xf32>, %x: vector<4xf32>) {
  // expected-error@+1 {{nv.select: condition vector<4xf32> must have element type i1}}
  %y = nv.select %c, %x, %x : vector<4xf32>, vector<4xf32>
  func.return
}

// -----

func.func @slots_range(%x: vector<2xf32>) {
  // expected-error@+1 {{slots 1 * i + 1 for i < 4 fall outside the 2 source slots}}
  %y = nv.slots %x {scale = 1 : i64, offset = 1 : i64} : vector<2xf32> -> vector<4xf32>
  func.return
}

// -----

func.func @convert_length(%x: vector<4xf32>) {
  // expected-error@+1 {{nv.convert: result vector<8xbf16> must hold 4 elements per thread}}
  %y = nv.convert %x : vector<4xf32> -> vector<8xbf16>
  func.return
}

// -----

func.func @splat_type(%s: f32) {
  // expected-error@+1 {{nv.splat: result vector<4xbf16> must have element type f32}}
  %y = nv.splat %s : f32 -> vector<4xbf16>
  func.return
}

// -----

func.func @iota_float() {
  // expected-error@+1 {{nv.iota: needs an integer result}}
  %i = nv.iota {shape = array<i64: 8, 8>, threads = 32 : i64, axis = 1 : i64} : vector<2xf32>
  func.return
}

// -----

func.func @threads_multiple_of_32(%C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{threads 48 must be positive (threads a multiple of 32)}}
  %x = nv.load_global %C[%c0, %c0] {shape = array<i64: 8, 8>, threads = 48 : i64, pad = 0.0 : f64} : memref<?x?xf32> -> vector<2xf32>
  func.return
}

// -----

func.func @grid_axis() {
  // expected-error@+1 {{nv.block_id: axis 3 is not 0, 1 or 2}}
  %b = nv.block_id {axis = 3 : i64} : index
  func.return
}

// -----

func.func @bad_pitch() {
  // expected-error@+1 {{NV_OP_INVALID: !nv.smem shape [8, 8] needs positive dims and a pitch >= the last dim, got pitch 4}}
  %s = nv.alloc_shared {offset = 0 : i64} : !nv.smem<8x8xf32, 4>
  func.return
}
