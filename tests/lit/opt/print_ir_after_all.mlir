// --print-ir-after-all dumps the module to stderr after every pass, under an MLIR-style header,
// so each pass's effect can be read (and FileChecked) on its own.
// RUN: tessera-opt %s -p 'builtin.module(dce,cse)' --print-ir-after-all -o %t 2>&1 | FileCheck %s

// CHECK: // -----// IR Dump After dce //----- //
// CHECK-NEXT: builtin.module {
// CHECK: %x = tile.add %a, %a : !tile.tile<4x4xf32>
// CHECK-NEXT: %y = tile.add %a, %a : !tile.tile<4x4xf32>
// CHECK-NEXT: %s = tile.sub %x, %y
// CHECK-NEXT: tile.store %s
// CHECK: // -----// IR Dump After cse //----- //
// CHECK-NEXT: builtin.module {
// CHECK: %x = tile.add %a, %a : !tile.tile<4x4xf32>
// CHECK-NEXT: %s = tile.sub %x, %x
func.func @f(%a: !tile.tile<4x4xf32>, %O: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.add %a, %a : !tile.tile<4x4xf32>
  %y = tile.add %a, %a : !tile.tile<4x4xf32>
  %unused = tile.neg %a : !tile.tile<4x4xf32>
  %s = tile.sub %x, %y : !tile.tile<4x4xf32>
  tile.store %s, %O[%c0, %c0] : !tile.tile<4x4xf32> -> memref<4x4xf32>
  func.return
}
