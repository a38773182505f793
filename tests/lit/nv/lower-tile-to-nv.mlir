// lower-tile-to-nv on hand-written Fragment IR (tests/lit/nv/Inputs/gemm_epilogue.mlir): every tile op becomes
// nv ops on per-thread registers, the accumulator stays one loop-carried vector, and redundant barriers go.
// RUN: tessera-opt %S/Inputs/gemm_epilogue.mlir -p 'lower-tile-to-nv{arch=sm_80}' | FileCheck %s
// The output parses back and prints identically, and a second run has nothing to do (byte-identical).
// RUN: tessera-opt %S/Inputs/gemm_epilogue.mlir -p 'lower-tile-to-nv{arch=sm_80}' > %t.nv
// RUN: tessera-opt %t.nv > %t.again
// RUN: diff %t.nv %t.again
// RUN: tessera-opt %t.nv -p 'lower-tile-to-nv{arch=sm_80}' > %t.twice
// RUN: diff %t.nv %t.twice
// Cross-thread ops of the logical kernel go through the scratch buffer between two barriers.
// RUN: tessera-opt %S/Inputs/logical_ops.mlir -p 'lower-tile-to-nv{arch=sm_80}' | FileCheck %s --check-prefix=XT
// XT:      nv.store_shared %e, %scratch {shape = array<i64: 64, 32>, threads = 128 : i64}
// XT-NEXT: nv.barrier
// XT-NEXT: %r = nv.reduce_shared %scratch {shape = array<i64: 64, 1>, threads = 128 : i64, kind = "max", axis = 1 : i64}
// XT:      nv.barrier
// XT-NEXT: nv.store_shared %r, %scratch_1
// XT-NEXT: nv.barrier
// XT-NEXT: %b = nv.load_shared %scratch_1 {shape = array<i64: 64, 32>, threads = 128 : i64, strides = array<i64: 4, 0>}
// XT:      %tr = nv.load_shared %scratch_2 {shape = array<i64: 32, 64>, threads = 128 : i64, strides = array<i64: 1, 36>}
// The same kernel for sm_90 differs only in the recorded arch.
// RUN: tessera-opt %S/Inputs/gemm_epilogue.mlir -p 'lower-tile-to-nv{arch=sm_90}' | FileCheck %s --check-prefix=SM90
// SM90: nv.arch = "sm_90"

// CHECK-LABEL: func.func @gemm_epilogue(
// CHECK-SAME:  attributes {nv.num_threads = 128 : i64, nv.smem_bytes = [[SMEM:[0-9]+]] : i64, nv.arch = "sm_80"}
// CHECK:       %pm = nv.block_id {axis = 0 : i64} : index
// CHECK:       %sa = nv.alloc_shared {offset = 0 : i64} : !nv.smem<128x32xbf16, 40>
// CHECK-NEXT:  %sb = nv.alloc_shared {offset = 10240 : i64} : !nv.smem<32x128xbf16, 136>
// The initial accumulator is C, read in the blocked layout and re-laid out through the scratch buffer.
// CHECK-NEXT:  %c = nv.load_global %C[%m0, %n0] {shape = array<i64: 128, 128>, threads = 128 : i64, pad = 0.000000e+00 : f64} : memref<?x?xf32> -> vector<128xf32>
// CHECK-NEXT:  %scratch = nv.alloc_shared {offset = 18944 : i64} : !nv.smem<128x128xf32, 132>
// CHECK-NEXT:  nv.store_shared %c, %scratch
// CHECK-NEXT:  nv.barrier
// CHECK-NEXT:  %init = nv.ldfrag_shared %scratch[%c0, %c0] {family = "mma_sync", role = "acc", mnk = array<i64: 64, 64, 32>, dtype = bf16, warps = array<i64: 2, 2>} : !nv.smem<128x128xf32, 132> -> vector<128xf32>
// CHECK-NEXT:  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%a = %init) -> (vector<128xf32>) {
// CHECK-NEXT:    nv.barrier
// CHECK-NEXT:    %ta = nv.cp_async_tile %A[%m0, %k], %sa {pad = 0.000000e+00 : f64} : memref<?x?xbf16>, !nv.smem<128x32xbf16, 40> -> !nv.async_group
// CHECK-NEXT:    %tb = nv.cp_async_tile %B[%k, %n0], %sb {pad = 0.000000e+00 : f64} : memref<?x?xbf16>, !nv.smem<32x128xbf16, 136> -> !nv.async_group
// CHECK-NEXT:    nv.cp_async_wait %ta, %tb : !nv.async_group, !nv.async_group
// CHECK-NEXT:    nv.barrier
// CHECK-NEXT:    %fa = nv.ldfrag_shared %sa[%c0, %c0] {{{.*}}role = "a"{{.*}}} : !nv.smem<128x32xbf16, 40> -> vector<64xbf16>
// CHECK-NEXT:    %fb = nv.ldfrag_shared %sb[%c0, %c0] {{{.*}}role = "b"{{.*}}} : !nv.smem<32x128xbf16, 136> -> vector<64xbf16>
// The mma reads the loop-carried accumulator %a, never a fresh zero (DESIGN lesson 1).
// CHECK-NEXT:    %d = nv.mma_sync %fa, %fb, %a {mnk = array<i64: 64, 64, 32>, dtype = bf16} : vector<64xbf16>, vector<64xbf16>, vector<128xf32> -> vector<128xf32>
// CHECK-NEXT:    scf.yield %d : vector<128xf32>
// CHECK-NEXT:  }
// CHECK:       nv.stfrag_shared %acc, %scratch_1[%{{.*}}, %{{.*}}] {{{.*}}role = "acc"{{.*}}}
// CHECK-NEXT:  nv.barrier
// CHECK-NEXT:  %t = nv.load_shared %scratch_1 {shape = array<i64: 128, 128>, threads = 128 : i64, strides = array<i64: 132, 1>}
// CHECK-NEXT:  %al = nv.splat %alpha : f32 -> vector<128xf32>
// CHECK-NEXT:  %scaled = nv.map "mul" %t, %al : vector<128xf32>
// The bias row broadcast stays in registers: thread t holds column t of the row, and every slot reads slot 0.
// CHECK-NEXT:  %b1 = nv.load_global %bias[%c0, %n0] {shape = array<i64: 1, 128>, threads = 128 : i64, pad = 0.000000e+00 : f64} : memref<1x?xf32> -> vector<1xf32>
// CHECK-NEXT:  %b = nv.slots %b1 {scale = 0 : i64, offset = 0 : i64} : vector<1xf32> -> vector<128xf32>
// CHECK-NEXT:  %x = nv.map "add" %scaled, %b : vector<128xf32>
// CHECK-NEXT:  %zero = nv.fill {value = 0.000000e+00 : f64} : vector<128xf32>
// CHECK-NEXT:  %y = nv.map "max" %x, %zero : vector<128xf32>
// CHECK-NEXT:  nv.store_global %y, %D[%m0, %n0] {shape = array<i64: 128, 128>, threads = 128 : i64}
// CHECK-NOT:   tile.
