// Logical register-tile ops left over after tile-to-fragments, on a 64x32 tile spread over 128 threads
// (nv.num_threads): masked row softmax numerator, its transpose, column sums and an integer path.
func.func @logical(%X: memref<?x?xbf16>, %T: memref<?x?xf32>, %R: memref<?x?xf32>, %S: memref<?x?xf32>,
                   %I: memref<?x?xi32>, %scale: f32) attributes {nv.num_threads = 128 : i64} {
  %pm = tile.program_id 0
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %pm, %c64 : index
  %t = tile.load %X[%m0, %c0] pad -inf : memref<?x?xbf16> -> !tile.tile<64x32xbf16>
  %e = tile.convert %t : !tile.tile<64x32xbf16> -> !tile.tile<64x32xf32>
  %r = tile.reduce max 1 %e : !tile.tile<64x32xf32> -> !tile.tile<64x1xf32>
  tile.store %r, %R[%m0, %c0] : !tile.tile<64x1xf32> -> memref<?x?xf32>
  %b = tile.broadcast %r : !tile.tile<64x1xf32> -> !tile.tile<64x32xf32>
  %s = tile.sub %e, %b : !tile.tile<64x32xf32>
  %x = tile.exp %s : !tile.tile<64x32xf32>
  %i = tile.iota 1 : !tile.tile<64x32xi32>
  %j = tile.iota 0 : !tile.tile<64x32xi32>
  %m = tile.cmp le %i, %j : !tile.tile<64x32xi32>
  %zero = tile.constant 0.0 : !tile.tile<64x32xf32>
  %sel = tile.select %m, %x, %zero : !tile.tile<64x32xf32>
  %sp = tile.splat %scale : f32 -> !tile.tile<64x32xf32>
  %mm = tile.mul %sel, %sp : !tile.tile<64x32xf32>
  %tr = tile.transpose %mm : !tile.tile<64x32xf32> -> !tile.tile<32x64xf32>
  %c32 = arith.constant 32 : index
  %n0 = arith.muli %pm, %c64 : index
  tile.store %tr, %T[%c0, %n0] : !tile.tile<32x64xf32> -> memref<?x?xf32>
  %cs = tile.reduce sum 0 %mm : !tile.tile<64x32xf32> -> !tile.tile<1x32xf32>
  %h = tile.convert %cs : !tile.tile<1x32xf32> -> !tile.tile<1x32xbf16>
  %h2 = tile.convert %h : !tile.tile<1x32xbf16> -> !tile.tile<1x32xf32>
  %sq = tile.sqrt %h2 : !tile.tile<1x32xf32>
  %ng = tile.neg %sq : !tile.tile<1x32xf32>
  %ab = tile.abs %ng : !tile.tile<1x32xf32>
  tile.store %ab, %S[%pm, %c0] : !tile.tile<1x32xf32> -> memref<?x?xf32>
  %ii = tile.add %i, %j : !tile.tile<64x32xi32>
  %seven = tile.constant 7.0 : !tile.tile<64x32xi32>
  %q = tile.div %ii, %seven : !tile.tile<64x32xi32>
  %mx = tile.max %q, %j : !tile.tile<64x32xi32>
  tile.store %mx, %I[%m0, %c0] : !tile.tile<64x32xi32> -> memref<?x?xi32>
  func.return
}
