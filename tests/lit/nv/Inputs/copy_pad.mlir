// A tile copy with a non-zero padding value: cp.async where whole 16-byte chunks are inside, plain stores of the
// padding elsewhere; then the shared tile is read as f32 accumulator fragments and stored (32x16 per warp, 2x2 warps).
!acc = !tile.fragment<m=32, n=16, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="mma_sync">
func.func @copy_pad(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %pm = tile.program_id 0
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %pm, %c64 : index
  %s = tile.alloc : !tile.tile<64x32xf32, smem>
  %v = tile.view %X[%m0, %c0] : memref<?x?xf32> -> !tile.tile<64x32xf32, global>
  %t = tile.async_copy %v, %s pad 3.0 : !tile.tile<64x32xf32, global>, !tile.tile<64x32xf32, smem>
  tile.wait %t
  %f = tile.fragment_pack %s[%c0, %c0] warps [2, 2] : !tile.tile<64x32xf32, smem> -> !acc
  tile.fragment_store %f, %Y[%m0, %c0] warps [2, 2] : !acc -> memref<?x?xf32>
  func.return
}
