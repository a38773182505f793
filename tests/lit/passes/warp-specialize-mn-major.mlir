// warp-specialize{arch=sm_90a} with MN-major operands: A loaded as [K, M] and transposed (TN), B loaded as [K, N]
// as a plain a@b has it. Each shared tile stays as it is in memory: TMA boxes of all BK rows and one 128-byte
// swizzle row (64 bf16) of M or N, side by side, and the wgmma reads them with imm-trans 1 (a_major/b_major "mn").
// RUN: tessera-opt %s --split-input-file -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 store=registers}' | FileCheck %s

// BM=128 BN=256 BK=64: A's slot is two boxes of 64 x 64 (at 0 and 8192: 64 K rows of 128 bytes each), B's four
// (at 49152 + 8192 j), one expect_tx of both tiles' bytes. Consumer c reads A from byte 8192 c: its 64 columns of M
// are the c-th box (64 * 2 * BK bytes), which here equals a K-major 64-row block (64 * 128).
// CHECK-LABEL: func.func @gemm_tn(
// CHECK:       nv.mbarrier_expect_tx %[[S:[0-9]+]] {base = 147456 : i64, bytes = 49152 : i64}
// CHECK-NEXT:  nv.tma_load %A[%[[K:[0-9]+]], %m0], %[[S]] {{.*}}{dst = 0 : i64, stage_bytes = 16384 : i64, bar = 147456 : i64, box = array<i64: 64, 64>, swizzle = 128 : i64}
// CHECK:       nv.tma_load %A[%[[K]], %{{[0-9]+}}], %[[S]] {{.*}}{dst = 8192 : i64, stage_bytes = 16384 : i64, bar = 147456 : i64, box = array<i64: 64, 64>, swizzle = 128 : i64}
// CHECK-NEXT:  nv.tma_load %B[%[[K]], %n0], %[[S]] {{.*}}{dst = 49152 : i64, stage_bytes = 32768 : i64, bar = 147456 : i64, box = array<i64: 64, 64>, swizzle = 128 : i64}
// CHECK:       nv.tma_load %B[%[[K]], %{{[0-9]+}}], %[[S]] {{.*}}{dst = 57344 : i64,
// CHECK:       nv.tma_load %B[%[[K]], %{{[0-9]+}}], %[[S]] {{.*}}{dst = 65536 : i64,
// CHECK:       nv.tma_load %B[%[[K]], %{{[0-9]+}}], %[[S]] {{.*}}{dst = 73728 : i64,
// CHECK-NOT:   nv.tma_load
// CHECK:       nv.wgmma {{.*}}{n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64, a_major = "mn", b_major = "mn"}
func.func @gemm_tn(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c256 : index
  %init = tile.constant 0.0 : !tile.tile<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x256xf32>) {
    %at = tile.load %A[%k, %m0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x128xbf16>
    %a = tile.transpose %at : !tile.tile<64x128xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.load %B[%k, %n0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<128x256xf32>
    scf.yield %d : !tile.tile<128x256xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x256xf32> -> memref<?x?xf32>
  func.return
}

// -----

// NN with BK=32 and BN=160: A's K-major rows are 64 bytes and B's MN-major rows 320 bytes, so both use the 64-byte
// swizzle (the widest that tiles each): A is one 128 x 32 box, B five 32 x 32 boxes (2048 bytes apart); only B is
// MN-major.
// CHECK-LABEL: func.func @gemm_nn_bn160(
// CHECK:       nv.tma_load %A[%m0, %{{[0-9]+}}], %[[S:[0-9]+]] {{.*}}{dst = 0 : i64, stage_bytes = 8192 : i64, bar = {{[0-9]+}} : i64, box = array<i64: 128, 32>, swizzle = 64 : i64}
// CHECK-NEXT:  nv.tma_load %B[%{{[0-9]+}}, %n0], %[[S]] {{.*}}{dst = 24576 : i64, stage_bytes = 10240 : i64, bar = {{[0-9]+}} : i64, box = array<i64: 32, 32>, swizzle = 64 : i64}
// CHECK-COUNT-4: nv.tma_load %B
// CHECK-NOT:   nv.tma_load
// CHECK:       nv.wgmma {{.*}}{n = 160 : i64, k = 32 : i64, dtype = bf16, a = array<i64: 0, 8192, 128, 4096>, b = array<i64: 24576, 10240, 160>, swizzle = 64 : i64, b_major = "mn"}
func.func @gemm_nn_bn160(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c160 = arith.constant 160 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c160 : index
  %init = tile.constant 0.0 : !tile.tile<128x160xf32>
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %init) -> (!tile.tile<128x160xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x32xbf16>
    %b = tile.load %B[%k, %n0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<32x160xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x32xbf16>, !tile.tile<32x160xbf16>, !tile.tile<128x160xf32>
    scf.yield %d : !tile.tile<128x160xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x160xf32> -> memref<?x?xf32>
  func.return
}
