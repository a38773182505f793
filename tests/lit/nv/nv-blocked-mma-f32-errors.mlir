// nv.blocked_mma's verifier names the operand and the rule; lower-tile-to-nv lowers only an all-f32 tile.mma
// itself and refuses any other with a coded error at the mma.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics -p 'lower-tile-to-nv{arch=sm_80}'
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_80}' 2>&1 | FileCheck %s
// (lit reads "UNSUPPORTED" and a colon as its own directive, hence the {{UNSUPPORTED}} below.)
// CHECK: nv-blocked-mma-f32-errors.mlir:[[# @LINE + 8]]:{{[0-9]+}}: error: NV_OP_INVALID: nv.blocked_mma: a !nv.smem<64x16xf32, 20> and b !nv.smem<32x64xf32, 68> must be M x K and K x N shared tiles for the M x N shape [64, 64]
// CHECK: error: NV_LOWER_{{UNSUPPORTED}}: lower-tile-to-nv cannot lower tile.mma: f16 inputs run on tensor-core fragments; run tile-to-fragments{arch=...} first (only an all-f32 mma lowers here, to CUDA-core fma loops)

func.func @inner_dims(%c: vector<32xf32>) {
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x16xf32, 20>
  %sb = nv.alloc_shared {offset = 5120 : i64} : !nv.smem<32x64xf32, 68>
  // A is 64x16 but B has 32 rows.
  // expected-error@+1 {{NV_OP_INVALID: nv.blocked_mma: a !nv.smem<64x16xf32, 20> and b !nv.smem<32x64xf32, 68> must be M x K and K x N}}
  %d = nv.blocked_mma %sa, %sb, %c {shape = array<i64: 64, 64>, threads = 128 : i64} : !nv.smem<64x16xf32, 20>, !nv.smem<32x64xf32, 68>, vector<32xf32> -> vector<32xf32>
  func.return
}

// -----

func.func @shape_property(%c: vector<16xf32>) {
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x16xf32, 20>
  %sb = nv.alloc_shared {offset = 5120 : i64} : !nv.smem<16x64xf32, 68>
  // expected-error@+1 {{for the M x N shape [32, 64]}}
  %d = nv.blocked_mma %sa, %sb, %c {shape = array<i64: 32, 64>, threads = 128 : i64} : !nv.smem<64x16xf32, 20>, !nv.smem<16x64xf32, 68>, vector<16xf32> -> vector<16xf32>
  func.return
}

// -----

func.func @sixteen_bit_inputs(%c: vector<32xf32>) {
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x16xbf16, 24>
  %sb = nv.alloc_shared {offset = 3072 : i64} : !nv.smem<16x64xbf16, 72>
  // expected-error@+1 {{must both hold one of f32, f64; 16-bit inputs go through fragments and nv.mma_sync}}
  %d = nv.blocked_mma %sa, %sb, %c {shape = array<i64: 64, 64>, threads = 128 : i64} : !nv.smem<64x16xbf16, 24>, !nv.smem<16x64xbf16, 72>, vector<32xf32> -> vector<32xf32>
  func.return
}

// -----

func.func @slot_count(%c: vector<16xf32>) {
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x16xf32, 20>
  %sb = nv.alloc_shared {offset = 5120 : i64} : !nv.smem<16x64xf32, 68>
  // 64x64 over 128 threads is 32 slots per thread.
  // expected-error@+1 {{nv.blocked_mma: acc vector<16xf32> must hold 32 elements per thread}}
  %d = nv.blocked_mma %sa, %sb, %c {shape = array<i64: 64, 64>, threads = 128 : i64} : !nv.smem<64x16xf32, 20>, !nv.smem<16x64xf32, 68>, vector<16xf32> -> vector<16xf32>
  func.return
}

// -----

func.func @acc_element(%c: vector<32xf64>) {
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x16xf32, 20>
  %sb = nv.alloc_shared {offset = 5120 : i64} : !nv.smem<16x64xf32, 68>
  // expected-error@+1 {{nv.blocked_mma: acc vector<32xf64> must have element type f32}}
  %d = nv.blocked_mma %sa, %sb, %c {shape = array<i64: 64, 64>, threads = 128 : i64} : !nv.smem<64x16xf32, 20>, !nv.smem<16x64xf32, 68>, vector<32xf64> -> vector<32xf64>
  func.return
}

// -----

func.func @result_type(%c: vector<32xf32>) {
  %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<64x16xf32, 20>
  %sb = nv.alloc_shared {offset = 5120 : i64} : !nv.smem<16x64xf32, 68>
  // expected-error@+1 {{nv.blocked_mma: result vector<33xf32> differs from acc vector<32xf32>}}
  %d = nv.blocked_mma %sa, %sb, %c {shape = array<i64: 64, 64>, threads = 128 : i64} : !nv.smem<64x16xf32, 20>, !nv.smem<16x64xf32, 68>, vector<32xf32> -> vector<33xf32>
  func.return
}

// -----

// Only an all-f32 mma lowers to CUDA-core fma loops; f16 with an f16 accumulator is neither that nor a fragment.
func.func @f16_accumulator(%A: memref<?x?xf16>, %B: memref<?x?xf16>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] pad 0.0 : memref<?x?xf16> -> !tile.tile<64x16xf16>
  %b = tile.load %B[%c0, %c0] pad 0.0 : memref<?x?xf16> -> !tile.tile<16x64xf16>
  %z = tile.constant 0.0 : !tile.tile<64x64xf16>
  // expected-error@+1 {{lower-tile-to-nv cannot lower tile.mma: f16 inputs run on tensor-core fragments}}
  %d = tile.mma %a, %b, %z : !tile.tile<64x16xf16>, !tile.tile<16x64xf16>, !tile.tile<64x64xf16>
  func.return
}
