// TILE_FRAGMENT_PARAM_INVALID: Bad fragment parameters: role, layout and family strings, order, sizes, dtypes.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

// CHECK: .mlir:[[# @LINE + 1]]:111: error: TILE_FRAGMENT_PARAM_INVALID: fragment role="c" is not one of a, b, acc
func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="c", layout="row", family="mma_sync">) {  // expected-error {{TILE_FRAGMENT_PARAM_INVALID: fragment role="c" is not one of a, b, acc}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:114: error: TILE_FRAGMENT_PARAM_INVALID: fragment layout="diag" is not one of row, col
func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="diag", family="mma_sync">) {  // expected-error {{TILE_FRAGMENT_PARAM_INVALID: fragment layout="diag" is not one of row, col}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:112: error: TILE_FRAGMENT_PARAM_INVALID: fragment family="tcgen05" is not one of auto, mma_sync, wgmma
func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="tcgen05">) {  // expected-error {{TILE_FRAGMENT_PARAM_INVALID: fragment family="tcgen05" is not one of auto, mma_sync, wgmma}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:109: error: TILE_FRAGMENT_PARAM_INVALID: fragment family="AUTO"
func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="AUTO">) {  // expected-error {{TILE_FRAGMENT_PARAM_INVALID: fragment family="AUTO"}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:34: error: TILE_FRAGMENT_PARAM_INVALID: expected fragment parameter 'm', got 'n'
func.func @f(%a: !tile.fragment<n=8, m=16, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">) {  // expected-error {{TILE_FRAGMENT_PARAM_INVALID: expected fragment parameter 'm', got 'n'}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:112: error: TILE_FRAGMENT_PARAM_INVALID: fragment parameter m=0 must be a positive integer
func.func @f(%a: !tile.fragment<m=0, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">) {  // expected-error {{TILE_FRAGMENT_PARAM_INVALID: fragment parameter m=0 must be a positive integer}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:112: error: TILE_FRAGMENT_PARAM_INVALID: fragment elem=i8 is not one of bf16, f16, f32
func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=i8, acc=f32, role="acc", layout="row", family="mma_sync">) {  // expected-error {{TILE_FRAGMENT_PARAM_INVALID: fragment elem=i8 is not one of bf16, f16, f32}}
  func.return
}

// -----

// CHECK: .mlir:[[# @LINE + 1]]:114: error: TILE_FRAGMENT_PARAM_INVALID: fragment acc=bf16 is not one of f32, f16
func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=bf16, role="acc", layout="row", family="mma_sync">) {  // expected-error {{TILE_FRAGMENT_PARAM_INVALID: fragment acc=bf16 is not one of f32, f16}}
  func.return
}
