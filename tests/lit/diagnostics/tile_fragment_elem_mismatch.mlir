// TILE_FRAGMENT_ELEM_MISMATCH: Fragments (or a fragment and its tile) that disagree on the element type.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">, %b: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">, %c: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_FRAGMENT_ELEM_MISMATCH: tile.fragment_mma: a (operand #0) has elem 'bf16' where 'f16' is required
  %d = tile.fragment_mma %a, %b, %c : !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">  // expected-error {{TILE_FRAGMENT_ELEM_MISMATCH: tile.fragment_mma: a (operand #0) has elem 'bf16' where 'f16' is required}}
  func.return
}

// -----

func.func @f(%s: !tile.tile<64x32xbf16, smem>) {
  %c0 = arith.constant 0 : index
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_FRAGMENT_ELEM_MISMATCH: tile.fragment_pack: tile element type bf16 matches neither elem nor acc
  %fa = tile.fragment_pack %s[%c0, %c0] warps [1, 1] : !tile.tile<64x32xbf16, smem> -> !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="mma_sync">  // expected-error {{TILE_FRAGMENT_ELEM_MISMATCH: tile.fragment_pack: tile element type bf16 matches neither elem nor acc}}
  func.return
}

// -----

func.func @f(%d: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_FRAGMENT_ELEM_MISMATCH: tile.fragment_unpack: result element type must be f32
  %u = tile.fragment_unpack %d warps [1, 1] : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync"> -> !tile.tile<16x8xf16>  // expected-error {{TILE_FRAGMENT_ELEM_MISMATCH: tile.fragment_unpack: result element type must be f32}}
  func.return
}
