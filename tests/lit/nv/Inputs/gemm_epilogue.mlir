// Fragment IR (what tile-to-fragments produces, written by hand): D = relu((C + A @ B) * alpha + bias).
// The accumulator starts from C (packed from a register tile), is carried through the K loop, and
// is unpacked into a register tile for the epilogue. 128x128 CTA tile, 2x2 warps of 64x64x32.
!acc = !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
!fa = !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
!fb = !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="row", family="mma_sync">
func.func @gemm_epilogue(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %bias: memref<1x?xf32>,
                         %D: memref<?x?xf32>, %K: index, %alpha: f32) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %sa = tile.alloc : !tile.tile<128x32xbf16, smem>
  %sb = tile.alloc : !tile.tile<32x128xbf16, smem>
  %c = tile.load %C[%m0, %n0] pad 0.0 : memref<?x?xf32> -> !tile.tile<128x128xf32>
  %init = tile.fragment_pack %c[%c0, %c0] warps [2, 2] : !tile.tile<128x128xf32> -> !acc
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%a = %init) -> (!acc) {
    %va = tile.view %A[%m0, %k] : memref<?x?xbf16> -> !tile.tile<128x32xbf16, global>
    %vb = tile.view %B[%k, %n0] : memref<?x?xbf16> -> !tile.tile<32x128xbf16, global>
    %ta = tile.async_copy %va, %sa pad 0.0 : !tile.tile<128x32xbf16, global>, !tile.tile<128x32xbf16, smem>
    %tb = tile.async_copy %vb, %sb pad 0.0 : !tile.tile<32x128xbf16, global>, !tile.tile<32x128xbf16, smem>
    tile.wait %ta, %tb
    %fa = tile.fragment_pack %sa[%c0, %c0] warps [2, 2] : !tile.tile<128x32xbf16, smem> -> !fa
    %fb = tile.fragment_pack %sb[%c0, %c0] warps [2, 2] : !tile.tile<32x128xbf16, smem> -> !fb
    %d = tile.fragment_mma %fa, %fb, %a : !fa, !fb, !acc
    scf.yield %d : !acc
  }
  %t = tile.fragment_unpack %acc warps [2, 2] : !acc -> !tile.tile<128x128xf32>
  %al = tile.splat %alpha : f32 -> !tile.tile<128x128xf32>
  %scaled = tile.mul %t, %al : !tile.tile<128x128xf32>
  %b1 = tile.load %bias[%c0, %n0] pad 0.0 : memref<1x?xf32> -> !tile.tile<1x128xf32>
  %b = tile.broadcast %b1 : !tile.tile<1x128xf32> -> !tile.tile<128x128xf32>
  %x = tile.add %scaled, %b : !tile.tile<128x128xf32>
  %zero = tile.constant 0.0 : !tile.tile<128x128xf32>
  %y = tile.max %x, %zero : !tile.tile<128x128xf32>
  tile.store %y, %D[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
