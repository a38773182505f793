// warp-specialize refuses, naming what it cannot take and what would work, every wgmma kernel it cannot lower,
// and lowers nothing partially. Ops that tile-to-fragments creates (packs, copies, the fragment mma) carry the
// location of the op they stand for, so refusals point at the tile.mma or the operand's tile.load.
// (lit reads "UNSUPPORTED" and a colon as its own directive, hence NV_WGMMA_UNSUPPORTED{{:}} in CHECK lines.)
// RUN: tessera-opt %s --split-input-file --verify-diagnostics -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=4}'
// RUN: not tessera-opt %s --split-input-file -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=4}' 2>&1 | FileCheck %s
// CHECK: warp-specialize-errors.mlir:[[# @LINE + 56]]:5: error: NV_WGMMA_UNSUPPORTED{{:}} BN=40: an MN-major b tile is read in rows of 32, 64 or 128 bytes, so it must be a multiple of 16 elements wide
// CHECK-NEXT: hint: use a multiple of 64 for BN (128-byte rows), or store B K-major
// CHECK: error: NV_WGMMA_UNSUPPORTED{{:}} a store of a rows value: a consumer stores 128xN tiles and transposed 128x1 row vectors
// CHECK-NEXT: hint: transpose a [BM, 1] row vector
// CHECK: error: NV_WGMMA_UNSUPPORTED{{:}} tile.transpose of a acc value: a consumer transposes 128x1 row vectors only (to store them as a row)
// CHECK-NEXT: hint: store the tile at swapped offsets of a transposed view
// CHECK: error: NV_WGMMA_UNSUPPORTED{{:}} BM=320 on warpgroups [{{.*}}] of {{[0-9]+}} rows: this lowering runs one consumer warpgroup per 64 rows (BM = 64, 128 or 192), or two of 128 (BM = 256)
// CHECK: error: NV_WGMMA_UNSUPPORTED{{:}} the a load pads with 1.0; TMA fills out-of-bounds with 0
// CHECK-NOT: error:
//
// BM=320 on five warpgroups of 64 rows (warps=5,1): the consumer count is refused (the other kernels do not split
// over five warpgroups and fail in tile-to-fragments).
// RUN: not tessera-opt %s --split-input-file -p 'tile-to-fragments{arch=sm_90a warps=5,1},warp-specialize{arch=sm_90a}' 2>&1 | FileCheck %s --check-prefix=BM320
// BM320: warp-specialize-errors.mlir:[[# @LINE + 119]]:5: error: NV_WGMMA_UNSUPPORTED{{:}} BM=320 on warpgroups [{{.*}}] of {{[0-9]+}} rows: this lowering runs one consumer warpgroup per 64 rows (BM = 64, 128 or 192), or two of 128 (BM = 256)
//
// Shared memory: the last kernel (BM=128 BN=256 BK=64: 48 KiB a stage) lowers with 4 stages (the first RUN) but 8
// need 384 KiB, and an sm_90a CTA has 227 KiB.
// RUN: not tessera-opt %s --split-input-file -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=8}' 2>&1 | FileCheck %s --check-prefix=SMEM
// SMEM: warp-specialize-errors.mlir:[[# @LINE + 162]]:5: error: NV_SMEM_OVERFLOW: 8 stages of A 128x64 and B 256x64 need 393344 bytes of shared memory; sm_90a has 232448
// SMEM-NEXT: hint: use fewer stages or a smaller BK
//
// wgmma fragments (made for sm_90a) and warp-specialize for sm_90: the arch is checked before anything else.
// RUN: not tessera-opt %s --split-input-file -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90}' 2>&1 | FileCheck %s --check-prefix=ARCH
// ARCH: warp-specialize-errors.mlir:[[# @LINE + 157]]:5: error: NV_ARCH_UNSUPPORTED{{:}} tile.fragment_mma on wgmma fragments needs sm_90a exactly; the target is sm_90
// ARCH-NEXT: hint: run tile-to-fragments with the same arch (mma_sync on sm_80..sm_90)
//
// Options: arch is required, stages is 1..12, group_m 1..64, unknown options are errors.
// RUN: not tessera-opt %s --split-input-file -p 'warp-specialize{arch=sm_90a stages=0}' 2>&1 | FileCheck %s --check-prefix=STAGES
// STAGES: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: stages=0 must be an integer from 1 to 12
// RUN: not tessera-opt %s --split-input-file -p 'warp-specialize{arch=sm_90a stages=13}' 2>&1 | FileCheck %s --check-prefix=STAGES13
// STAGES13: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: stages=13 must be an integer from 1 to 12
// RUN: not tessera-opt %s --split-input-file -p 'warp-specialize{arch=sm_90a group_m=100}' 2>&1 | FileCheck %s --check-prefix=GROUP
// GROUP: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: group_m=100 must be an integer from 1 to 64
// RUN: not tessera-opt %s --split-input-file -p 'warp-specialize{arch=sm_91a}' 2>&1 | FileCheck %s --check-prefix=BADARCH
// BADARCH: error: OPT_OPTION_INVALID: {{.*}}sm_91a
// RUN: not tessera-opt %s --split-input-file -p 'warp-specialize{stages=2}' 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: OPT_OPTION_MISSING: pass 'warp-specialize' requires option 'arch'
// RUN: not tessera-opt %s --split-input-file -p 'warp-specialize{arch=sm_90a bogus=1}' 2>&1 | FileCheck %s --check-prefix=BOGUS
// BOGUS: error: OPT_OPTION_UNKNOWN: pass 'warp-specialize' has no option 'bogus'

