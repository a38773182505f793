// TILE_FAMILY_UNSUPPORTED_ARCH: tile-verify-target rejects fragments whose family the arch cannot run,
// at the op (or block argument owner) that introduces them: wgmma needs sm_90a exactly, mma_sync sm_80+.
// RUN: tessera-opt --split-input-file --verify-diagnostics %s -p 'tile-verify-target{arch=sm_80}'
// RUN: not tessera-opt --split-input-file %s -p 'builtin.module(tile-verify-target{arch=sm_80})' 2>&1 | FileCheck %s
// On sm_90 (without "a") wgmma is rejected too; on sm_90a the same file verifies.
// RUN: not tessera-opt --split-input-file %s -p 'tile-verify-target{arch=sm_90}' 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: tessera-opt --split-input-file %s -p 'tile-verify-target{arch=sm_90a}' | FileCheck %s --check-prefix=SM90A

// SM90A: tile.fragment_zero : !tile.fragment<{{.*}}family="wgmma">
// SM90A: func.func @signature(%a: !tile.fragment<{{.*}}family="wgmma">
// SM90A: scf.for
func.func @result() {
  %ok = tile.fragment_zero : !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
  %auto = tile.fragment_zero : !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="auto">
  // CHECK: .mlir:[[# @LINE + 2]]:3: error: TILE_FAMILY_UNSUPPORTED_ARCH: tile.fragment_zero: result #0 is a fragment of family "wgmma", which sm_80 cannot run ("wgmma" needs sm_90a exactly)
  // SM90: .mlir:[[# @LINE + 1]]:3: error: TILE_FAMILY_UNSUPPORTED_ARCH: tile.fragment_zero: result #0 is a fragment of family "wgmma", which sm_90 cannot run
  %w = tile.fragment_zero : !tile.fragment<m=64, n=128, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">  // expected-error {{TILE_FAMILY_UNSUPPORTED_ARCH: tile.fragment_zero: result #0 is a fragment of family "wgmma", which sm_80 cannot run}}
  func.return
}

// -----

// A function argument is a block argument: checked at the func.func that owns it.
// CHECK: .mlir:[[# @LINE + 2]]:1: error: TILE_FAMILY_UNSUPPORTED_ARCH: func.func: region #0 block #0 argument #0 is a fragment of family "wgmma"
// SM90: .mlir:[[# @LINE + 1]]:1: error: TILE_FAMILY_UNSUPPORTED_ARCH: func.func: region #0 block #0 argument #0
func.func @signature(%a: !tile.fragment<m=64, n=128, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">) {  // expected-error {{TILE_FAMILY_UNSUPPORTED_ARCH: func.func: region #0 block #0 argument #0}}
  func.return
}

// -----

// A loop-carried wgmma accumulator: its producer is reported first.
func.func @carried(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: .mlir:[[# @LINE + 2]]:3: error: TILE_FAMILY_UNSUPPORTED_ARCH: tile.fragment_zero: result #0
  // SM90: .mlir:[[# @LINE + 1]]:3: error: TILE_FAMILY_UNSUPPORTED_ARCH: tile.fragment_zero: result #0
  %z = tile.fragment_zero : !tile.fragment<m=64, n=128, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">  // expected-error {{TILE_FAMILY_UNSUPPORTED_ARCH: tile.fragment_zero: result #0}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %z) -> (!tile.fragment<m=64, n=128, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">) {
    scf.yield %t : !tile.fragment<m=64, n=128, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">
  }
  func.return
}
