// TILE_FRAGMENT_FOOTPRINT: Warp grids of fragments that do not fit their tile.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%s: !tile.tile<64x32xf16, smem>) {
  %c0 = arith.constant 0 : index
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_FRAGMENT_FOOTPRINT: tile.fragment_pack: warps [8, 1] of
  %fa = tile.fragment_pack %s[%c0, %c0] warps [8, 1] : !tile.tile<64x32xf16, smem> -> !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="mma_sync">  // expected-error {{TILE_FRAGMENT_FOOTPRINT: tile.fragment_pack: warps [8, 1] of}}
  func.return
}

// -----

func.func @f(%d: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_FRAGMENT_FOOTPRINT: tile.fragment_unpack: warps [2, 2] of
  %u = tile.fragment_unpack %d warps [2, 2] : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync"> -> !tile.tile<16x8xf32>  // expected-error {{TILE_FRAGMENT_FOOTPRINT: tile.fragment_unpack: warps [2, 2] of}}
  func.return
}
