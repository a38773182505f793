// TILE_SHAPE_MISMATCH: Shape rules of reduce, broadcast, convert, transpose, reshape, masked_store and async_copy.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%a: !tile.tile<4x4xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_SHAPE_MISMATCH: tile.reduce: reducing !tile.tile<4x4xf32> along axis 1 gives !tile.tile<4x1xf32>
  %x = tile.reduce sum 1 %a : !tile.tile<4x4xf32> -> !tile.tile<4x4xf32>  // expected-error {{TILE_SHAPE_MISMATCH: tile.reduce: reducing !tile.tile<4x4xf32> along axis 1 gives !tile.tile<4x1xf32>}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x2xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_SHAPE_MISMATCH: tile.broadcast: cannot broadcast
  %x = tile.broadcast %a : !tile.tile<4x2xf32> -> !tile.tile<4x4xf32>  // expected-error {{TILE_SHAPE_MISMATCH: tile.broadcast: cannot broadcast}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x8xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_SHAPE_MISMATCH: tile.transpose: transposing
  %x = tile.transpose %a : !tile.tile<4x8xf32> -> !tile.tile<4x8xf32>  // expected-error {{TILE_SHAPE_MISMATCH: tile.transpose: transposing}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<4x8xf32>) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_SHAPE_MISMATCH: tile.convert: source
  %x = tile.convert %a : !tile.tile<4x8xf32> -> !tile.tile<8x4xf16>  // expected-error {{TILE_SHAPE_MISMATCH: tile.convert: source}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<64xf32>) {
  // A reshape keeps the element count: 64 elements are not 2 x 64.
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_SHAPE_MISMATCH: tile.reshape: cannot reshape !tile.tile<64xf32> to !tile.tile<2x64xf32>
  %x = tile.reshape %a : !tile.tile<64xf32> -> !tile.tile<2x64xf32>  // expected-error {{TILE_SHAPE_MISMATCH: tile.reshape: cannot reshape !tile.tile<64xf32> to !tile.tile<2x64xf32>: the element count, element type and memory space must stay the same}}
  func.return
}

// -----

func.func @f(%a: !tile.tile<64xf32>) {
  // nor the element type (that is tile.convert).
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_SHAPE_MISMATCH: tile.reshape: cannot reshape !tile.tile<64xf32> to !tile.tile<1x64xf16>
  %x = tile.reshape %a : !tile.tile<64xf32> -> !tile.tile<1x64xf16>  // expected-error {{TILE_SHAPE_MISMATCH: tile.reshape: cannot reshape}}
  func.return
}

// -----

func.func @f(%v: !tile.tile<4x4xf32>, %m: !tile.tile<1x4xi1>, %O: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  // The mask covers every stored element: broadcasting it is the tracer's job (tile.broadcast), not the store's.
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_SHAPE_MISMATCH: tile.masked_store: the mask !tile.tile<1x4xi1> and the stored value !tile.tile<4x4xf32> differ in shape
  tile.masked_store %v, %O[%c0, %c0] if %m : !tile.tile<4x4xf32> -> memref<8x8xf32>  // expected-error {{TILE_SHAPE_MISMATCH: tile.masked_store: the mask !tile.tile<1x4xi1> and the stored value !tile.tile<4x4xf32> differ in shape}}
  func.return
}
