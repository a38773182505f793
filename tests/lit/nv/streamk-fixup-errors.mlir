// Verifier rules of nv.streamk_fixup, each a coded NV_OP_INVALID naming the rule; it needs sm_90 or newer
// (NV_ARCH_UNSUPPORTED when lowered for sm_80).
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.streamk_fixup: slot_stride=3 must be 2 (two slots per CTA) or 4 (per 2-CTA cluster)
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_80}' 2>&1 | FileCheck %s --check-prefix=SM80
// SM80: error: NV_ARCH_UNSUPPORTED{{:}} nv.streamk_fixup needs sm_90 or newer, but the target is sm_80

// -----

func.func @odd_slot_stride(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.streamk_fixup: slot_stride=3 must be 2 (two slots per CTA) or 4 (per 2-CTA cluster)}}
  %s, %l = nv.streamk_fixup %v, %t, %t, %t, %t, %t, %t, %t {n = 128 : i64, blocks = 2 : i64, slot_stride = 3 : i64, flag = 0 : i64} : vector<64xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @registers_do_not_match_n(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<32xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.streamk_fixup: value vector<32xf32> must hold 64 elements per thread}}
  %s, %l = nv.streamk_fixup %v, %t, %t, %t, %t, %t, %t, %t {n = 128 : i64, blocks = 2 : i64, slot_stride = 2 : i64, flag = 0 : i64} : vector<32xf32> -> vector<32xf32>
  func.return
}

// -----

func.func @half_precision_partials(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xbf16>
  // expected-error@+1 {{NV_OP_INVALID: nv.streamk_fixup: value vector<64xbf16> must have element type f32}}
  %s, %l = nv.streamk_fixup %v, %t, %t, %t, %t, %t, %t, %t {n = 128 : i64, blocks = 2 : i64, slot_stride = 2 : i64, flag = 0 : i64} : vector<64xbf16> -> vector<64xbf16>
  func.return
}

// -----

func.func @too_many_blocks(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.streamk_fixup: blocks=5 must be in [1, 4] (64-row blocks of a tile of at most 256 rows)}}
  %s, %l = nv.streamk_fixup %v, %t, %t, %t, %t, %t, %t, %t {n = 128 : i64, blocks = 5 : i64, slot_stride = 2 : i64, flag = 0 : i64} : vector<64xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @misaligned_flag_word(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xf32>
  // expected-error@+1 {{NV_OP_INVALID: nv.streamk_fixup: flag 6 must be a multiple of 4}}
  %s, %l = nv.streamk_fixup %v, %t, %t, %t, %t, %t, %t, %t {n = 128 : i64, blocks = 2 : i64, slot_stride = 2 : i64, flag = 6 : i64} : vector<64xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @valid_but_not_for_sm80(%t: index) {
  %v = nv.fill {value = 1.0 : f64} : vector<64xf32>
  %s, %l = nv.streamk_fixup %v, %t, %t, %t, %t, %t, %t, %t {n = 128 : i64, blocks = 2 : i64, slot_stride = 2 : i64, flag = 0 : i64} : vector<64xf32> -> vector<64xf32>
  func.return
}
