// Each register op on wgmma's D layout refuses a malformed use with NV_OP_INVALID and says what it takes.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_90}' 2>&1 | FileCheck %s --check-prefix=SM90

func.func @reduce_kind(%s: vector<64xf32>) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_reduce_rows: kind "prod" is not one of max, min, sum}}
  %m = nv.wgacc_reduce_rows "prod" %s {n = 128 : i64} : vector<64xf32> -> vector<2xf32>
  func.return
}

// -----

func.func @reduce_length(%s: vector<32xf32>) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_reduce_rows: source vector<32xf32> must hold 64 elements per thread}}
  %m = nv.wgacc_reduce_rows "max" %s {n = 128 : i64} : vector<32xf32> -> vector<2xf32>
  func.return
}

// -----

func.func @reduce_n(%s: vector<6xf32>) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_reduce_rows: n=12 must be a multiple of 8 in [8, 256]}}
  %m = nv.wgacc_reduce_rows "sum" %s {n = 12 : i64} : vector<6xf32> -> vector<2xf32>
  func.return
}

// -----

func.func @broadcast_rows(%r: vector<4xf32>) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgrows_broadcast: source vector<4xf32> must hold 2 elements per thread}}
  %t = nv.wgrows_broadcast %r {n = 128 : i64} : vector<4xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @index_axis() {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_index: axis 2 must be 0 (row) or 1 (column)}}
  %c = nv.wgacc_index {axis = 2 : i64, n = 128 : i64} : vector<64xi32>
  func.return
}

// -----

func.func @rows_store_offsets(%l: vector<2xf32>, %LSE: memref<?x?x?xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgrows_store: memref memref<?x?x?xf32> takes 3 offsets, got 2}}
  nv.wgrows_store %l, %LSE[%i, %i] : vector<2xf32>, memref<?x?x?xf32>
  func.return
}

// -----

func.func @rows_store_elem(%l: vector<2xf32>, %LSE: memref<?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgrows_store: value vector<2xf32> and memref memref<?xbf16> differ in element type}}
  nv.wgrows_store %l, %LSE[%i] : vector<2xf32>, memref<?xbf16>
  func.return
}

// -----

func.func @window_offsets(%v: vector<32xbf16>, %O: memref<?x?x?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store: memref memref<?x?x?x?xbf16> takes 4 offsets (outer dims, then row and col), got 3}}
  nv.wgacc_store %v, %O[%i, %i, %i] {n = 64 : i64} : vector<32xbf16>, memref<?x?x?x?xbf16>
  func.return
}

// -----

func.func @rs_a_length(%acc: vector<32xf32>, %p: vector<32xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma_rs: a vector<32xbf16> must hold 64 elements per thread}}
  %o = nv.wgmma_rs %acc, %p, %i {n = 64 : i64, k = 128 : i64, dtype = bf16, b = array<i64: 0, 16384, 128>, swizzle = 128 : i64} : vector<32xf32>, vector<32xbf16> -> vector<32xf32>
  func.return
}

// -----

func.func @rs_dtype(%acc: vector<32xf32>, %p: vector<64xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma_rs: dtype f32 is not one of bf16, f16}}
  %o = nv.wgmma_rs %acc, %p, %i {n = 64 : i64, k = 128 : i64, dtype = f32, b = array<i64: 0, 16384, 128>, swizzle = 128 : i64} : vector<32xf32>, vector<64xf32> -> vector<32xf32>
  func.return
}

// -----

func.func @rs_mn_unswizzled(%acc: vector<32xf32>, %p: vector<64xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma_rs: b_major="mn" needs a swizzled layout (swizzle 32, 64 or 128)}}
  %o = nv.wgmma_rs %acc, %p, %i {n = 64 : i64, k = 128 : i64, dtype = bf16, b = array<i64: 0, 16384, 128>, swizzle = 0 : i64, b_major = "mn"} : vector<32xf32>, vector<64xbf16> -> vector<32xf32>
  func.return
}

// -----

func.func @wait_hold_not_a_operand(%acc: vector<32xf32>, %h: vector<32xf32>) {
  // `hold` is an RS wgmma's A registers (16-bit floats), not another accumulator.
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma_wait: hold vector<32xf32> is not a register A operand (a vector of bf16 or f16)}}
  %w = nv.wgmma_wait %acc hold %h : vector<32xf32> {pending = 0 : i64} : vector<32xf32> -> vector<32xf32>
  func.return
}

// -----

// Well formed, but RS wgmma is sm_90a's alone: lowering for sm_90 refuses it.
// SM90: error: NV_ARCH_UNSUPPORTED{{:}} nv.wgmma_rs needs sm_90a exactly, but the target is sm_90
func.func @rs_needs_sm_90a(%acc: vector<32xf32>, %p: vector<64xbf16>, %i: index) {
  %o = nv.wgmma_rs %acc, %p, %i {n = 64 : i64, k = 128 : i64, dtype = bf16, b = array<i64: 0, 16384, 128>, swizzle = 128 : i64} : vector<32xf32>, vector<64xbf16> -> vector<32xf32>
  func.return
}
