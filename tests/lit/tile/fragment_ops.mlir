// Every fragment-level op and every fragment/tile/token type form parses, verifies and prints back.
// RUN: tessera-opt %s | FileCheck %s
// RUN: tessera-opt %s | tessera-opt | FileCheck %s

// Types in a signature are block arguments: they verify without a defining op. The default space reg prints implicitly.
// CHECK-LABEL: func.func @signature(
// CHECK-SAME: %acc: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f16, role="acc", layout="row", family="mma_sync">
// CHECK-SAME: %a: !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, role="a", layout="row", family="auto">
// CHECK-SAME: %b: !tile.fragment<m=64, n=128, k=16, elem=f16, acc=f32, role="b", layout="row", family="wgmma">
// CHECK-SAME: %t: !tile.tile<16x16xf32>, %s: !tile.tile<16x16xbf16, smem>, %g: !tile.tile<16x16xf16, global>
// CHECK-SAME: %r: !tile.tile<16x16xi1>)
func.func @signature(%acc: !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f16, role="acc", layout="row", family="mma_sync">,
                     %a: !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, role="a", layout="row", family="auto">,
                     %b: !tile.fragment<m=64, n=128, k=16, elem=f16, acc=f32, role="b", layout="row", family="wgmma">,
                     %t: !tile.tile<16x16xf32>, %s: !tile.tile<16x16xbf16, smem>, %g: !tile.tile<16x16xf16, global>,
                     %r: !tile.tile<16x16xi1, reg>) {
  func.return
}

// CHECK-LABEL: func.func @fragments(
func.func @fragments(%A: memref<?x?xf16>, %C: memref<128x128xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  // CHECK: %s = tile.alloc : !tile.tile<64x32xf16, smem>
  %s = tile.alloc : !tile.tile<64x32xf16, smem>
  // CHECK: %v = tile.view %A[%c0, %c16] : memref<?x?xf16> -> !tile.tile<64x32xf16, global>
  %v = tile.view %A[%c0, %c16] : memref<?x?xf16> -> !tile.tile<64x32xf16, global>
  // CHECK: %tok = tile.async_copy %v, %s pad 0.0 : !tile.tile<64x32xf16, global>, !tile.tile<64x32xf16, smem>
  %tok = tile.async_copy %v, %s pad 0.0 : !tile.tile<64x32xf16, global>, !tile.tile<64x32xf16, smem>
  // CHECK: tile.wait %tok
  tile.wait %tok
  // CHECK: %fa = tile.fragment_pack %s[%c0, %c0] warps [4, 1] : !tile.tile<64x32xf16, smem> -> !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="mma_sync">
  %fa = tile.fragment_pack %s[%c0, %c0] warps [4, 1] : !tile.tile<64x32xf16, smem> -> !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="mma_sync">
  // CHECK: %fb = tile.fragment_pack %s[%c0, %c16] warps [4, 2] : !tile.tile<64x32xf16, smem> -> !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">
  %fb = tile.fragment_pack %s[%c0, %c16] warps [4, 2] : !tile.tile<64x32xf16, smem> -> !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">
  // CHECK: %z = tile.fragment_zero : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">
  %z = tile.fragment_zero : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">
  // CHECK: %d = tile.fragment_mma %fa, %fb, %z : !tile.fragment<{{.*}}role="a"{{.*}}>, !tile.fragment<{{.*}}role="b"{{.*}}>, !tile.fragment<{{.*}}role="acc"{{.*}}>
  %d = tile.fragment_mma %fa, %fb, %z : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="a", layout="row", family="mma_sync">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="b", layout="row", family="mma_sync">, !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">
  // CHECK: %u = tile.fragment_unpack %d warps [4, 2] : !tile.fragment<{{.*}}role="acc"{{.*}}> -> !tile.tile<64x16xf32>
  %u = tile.fragment_unpack %d warps [4, 2] : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync"> -> !tile.tile<64x16xf32>
  // A register tile can be packed too (e.g. an epilogue re-layout).
  // CHECK: %fr = tile.fragment_pack %u[%c0, %c0] warps [4, 2] : !tile.tile<64x16xf32> -> !tile.fragment<{{.*}}role="acc"{{.*}}>
  %fr = tile.fragment_pack %u[%c0, %c0] warps [4, 2] : !tile.tile<64x16xf32> -> !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync">
  // CHECK: tile.fragment_store %fr, %C[%c0, %c16] warps [4, 2] : !tile.fragment<{{.*}}role="acc"{{.*}}> -> memref<128x128xf32>
  tile.fragment_store %fr, %C[%c0, %c16] warps [4, 2] : !tile.fragment<m=16, n=8, k=16, elem=f16, acc=f32, role="acc", layout="row", family="mma_sync"> -> memref<128x128xf32>
  func.return
}

// Family "auto" (before tile-to-fragments) and "wgmma" fragments verify like any other contract.
// CHECK-LABEL: func.func @families(
func.func @families() {
  // CHECK: tile.fragment_zero : !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="auto">
  // CHECK: tile.fragment_zero : !tile.fragment<m=64, n=128, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">
  // CHECK: tile.fragment_zero : !tile.fragment<m=16, n=8, k=8, elem=f32, acc=f32, role="acc", layout="col", family="mma_sync">
  %z0 = tile.fragment_zero : !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="auto">
  %z1 = tile.fragment_zero : !tile.fragment<m=64, n=128, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">
  %z2 = tile.fragment_zero : !tile.fragment<m=16, n=8, k=8, elem=f32, acc=f32, role="acc", layout="col", family="mma_sync">
  func.return
}
