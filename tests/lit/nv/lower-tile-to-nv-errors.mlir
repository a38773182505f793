// (Codes ending in UNSUPPORTED are matched as X_{{UNSUPPORTED}}: lit reads that word and a colon as a directive.)
// lower-tile-to-nv refuses what it cannot lower with a coded error at the op; arch is mandatory and checked.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics -p 'lower-tile-to-nv{arch=sm_80}'
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_80}' 2>&1 | FileCheck %s
// CHECK: lower-tile-to-nv-errors.mlir:{{[0-9]+}}:3: error: NV_ARCH_{{UNSUPPORTED}}: tile.fragment_zero makes a wgmma fragment ({{.*}}), but wgmma needs sm_90a exactly and the target is sm_80
// CHECK: error: NV_LOWER_{{UNSUPPORTED}}: lower-tile-to-nv cannot lower tile.mma: bf16 inputs run on tensor-core fragments; run tile-to-fragments{arch=...} first (only an all-f32 mma lowers here, to CUDA-core fma loops)
// CHECK: error: NV_LOWER_{{UNSUPPORTED}}: lower-tile-to-nv cannot lower tile.fragment_pack: fragment {{.*}} has layout "col"
// CHECK: error: NV_THREADS_MISMATCH: tile.fragment_pack runs on 2 warps but tile.fragment_pack at {{.*}}.mlir:{{[0-9]+}}:3 on 4 warps; a kernel has one thread count
// CHECK: error: NV_SMEM_OVERFLOW: the kernel needs 266240 bytes of shared memory (266240 for tiles, 0 scratch); sm_80 has 166912
// On sm_90 (without "a") wgmma is rejected as well; on sm_90a it is a known gap, not an arch error.
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_90}' 2>&1 | FileCheck %s --check-prefix=SM90
// SM90: error: NV_ARCH_{{UNSUPPORTED}}: tile.fragment_zero makes a wgmma fragment ({{.*}}), but wgmma needs sm_90a exactly and the target is sm_90
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_90a}' 2>&1 | FileCheck %s --check-prefix=SM90A
// SM90A: error: NV_LOWER_{{UNSUPPORTED}}: tile.fragment_zero makes a wgmma fragment ({{.*}}); only family mma_sync lowers to nv ops today
// Controls: the arch has no default, and unknown or bad options are errors (lessons 3 and 4).
// RUN: not tessera-opt %s -p 'lower-tile-to-nv' 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: OPT_OPTION_MISSING: pass 'lower-tile-to-nv' requires option 'arch'
// RUN: not tessera-opt %s -p 'lower-tile-to-nv{arch=sm_80 bogus=1}' 2>&1 | FileCheck %s --check-prefix=BOGUS
// BOGUS: error: OPT_OPTION_UNKNOWN: pass 'lower-tile-to-nv' has no option 'bogus'
// RUN: not tessera-opt %s -p 'lower-tile-to-nv{arch=sm_70}' 2>&1 | FileCheck %s --check-prefix=OLD
// OLD: error: OPT_OPTION_INVALID: pass 'lower-tile-to-nv' option 'arch'
// RUN: not tessera-opt %s -p 'tessera-lower-to-nv{arch=sm_80 bogus=1}' 2>&1 | FileCheck %s --check-prefix=NAMED
// NAMED: error: OPT_OPTION_UNKNOWN: pipeline 'tessera-lower-to-nv' has no option 'bogus'

func.func @wgmma_on_sm80() {
  // expected-error@+1 {{tile.fragment_zero makes a wgmma fragment}}
  %z = tile.fragment_zero : !tile.fragment<m=64, n=128, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="wgmma">
  func.return
}

// -----

func.func @tile_mma(%a: !tile.tile<16x16xbf16>, %b: !tile.tile<16x8xbf16>, %c: !tile.tile<16x8xf32>) {
  // expected-error@+1 {{run tile-to-fragments}}
  %d = tile.mma %a, %b, %c : !tile.tile<16x16xbf16>, !tile.tile<16x8xbf16>, !tile.tile<16x8xf32>
  func.return
}

// -----

func.func @col_layout() {
  %c0 = arith.constant 0 : index
  %s = tile.alloc : !tile.tile<128x32xbf16, smem>
  // expected-error@+1 {{has layout "col"}}
  %f = tile.fragment_pack %s[%c0, %c0] warps [2, 2] : !tile.tile<128x32xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="b", layout="col", family="mma_sync">
  func.return
}

// -----

func.func @two_thread_counts() {
  %c0 = arith.constant 0 : index
  %s = tile.alloc : !tile.tile<128x32xbf16, smem>
  %f = tile.fragment_pack %s[%c0, %c0] warps [2, 2] : !tile.tile<128x32xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
  // expected-error@+1 {{NV_THREADS_MISMATCH}}
  %g = tile.fragment_pack %s[%c0, %c0] warps [2, 1] : !tile.tile<128x32xbf16, smem> -> !tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="a", layout="row", family="mma_sync">
  func.return
}

// -----

// expected-error@+1 {{NV_SMEM_OVERFLOW}}
func.func @too_much_shared_memory() {
  %a = tile.alloc : !tile.tile<256x256xf32, smem>
  func.return
}
