// Every logical Tile IR op parses, verifies and prints back in its custom form.
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s | tessera-opt | FileCheck %s

// CHECK-LABEL: func.func @logical(
// CHECK-SAME: %A: memref<?x?xf32>, %O: memref<256x256xf32>, %s: f32
func.func @logical(%A: memref<?x?xf32>, %O: memref<256x256xf32>, %s: f32) {
  // CHECK: %pid = tile.program_id 0
  // CHECK: %np = tile.num_programs 2
  %pid = tile.program_id 0
  %np = tile.num_programs 2
  %c0 = arith.constant 0 : index
  // CHECK: %x = tile.load %A[%pid, %c0] pad 0.0 : memref<?x?xf32> -> !tile.tile<64x64xf32>
  // CHECK: %y = tile.load %A[%c0, %np] pad -inf : memref<?x?xf32> -> !tile.tile<64x64xf32>
  // CHECK: %w = tile.load %A[%c0, %c0] pad 1.5 : memref<?x?xf32> -> !tile.tile<64x64xf32>
  %x = tile.load %A[%pid, %c0] pad 0.0 : memref<?x?xf32> -> !tile.tile<64x64xf32>
  %y = tile.load %A[%c0, %np] pad -inf : memref<?x?xf32> -> !tile.tile<64x64xf32>
  %w = tile.load %A[%c0, %c0] pad 1.5 : memref<?x?xf32> -> !tile.tile<64x64xf32>
  // CHECK: %mm = tile.mma %x, %y, %w : !tile.tile<64x64xf32>, !tile.tile<64x64xf32>, !tile.tile<64x64xf32>
  %mm = tile.mma %x, %y, %w : !tile.tile<64x64xf32>, !tile.tile<64x64xf32>, !tile.tile<64x64xf32>
  // CHECK: %add = tile.add %x, %y : !tile.tile<64x64xf32>
  // CHECK: %sub = tile.sub %x, %y : !tile.tile<64x64xf32>
  // CHECK: %mul = tile.mul %x, %y : !tile.tile<64x64xf32>
  // CHECK: %div = tile.div %x, %y : !tile.tile<64x64xf32>
  // CHECK: %max = tile.max %x, %y : !tile.tile<64x64xf32>
  // CHECK: %min = tile.min %x, %y : !tile.tile<64x64xf32>
  %add = tile.add %x, %y : !tile.tile<64x64xf32>
  %sub = tile.sub %x, %y : !tile.tile<64x64xf32>
  %mul = tile.mul %x, %y : !tile.tile<64x64xf32>
  %div = tile.div %x, %y : !tile.tile<64x64xf32>
  %max = tile.max %x, %y : !tile.tile<64x64xf32>
  %min = tile.min %x, %y : !tile.tile<64x64xf32>
  // CHECK: %neg = tile.neg %x : !tile.tile<64x64xf32>
  // CHECK: %abs = tile.abs %x : !tile.tile<64x64xf32>
  // CHECK: %exp = tile.exp %x : !tile.tile<64x64xf32>
  // CHECK: %exp2 = tile.exp2 %x : !tile.tile<64x64xf32>
  // CHECK: %log = tile.log %x : !tile.tile<64x64xf32>
  // CHECK: %sqrt = tile.sqrt %x : !tile.tile<64x64xf32>
  // CHECK: %rsqrt = tile.rsqrt %x : !tile.tile<64x64xf32>
  // CHECK: %tanh = tile.tanh %x : !tile.tile<64x64xf32>
  // CHECK: %erf = tile.erf %x : !tile.tile<64x64xf32>
  %neg = tile.neg %x : !tile.tile<64x64xf32>
  %abs = tile.abs %x : !tile.tile<64x64xf32>
  %exp = tile.exp %x : !tile.tile<64x64xf32>
  %exp2 = tile.exp2 %x : !tile.tile<64x64xf32>
  %log = tile.log %x : !tile.tile<64x64xf32>
  %sqrt = tile.sqrt %x : !tile.tile<64x64xf32>
  %rsqrt = tile.rsqrt %x : !tile.tile<64x64xf32>
  %tanh = tile.tanh %x : !tile.tile<64x64xf32>
  %erf = tile.erf %x : !tile.tile<64x64xf32>
  // CHECK: %eq = tile.cmp eq %x, %y : !tile.tile<64x64xf32>
  // CHECK: %ne = tile.cmp ne %x, %y : !tile.tile<64x64xf32>
  // CHECK: %lt = tile.cmp lt %x, %y : !tile.tile<64x64xf32>
  // CHECK: %le = tile.cmp le %x, %y : !tile.tile<64x64xf32>
  // CHECK: %gt = tile.cmp gt %x, %y : !tile.tile<64x64xf32>
  // CHECK: %ge = tile.cmp ge %x, %y : !tile.tile<64x64xf32>
  %eq = tile.cmp eq %x, %y : !tile.tile<64x64xf32>
  %ne = tile.cmp ne %x, %y : !tile.tile<64x64xf32>
  %lt = tile.cmp lt %x, %y : !tile.tile<64x64xf32>
  %le = tile.cmp le %x, %y : !tile.tile<64x64xf32>
  %gt = tile.cmp gt %x, %y : !tile.tile<64x64xf32>
  %ge = tile.cmp ge %x, %y : !tile.tile<64x64xf32>
  // CHECK: %sel = tile.select %lt, %x, %y : !tile.tile<64x64xf32>
  %sel = tile.select %lt, %x, %y : !tile.tile<64x64xf32>
  // CHECK: %rsum = tile.reduce sum 1 %sel : !tile.tile<64x64xf32> -> !tile.tile<64x1xf32>
  // CHECK: %rmax = tile.reduce max 0 %sel : !tile.tile<64x64xf32> -> !tile.tile<1x64xf32>
  // CHECK: %rmin = tile.reduce min 1 %sel : !tile.tile<64x64xf32> -> !tile.tile<64x1xf32>
  %rsum = tile.reduce sum 1 %sel : !tile.tile<64x64xf32> -> !tile.tile<64x1xf32>
  %rmax = tile.reduce max 0 %sel : !tile.tile<64x64xf32> -> !tile.tile<1x64xf32>
  %rmin = tile.reduce min 1 %sel : !tile.tile<64x64xf32> -> !tile.tile<64x1xf32>
  // CHECK: %bc = tile.broadcast %rsum : !tile.tile<64x1xf32> -> !tile.tile<64x64xf32>
  %bc = tile.broadcast %rsum : !tile.tile<64x1xf32> -> !tile.tile<64x64xf32>
  // CHECK: %h = tile.convert %bc : !tile.tile<64x64xf32> -> !tile.tile<64x64xbf16>
  // CHECK: %hf = tile.convert %h : !tile.tile<64x64xbf16> -> !tile.tile<64x64xf16>
  // CHECK: %d = tile.convert %hf : !tile.tile<64x64xf16> -> !tile.tile<64x64xf64>
  %h = tile.convert %bc : !tile.tile<64x64xf32> -> !tile.tile<64x64xbf16>
  %hf = tile.convert %h : !tile.tile<64x64xbf16> -> !tile.tile<64x64xf16>
  %d = tile.convert %hf : !tile.tile<64x64xf16> -> !tile.tile<64x64xf64>
  // CHECK: %t = tile.transpose %rmax : !tile.tile<1x64xf32> -> !tile.tile<64x1xf32>
  %t = tile.transpose %rmax : !tile.tile<1x64xf32> -> !tile.tile<64x1xf32>
  // CHECK: %row = tile.reshape %rmax : !tile.tile<1x64xf32> -> !tile.tile<64xf32>
  // CHECK: %col = tile.reshape %row : !tile.tile<64xf32> -> !tile.tile<64x1xf32>
  %row = tile.reshape %rmax : !tile.tile<1x64xf32> -> !tile.tile<64xf32>
  %col = tile.reshape %row : !tile.tile<64xf32> -> !tile.tile<64x1xf32>
  // CHECK: %cs = tile.scan sum 1 %x : !tile.tile<64x64xf32> -> !tile.tile<64x64xf32>
  %cs = tile.scan sum 1 %x : !tile.tile<64x64xf32> -> !tile.tile<64x64xf32>
  // CHECK: %k = tile.constant -1.5e+30 : !tile.tile<64x64xf32>
  // CHECK: %kn = tile.constant nan : !tile.tile<8x8xf32>
  // CHECK: %ki = tile.constant 7.0 : !tile.tile<8x8xi32>
  %k = tile.constant -1.5e+30 : !tile.tile<64x64xf32>
  %kn = tile.constant nan : !tile.tile<8x8xf32>
  %ki = tile.constant 7 : !tile.tile<8x8xi32>
  // CHECK: %sp = tile.splat %s : f32 -> !tile.tile<64x64xf32>
  %sp = tile.splat %s : f32 -> !tile.tile<64x64xf32>
  // CHECK: %i0 = tile.iota 0 : !tile.tile<64x64xi32>
  // CHECK: %i1 = tile.iota 1 : !tile.tile<4x8x16xi64>
  %i0 = tile.iota 0 : !tile.tile<64x64xi32>
  %i1 = tile.iota 1 : !tile.tile<4x8x16xi64>
  // CHECK: %ai = tile.add %i0, %i0 : !tile.tile<64x64xi32>
  %ai = tile.add %i0, %i0 : !tile.tile<64x64xi32>
  // CHECK: tile.store %sel, %O[%c0, %c0] : !tile.tile<64x64xf32> -> memref<256x256xf32>
  tile.store %sel, %O[%c0, %c0] : !tile.tile<64x64xf32> -> memref<256x256xf32>
  // A masked store names the i1 tile after `if`; its type is the stored value's shape in i1.
  // CHECK: tile.masked_store %sel, %O[%c0, %c0] if %lt : !tile.tile<64x64xf32> -> memref<256x256xf32>
  tile.masked_store %sel, %O[%c0, %c0] if %lt : !tile.tile<64x64xf32> -> memref<256x256xf32>
  // An atomic add, unmasked and masked.
  // CHECK: tile.atomic_add %sel, %O[%c0, %c0] : !tile.tile<64x64xf32> -> memref<256x256xf32>
  // CHECK: tile.atomic_add %sel, %O[%c0, %c0] if %lt : !tile.tile<64x64xf32> -> memref<256x256xf32>
  tile.atomic_add %sel, %O[%c0, %c0] : !tile.tile<64x64xf32> -> memref<256x256xf32>
  tile.atomic_add %sel, %O[%c0, %c0] if %lt : !tile.tile<64x64xf32> -> memref<256x256xf32>
  // CHECK: func.return
  func.return
}
