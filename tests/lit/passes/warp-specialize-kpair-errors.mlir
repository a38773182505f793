// warp-specialize{cluster=2 multicast=k} refusals, each coded and naming what would work: a second K
// decomposition on top of the pair's (splitk, streamk), receive slots that do not fit shared memory, and the
// knob without a cluster. (lit reads "UNSUPPORTED" and a colon as its own directive, hence {{:}}.)
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 cluster=2 multicast=k splitk=2}' 2>&1 | FileCheck %s --check-prefix=SPLITK
// SPLITK: error: NV_WGMMA_UNSUPPORTED{{:}} multicast=k with splitk=2: the cluster pair already splits each tile's K steps
// SPLITK-NEXT: hint: use one K decomposition: multicast=k (in the cluster), splitk or streamk
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 cluster=2 multicast=k streamk=1}' 2>&1 | FileCheck %s --check-prefix=STREAMK
// STREAMK: error: NV_WGMMA_UNSUPPORTED{{:}} multicast=k with streamk=1: the cluster pair already splits each tile's K steps
// Whole-tile ping-pong holds a receive slot per consumer and block: 128 KiB beside 3 stages of 32 KiB.
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 cluster=2 multicast=k schedule=pingpong}' 2>&1 | FileCheck %s --check-prefix=SMEM
// SMEM: error: NV_SMEM_OVERFLOW: 3 stages of A 128x64 and B 128x64 need 262272 bytes of shared memory; sm_90a has 232448
// RUN: not tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 multicast=k}' 2>&1 | FileCheck %s --check-prefix=NOCLUSTER
// NOCLUSTER: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: multicast=k with cluster=1: the CTAs of a 2-CTA cluster split a tile's K steps; give cluster=2
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %init = tile.constant 0.0 : !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}
