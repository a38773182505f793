// Verifier rules of nv.cluster_splitk_fixup, each a coded NV_OP_INVALID naming the rule; it needs sm_90 or newer
// (NV_ARCH_UNSUPPORTED when lowered for sm_80).
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.cluster_splitk_fixup: n=12 must be a multiple of 8 in [8, 256]
// (lit reads "UNSUPPORTED" and a colon as its own directive, hence NV_ARCH_UNSUPPORTED{{:}}.)
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_80}' 2>&1 | FileCheck %s --check-prefix=SM80
// SM80: error: NV_ARCH_UNSUPPORTED{{:}} nv.cluster_splitk_fixup needs sm_90 or newer, but the target is sm_80

// -----

func.func @n_not_a_wgmma_width(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<6xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.cluster_splitk_fixup: n=12 must be a multiple of 8 in [8, 256]}}
  %s, %l = nv.cluster_splitk_fixup %v, %t, %t, %t, %t {n = 12 : i64, slots = 1 : i64, buffer = 0 : i64, full = 4096 : i64, empty = 4104 : i64} : vector<6xf32> -> vector<6xf32>
  func.return
}

// -----

func.func @registers_do_not_match_n(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<32xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.cluster_splitk_fixup: value vector<32xf32> must hold 64 elements per thread}}
  %s, %l = nv.cluster_splitk_fixup %v, %t, %t, %t, %t {n = 128 : i64, slots = 1 : i64, buffer = 0 : i64, full = 32768 : i64, empty = 32776 : i64} : vector<32xf32> -> vector<32xf32>
  func.return
}

// -----

func.func @half_precision_partials(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<8xbf16>
  // expected-error@+1 {{NV_OP_INVALID: nv.cluster_splitk_fixup: value vector<8xbf16> must have element type f32}}
  %s, %l = nv.cluster_splitk_fixup %v, %t, %t, %t, %t {n = 16 : i64, slots = 1 : i64, buffer = 0 : i64, full = 4096 : i64, empty = 4104 : i64} : vector<8xbf16> -> vector<8xbf16>
  func.return
}

// -----

func.func @no_slots(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<8xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.cluster_splitk_fixup: slots=0 must be in [1, 8] (a slot per consumer warpgroup and 64-row block it holds)}}
  %s, %l = nv.cluster_splitk_fixup %v, %t, %t, %t, %t {n = 16 : i64, slots = 0 : i64, buffer = 0 : i64, full = 4096 : i64, empty = 4104 : i64} : vector<8xf32> -> vector<8xf32>
  func.return
}

// -----

func.func @misaligned_buffer(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<8xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.cluster_splitk_fixup: buffer 8 must be a multiple of 16}}
  %s, %l = nv.cluster_splitk_fixup %v, %t, %t, %t, %t {n = 16 : i64, slots = 1 : i64, buffer = 8 : i64, full = 4096 : i64, empty = 4104 : i64} : vector<8xf32> -> vector<8xf32>
  func.return
}

// -----

func.func @misaligned_barrier(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<8xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.cluster_splitk_fixup: empty 4100 must be a multiple of 8}}
  %s, %l = nv.cluster_splitk_fixup %v, %t, %t, %t, %t {n = 16 : i64, slots = 1 : i64, buffer = 0 : i64, full = 4096 : i64, empty = 4100 : i64} : vector<8xf32> -> vector<8xf32>
  func.return
}

// -----

func.func @valid_but_not_for_sm80(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<8xf32>
  %s, %l = nv.cluster_splitk_fixup %v, %t, %t, %t, %t {n = 16 : i64, slots = 1 : i64, buffer = 0 : i64, full = 4096 : i64, empty = 4104 : i64} : vector<8xf32> -> vector<8xf32>
  func.return
}
