// Verifier rules of nv.splitk_fixup, each a coded NV_OP_INVALID naming the rule; it needs sm_90 or newer
// (NV_ARCH_UNSUPPORTED when lowered for sm_80).
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.splitk_fixup: splits=1 must be in [2, 16] (one split needs no fixup)
// (lit reads "UNSUPPORTED" and a colon as its own directive, hence NV_ARCH_UNSUPPORTED{{:}}.)
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_80}' 2>&1 | FileCheck %s --check-prefix=SM80
// SM80: error: NV_ARCH_UNSUPPORTED{{:}} nv.splitk_fixup needs sm_90 or newer, but the target is sm_80

// -----

func.func @one_split(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.splitk_fixup: splits=1 must be in [2, 16] (one split needs no fixup)}}
  %s, %l = nv.splitk_fixup %v, %t, %t, %t, %t {n = 128 : i64, splits = 1 : i64, blocks = 2 : i64, flag = 0 : i64} : vector<64xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @registers_do_not_match_n(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<32xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.splitk_fixup: value vector<32xf32> must hold 64 elements per thread}}
  %s, %l = nv.splitk_fixup %v, %t, %t, %t, %t {n = 128 : i64, splits = 2 : i64, blocks = 2 : i64, flag = 0 : i64} : vector<32xf32> -> vector<32xf32>
  func.return
}

// -----

func.func @half_precision_partials(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xbf16>
  // expected-error@+1 {{NV_OP_INVALID: nv.splitk_fixup: value vector<64xbf16> must have element type f32}}
  %s, %l = nv.splitk_fixup %v, %t, %t, %t, %t {n = 128 : i64, splits = 2 : i64, blocks = 2 : i64, flag = 0 : i64} : vector<64xbf16> -> vector<64xbf16>
  func.return
}

// -----

func.func @too_many_blocks(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.splitk_fixup: blocks=5 must be in [1, 4] (64-row blocks of a tile of at most 256 rows)}}
  %s, %l = nv.splitk_fixup %v, %t, %t, %t, %t {n = 128 : i64, splits = 2 : i64, blocks = 5 : i64, flag = 0 : i64} : vector<64xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @misaligned_flag_word(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.splitk_fixup: flag 6 must be a multiple of 4}}
  %s, %l = nv.splitk_fixup %v, %t, %t, %t, %t {n = 128 : i64, splits = 2 : i64, blocks = 2 : i64, flag = 6 : i64} : vector<64xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @valid_but_not_for_sm80(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xf32>
  %s, %l = nv.splitk_fixup %v, %t, %t, %t, %t {n = 128 : i64, splits = 2 : i64, blocks = 2 : i64, flag = 0 : i64} : vector<64xf32> -> vector<64xf32>
  func.return
}
