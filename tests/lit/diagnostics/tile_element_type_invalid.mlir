// TILE_ELEMENT_TYPE_INVALID: Ops given element types they do not accept.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%a: !tile.tile<4x4xi32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ELEMENT_TYPE_INVALID: tile.exp needs a float tile
  %x = tile.exp %a : !tile.tile<4x4xi32>  // expected-error {{TILE_ELEMENT_TYPE_INVALID: tile.exp needs a float tile}}
  func.return
}

// -----

func.func @f() {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ELEMENT_TYPE_INVALID: tile.iota: result
  %x = tile.iota 0 : !tile.tile<4x4xf32>  // expected-error {{TILE_ELEMENT_TYPE_INVALID: tile.iota: result}}
  func.return
}

// -----

func.func @f(%c: !tile.tile<4x4xf32>, %a: !tile.tile<4x4xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ELEMENT_TYPE_INVALID: tile.select: condition must be !tile.tile<4x4xi1>
  %x = tile.select %c, %a, %a : !tile.tile<4x4xf32>  // expected-error {{TILE_ELEMENT_TYPE_INVALID: tile.select: condition must be !tile.tile<4x4xi1>}}
  func.return
}

// -----

func.func @f(%v: !tile.tile<4x4xf32>, %m: !tile.tile<4x4xi32>, %O: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  // A store mask is an i1 tile (a comparison), not a 0/1 integer tile.
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ELEMENT_TYPE_INVALID: tile.masked_store: the mask !tile.tile<4x4xi32> must be an i1 tile
  tile.masked_store %v, %O[%c0, %c0] if %m : !tile.tile<4x4xf32> -> memref<8x8xf32>  // expected-error {{TILE_ELEMENT_TYPE_INVALID: tile.masked_store: the mask !tile.tile<4x4xi32> must be an i1 tile}}
  func.return
}

// -----

func.func @f(%v: !tile.tile<4x4xbf16>, %O: memref<8x8xbf16>) {
  %c0 = arith.constant 0 : index
  // atomicAdd takes f32, f64 and i32 on every arch Tessera targets: a bf16 accumulation is refused.
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ELEMENT_TYPE_INVALID: tile.atomic_add adds f32, f64, i32 tiles, not !tile.tile<4x4xbf16>
  tile.atomic_add %v, %O[%c0, %c0] : !tile.tile<4x4xbf16> -> memref<8x8xbf16>  // expected-error {{TILE_ELEMENT_TYPE_INVALID: tile.atomic_add adds f32, f64, i32 tiles, not !tile.tile<4x4xbf16>}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x64xbf16>) {
  // A bf16 running sum would round at every step: tile.scan takes f32, f64 and i32 (tl.cumsum converts first).
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_ELEMENT_TYPE_INVALID: tile.scan takes f32, f64, i32 tiles, got !tile.tile<4x64xbf16>
  %x = tile.scan sum 1 %a : !tile.tile<4x64xbf16> -> !tile.tile<4x64xbf16>  // expected-error {{TILE_ELEMENT_TYPE_INVALID: tile.scan takes f32, f64, i32 tiles, got !tile.tile<4x64xbf16>}}
  func.return
}
