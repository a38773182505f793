// tile-to-fragments refuses, with a coded error at the tile.mma, what no tensor-core fragment can hold.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics --pass-pipeline='tile-to-fragments{arch=sm_80}'
// The messages, located at each tile.mma (lit reads any "UNSUPPORTED" followed by a colon as its own
// directive, hence the {{:}} in the patterns below).
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='tile-to-fragments{arch=sm_80}' 2>&1 | FileCheck %s --check-prefix=MSG
// MSG: tile-to-fragments-errors.mlir:{{[0-9]+}}:3: error: TILE_FRAGMENT_UNSUPPORTED{{:}} tile.mma with f16 inputs and a f16 accumulator has no mma_sync fragment
// MSG: tile-to-fragments-errors.mlir:{{[0-9]+}}:3: error: TILE_FRAGMENT_UNSUPPORTED{{:}} tile.mma 8x32 @ 32x64 on warps [1, 4] gives per-warp fragments m=8 n=16 k=32, which mma_sync (m16n8k16) cannot tile: m=8 is not a multiple of 16
// MSG: tile-to-fragments-errors.mlir:{{[0-9]+}}:3: error: TILE_FRAGMENT_UNSUPPORTED{{:}} tile.mma 64x8 @ 8x64 on warps [2, 2] gives per-warp fragments m=32 n=32 k=8, which mma_sync (m16n8k16) cannot tile: k=8 is not a multiple of 16
// MSG-NOT: error
//
// arch is mandatory and checked when the pipeline is parsed; unknown options are errors.
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='tile-to-fragments' 2>&1 | FileCheck %s --check-prefix=NOARCH
// NOARCH: <pass-pipeline>:1:1: error: OPT_OPTION_MISSING: pass 'tile-to-fragments' requires option 'arch'
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='tile-to-fragments{arch=sm_80 bogus=1}' 2>&1 | FileCheck %s --check-prefix=BOGUS
// BOGUS: error: OPT_OPTION_UNKNOWN: pass 'tile-to-fragments' has no option 'bogus'
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='tile-to-fragments{arch=sm_75}' 2>&1 | FileCheck %s --check-prefix=ARCH
// ARCH: error: OPT_OPTION_INVALID: pass 'tile-to-fragments' option 'arch': 'sm_75' is not a supported arch
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='tile-to-fragments{arch=sm_80 warps=2}' 2>&1 | FileCheck %s --check-prefix=WARPS
// WARPS: error: OPT_OPTION_INVALID: {{.*}}warps=2 must be two positive integers WM,WN
//
// wgmma needs 64-row warpgroup tiles; the same 32-row tile is fine for mma_sync (first RUN line).
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='tile-to-fragments{arch=sm_90a}' 2>&1 | FileCheck %s --check-prefix=WGMMA
// WGMMA: tile-to-fragments-errors.mlir:{{[0-9]+}}:3: error: TILE_FRAGMENT_UNSUPPORTED{{:}} tile.mma 32x32 @ 32x64 on warpgroups [1, 1] gives per-warpgroup fragments m=32 n=64 k=32, which wgmma (m64nNk16) cannot tile: m=32 is not a multiple of 64

// f32 inputs with an f32 accumulator stay tile-level for CUDA cores (tests/lit/nv/lower-tile-to-nv-f32.mlir);
// an f16 accumulator has no fragment and no CUDA-core path.
func.func @f16_accumulator(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf16>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] pad 0.0 : memref<?x?xf16> -> !tile.tile<64x32xf16>
  %b = tile.load %B[%c0, %c0] pad 0.0 : memref<?x?xf16> -> !tile.tile<32x64xf16>
  %z = tile.constant 0.0 : !tile.tile<64x64xf16>
  // expected-error@+1 {{TILE_FRAGMENT_UNSUPPORTED}}
  %d = tile.mma %a, %b, %z : !tile.tile<64x32xf16>, !tile.tile<32x64xf16>, !tile.tile<64x64xf16>
  tile.store %d, %C[%c0, %c0] : !tile.tile<64x64xf16> -> memref<?x?xf16>
  func.return
}

// -----

func.func @eight_rows(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<8x32xbf16>
  %b = tile.load %B[%c0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<32x64xbf16>
  %z = tile.constant 0.0 : !tile.tile<8x64xf32>
  // expected-error@+1 {{TILE_FRAGMENT_UNSUPPORTED}}
  %d = tile.mma %a, %b, %z : !tile.tile<8x32xbf16>, !tile.tile<32x64xbf16>, !tile.tile<8x64xf32>
  tile.store %d, %C[%c0, %c0] : !tile.tile<8x64xf32> -> memref<?x?xf32>
  func.return
}

// -----

func.func @short_k(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<64x8xbf16>
  %b = tile.load %B[%c0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<8x64xbf16>
  %z = tile.constant 0.0 : !tile.tile<64x64xf32>
  // expected-error@+1 {{TILE_FRAGMENT_UNSUPPORTED}}
  %d = tile.mma %a, %b, %z : !tile.tile<64x8xbf16>, !tile.tile<8x64xbf16>, !tile.tile<64x64xf32>
  tile.store %d, %C[%c0, %c0] : !tile.tile<64x64xf32> -> memref<?x?xf32>
  func.return
}

// -----

func.func @thirty_two_rows(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<32x32xbf16>
  %b = tile.load %B[%c0, %c0] pad 0.0 : memref<?x?xbf16> -> !tile.tile<32x64xbf16>
  %z = tile.constant 0.0 : !tile.tile<32x64xf32>
  %d = tile.mma %a, %b, %z : !tile.tile<32x32xbf16>, !tile.tile<32x64xbf16>, !tile.tile<32x64xf32>
  tile.store %d, %C[%c0, %c0] : !tile.tile<32x64xf32> -> memref<?x?xf32>
  func.return
}
