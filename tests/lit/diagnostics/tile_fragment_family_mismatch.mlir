// TILE_FRAGMENT_FAMILY_MISMATCH: Families meet: "auto" equals only "auto", never "mma_sync".
// RUN: tessera-opt --split-input-file --verify-diagnostics %s
// RUN: not tessera-opt --split-input-file %s 2>&1 | FileCheck %s

func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="mma_sync">, %b: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">, %c: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="auto">) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_FRAGMENT_FAMILY_MISMATCH: tile.fragment_mma: a (operand #0) has family 'mma_sync' where 'auto' is required
  %d = tile.fragment_mma %a, %b, %c : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="mma_sync">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="auto">  // expected-error {{TILE_FRAGMENT_FAMILY_MISMATCH: tile.fragment_mma: a (operand #0) has family 'mma_sync' where 'auto' is required}}
  func.return
}

// -----

func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="auto">, %b: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">, %c: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_FRAGMENT_FAMILY_MISMATCH: tile.fragment_mma: a (operand #0) has family 'auto' where 'mma_sync' is required
  %d = tile.fragment_mma %a, %b, %c : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="auto">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">  // expected-error {{TILE_FRAGMENT_FAMILY_MISMATCH: tile.fragment_mma: a (operand #0) has family 'auto' where 'mma_sync' is required}}
  func.return
}

// -----

func.func @f(%a: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="mma_sync">, %b: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="wgmma">, %c: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">) {
  // CHECK: .mlir:[[# @LINE + 1]]:3: error: TILE_FRAGMENT_FAMILY_MISMATCH: tile.fragment_mma: b (operand #1) has family 'wgmma' where 'mma_sync' is required
  %d = tile.fragment_mma %a, %b, %c : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="mma_sync">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="wgmma">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">  // expected-error {{TILE_FRAGMENT_FAMILY_MISMATCH: tile.fragment_mma: b (operand #1) has family 'wgmma' where 'mma_sync' is required}}
  func.return
}

// -----

func.func @f(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = tile.fragment_zero : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %z) -> (!tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">) {
    %w = tile.fragment_zero : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="auto">
    // CHECK: .mlir:[[# @LINE + 1]]:5: error: TILE_FRAGMENT_FAMILY_MISMATCH: scf.for: yielded value #0 has family 'auto' where 'mma_sync' is required
    scf.yield %w : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="auto">  // expected-error {{TILE_FRAGMENT_FAMILY_MISMATCH: scf.for: yielded value #0 has family 'auto' where 'mma_sync' is required}}
  }
  func.return
}
