// Verifier rules of the cluster and TMA store ops, each a coded NV_OP_INVALID naming the rule; the cluster ops
// need sm_90 or newer (NV_ARCH_UNSUPPORTED when lowered for sm_80).
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.tma_load: multicast mask 4 names no rank, or a rank past a 2-CTA cluster
// CHECK: error: NV_OP_INVALID: nv.wgacc_store_tma: n=88 must be a multiple of 32 (whole boxes of 64-byte rows; 128-byte rows for f32)
// (lit reads "UNSUPPORTED" and a colon as its own directive, hence NV_ARCH_UNSUPPORTED{{:}}.)
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_80}' 2>&1 | FileCheck %s --check-prefix=SM80
// SM80: error: NV_ARCH_UNSUPPORTED{{:}} nv.cluster_rank needs sm_90 or newer, but the target is sm_80

// -----

func.func @multicast_past_the_cluster(%B: memref<?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: multicast mask 4 names no rank, or a rank past a 2-CTA cluster}}
  nv.tma_load %B[%i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64, multicast = 4 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @arrive_on_a_one_cta_cluster(%i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.mbarrier_arrive: cluster=1 must be in [2, 2]}}
  nv.mbarrier_arrive %i {base = 0 : i64, per = "warpgroup", cluster = 1 : i64}
  func.return
}

// -----

func.func @store_tma_partial_box(%C: memref<?x?xbf16>, %i: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<44xbf16>
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store_tma: n=88 must be a multiple of 32 (whole boxes of 64-byte rows; 128-byte rows for f32)}}
  nv.wgacc_store_tma %v, %C[%i, %i], %i {n = 88 : i64, stage = 0 : i64} : vector<44xbf16>, memref<?x?xbf16>
  func.return
}

// -----

func.func @store_tma_of_an_integer_tile(%C: memref<?x?xi32>, %i: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<32xi32>
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store_tma: memref memref<?x?xi32>: the TMA store epilogue writes bf16, f16 or f32}}
  nv.wgacc_store_tma %v, %C[%i, %i], %i {n = 64 : i64, stage = 0 : i64} : vector<32xi32>, memref<?x?xi32>
  func.return
}

// -----

func.func @store_tma_unaligned_staging(%C: memref<?x?xbf16>, %i: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<32xbf16>
  // The 128-byte swizzle repeats every 1024 bytes: a staging buffer starts on that period.
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store_tma: stage 512 must be a multiple of 1024}}
  nv.wgacc_store_tma %v, %C[%i, %i], %i {n = 64 : i64, stage = 512 : i64} : vector<32xbf16>, memref<?x?xbf16>
  func.return
}

// -----

func.func @cluster_rank_needs_sm_90() {
  %r = nv.cluster_rank : index
  func.return
}