// B loaded as [K, N] (no transpose) is MN-major: wgmma reads it in swizzled rows of 32, 64 or 128 bytes, and 40
// bf16 columns (80 bytes) are none of them.
func.func @b_not_transposed(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c40 = arith.constant 40 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c40 : index
  %init = tile.constant 0.0 : !tile.tile<128x40xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x40xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.load %B[%k, %n0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x40xbf16>
    // expected-error@+1 {{an MN-major b tile is read in rows of 32, 64 or 128 bytes, so it must be a multiple of 16 elements wide}}
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x40xbf16>, !tile.tile<128x40xf32>
    scf.yield %d : !tile.tile<128x40xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x40xf32> -> memref<?x?xf32>
  func.return
}

// -----

// A row reduction of the result leaves the accumulator's register layout.
func.func @reduce_epilogue(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %R: memref<?x?xf32>, %K: index) {
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
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %b = tile.transpose %bt : !tile.tile<256x64xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<128x256xf32>
    scf.yield %d : !tile.tile<128x256xf32>
  }
  %r = tile.reduce sum 1 %acc : !tile.tile<128x256xf32> -> !tile.tile<128x1xf32>
  // expected-error@+1 {{a store of a rows value: a consumer stores 128xN tiles and transposed 128x1 row vectors}}
  tile.store %r, %R[%m0, %pn] : !tile.tile<128x1xf32> -> memref<?x?xf32>
  func.return
}

// -----

// A transpose of the (square) result tile: same shape, but not an elementwise op.
func.func @transpose_epilogue(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
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
  // expected-error@+1 {{tile.transpose of a acc value: a consumer transposes 128x1 row vectors only}}
  %t = tile.transpose %acc : !tile.tile<128x128xf32> -> !tile.tile<128x128xf32>
  tile.store %t, %C[%n0, %m0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}

// -----

// BM=320 would be five consumer warpgroups: more than the 512 threads' register budget takes.
func.func @bm_320(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c320 = arith.constant 320 : index
  %m0 = arith.muli %pm, %c320 : index
  %n0 = arith.muli %pn, %c128 : index
  %init = tile.constant 0.0 : !tile.tile<320x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<320x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<320x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    // expected-error@+1 {{this lowering runs one consumer warpgroup per 64 rows (BM = 64, 128 or 192), or two of 128 (BM = 256)}}
    %d = tile.mma %a, %b, %c : !tile.tile<320x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<320x128xf32>
    scf.yield %d : !tile.tile<320x128xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<320x128xf32> -> memref<?x?xf32>
  func.return
}

// -----

// Out-of-bounds A reads padded with 1.0: TMA can only fill with zeros.
func.func @nonzero_pad(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c128 : index
  %n0 = arith.muli %pn, %c128 : index
  %init = tile.constant 0.0 : !tile.tile<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %init) -> (!tile.tile<128x128xf32>) {
    // expected-error@+1 {{the a load pads with 1.0; TMA fills out-of-bounds with 0}}
    %a = tile.load %A[%m0, %k] pad 1.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %b = tile.transpose %bt : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
    scf.yield %d : !tile.tile<128x128xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x128xf32> -> memref<?x?xf32>
  func.return
}

// -----

// A kernel warp-specialize takes (BM=128 BN=256 BK=64): fine with 4 stages, too big with 8, wrong for sm_90.
func.func @gemm_128x256x64(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
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
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<256x64xbf16>
    %b = tile.transpose %bt : !tile.tile<256x64xbf16> -> !tile.tile<64x256xbf16>
    %d = tile.mma %a, %b, %c : !tile.tile<128x64xbf16>, !tile.tile<64x256xbf16>, !tile.tile<128x256xf32>
    scf.yield %d : !tile.tile<128x256xf32>
  }
  tile.store %acc, %C[%m0, %n0] : !tile.tile<128x256xf32> -> memref<?x?xf32>
  func.return
}
