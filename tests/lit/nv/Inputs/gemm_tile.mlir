// Tile IR GEMM, C += A @ B with C loaded as the initial accumulator: input of the named pipeline tessera-lower-to-nv.
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %c = tile.load %C[%m0, %n0] pad 0.0 : memref<?x?xf32> -> !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%a = %c) -> (!tile.tile<128x128xf32>) {
    %ta = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x32xbf16>
    %tb = tile.load %B[%k, %n0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<32x128xbf16>
    %d = tile.mma %ta, %tb, %a : !tile.tile<128x32xbf16>, !tile.tile<32x128xbf16>, !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
