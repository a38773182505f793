// xDSL's canonicalize, cse and dce run on Tile IR: pure tile ops are merged and dropped, side-effecting
// ones (tile.alloc, tile.store, tile.wait, async copies) are kept.
// RUN: tessera-opt %s -p cse | FileCheck %s --check-prefix=CSE
// RUN: tessera-opt %s -p dce | FileCheck %s --check-prefix=DCE
// RUN: tessera-opt %s -p 'builtin.module(canonicalize)' | FileCheck %s --check-prefix=CANON

// CSE-LABEL: func.func @f(
// CSE: %x = tile.exp %a
// CSE-NOT: %y = tile.exp
// CSE: %s = tile.add %x, %x
// DCE-LABEL: func.func @f(
// DCE-NOT: %dead
// DCE: %buf = tile.alloc
// DCE: tile.store
// CANON-LABEL: func.func @f(
// CANON-NOT: %dead
// CANON-NOT: arith.addi
// CANON: %buf = tile.alloc
// CANON: tile.store
func.func @f(%a: !tile.tile<4x4xf32>, %O: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %i = arith.addi %c0, %c1 : index
  %x = tile.exp %a : !tile.tile<4x4xf32>
  %y = tile.exp %a : !tile.tile<4x4xf32>
  %s = tile.add %x, %y : !tile.tile<4x4xf32>
  %dead = tile.mul %s, %s : !tile.tile<4x4xf32>
  %buf = tile.alloc : !tile.tile<4x4xf32, smem>
  tile.store %s, %O[%c0, %i] : !tile.tile<4x4xf32> -> memref<4x4xf32>
  func.return
}
