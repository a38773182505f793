// warp-specialize{arch=sm_90a}: a wgmma K-loop GEMM (B loaded as [N, K] and transposed, so wgmma reads it K-major)
// becomes a persistent, warp-specialised kernel: warpgroup 0 produces (TMA into a ring of `stages` shared slots,
// `full`/`empty` mbarriers), warpgroups 1..BM/64 consume (wgmma per K step) and run the epilogue from registers.
// store=registers keeps the epilogue's stores in registers here (the TMA store epilogue and 2-CTA clusters have
// their own fixture, warp-specialize-cluster-tma-store.mlir). This cooperative, register-store GEMM runs on the
// general loop body (ws_body), as attention does: A and B share one barrier pair (one tile.wait), and the
// wgmma that only accumulates keeps one group in flight across K steps.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 store=registers}' | FileCheck %s
// group_m is the height (in tiles) of the grouped raster order.
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 group_m=4 store=registers}' | FileCheck %s --check-prefix=GROUP
// The named pipeline runs the same passes (pipeline-smem and lower-tile-to-nv leave the result alone).
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=3 store=registers}' > %t.direct
// RUN: tessera-opt %s -p 'tessera-lower-to-nv{arch=sm_90a stages=3 store=registers}' > %t.named
// RUN: diff %t.direct %t.named
// On sm_90 tile-to-fragments makes mma_sync fragments and warp-specialize has nothing to do: the module is
// byte-identical with and without it (DESIGN lesson 6).
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90}' > %t.sm90
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90},warp-specialize{arch=sm_90 stages=3}' > %t.sm90.ws
// RUN: diff %t.sm90 %t.sm90.ws
// RUN: FileCheck %s --check-prefix=SM90 < %t.sm90.ws
// SM90:     family="mma_sync"
// SM90-NOT: wgmma
// SM90-NOT: nv.

// BM=128 BN=256 BK=64, 3 stages: A slots of 128x64 bf16 (16 KiB) at 0, B slots of 256x64 (32 KiB) at 49152, the
// `full` barriers at 147456 (one arrival: the producer's expect_tx) and the `empty` barriers at 147480 (one
// arrival per consumer warpgroup). 128 producer + 2 x 128 consumer threads.
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:  attributes {nv.num_threads = 384 : i64, nv.smem_bytes = 147504 : i64, nv.arch = "sm_90a"}
// CHECK-NEXT:  nv.mbarrier_init {base = 147456 : i64, count = 3 : i64, arrivals = 1 : i64}
// CHECK-NEXT:  nv.mbarrier_init {base = 147480 : i64, count = 3 : i64, arrivals = 2 : i64}
// CHECK-NEXT:  %[[TID:[0-9]+]] = nv.thread_id : index
// CHECK-NEXT:  %[[C128:[0-9]+]] = arith.constant 128 : index
// CHECK-NEXT:  %[[WG:[0-9]+]] = arith.divsi %[[TID]], %[[C128]] : index
// CHECK:       %[[IS_PRODUCER:[0-9]+]] = arith.cmpi eq, %[[WG]], %{{[0-9]+}} : index
// CHECK-NEXT:  scf.if %[[IS_PRODUCER]] {
// The producer warpgroup gives registers back; its thread 0 issues every copy.
// CHECK-NEXT:    nv.setmaxnreg {regs = 40 : i64, action = "dec"}
// CHECK:         %[[IS_T0:[0-9]+]] = arith.cmpi eq, %[[TID]], %{{[0-9]+}} : index
// CHECK-NEXT:    scf.if %[[IS_T0]] {
// Persistent loop over the logical grid, from blockIdx.x in steps of gridDim.x, carrying the K-step counter.
// CHECK-NEXT:      %[[GM:[0-9]+]] = nv.logical_grid {axis = 0 : i64} : index
// CHECK-NEXT:      %[[GN:[0-9]+]] = nv.logical_grid {axis = 1 : i64} : index
// CHECK-NEXT:      %[[TILES:[0-9]+]] = arith.muli %[[GM]], %[[GN]] : index
// A's boxes are read by no other tile when there is one column of tiles (N <= BN), B's when there is one row:
// then they are loaded with an L2 evict-first hint, decided at run time.
// CHECK-NEXT:      %[[ONE_A:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:      %[[ONCE_A:[0-9]+]] = arith.cmpi eq, %[[GN]], %[[ONE_A]] : index
// CHECK-NEXT:      %[[ONE_B:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:      %[[ONCE_B:[0-9]+]] = arith.cmpi eq, %[[GM]], %[[ONE_B]] : index
// CHECK-NEXT:      %[[BID:[0-9]+]] = nv.block_id {axis = 0 : i64} : index
// CHECK-NEXT:      %[[NCTA:[0-9]+]] = nv.grid_dim {axis = 0 : i64} : index
// CHECK-NEXT:      %[[ZERO:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:      %{{[0-9]+}} = scf.for %[[T:[0-9]+]] = %[[BID]] to %[[TILES]] step %[[NCTA]] iter_args(%[[IT:[0-9]+]] = %[[ZERO]]) -> (index) {
// Grouped order: 8 rows of tiles per group.
// CHECK:             %[[G8:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:        %[[WIDTH:[0-9]+]] = arith.muli %[[GN]], %[[G8]] : index
// CHECK:             %m0 = arith.muli %{{[0-9]+}}, %c128 : index
// CHECK-NEXT:        %n0 = arith.muli %{{[0-9]+}}, %c256 : index
// Per K step: slot = step % 3, phase = (step / 3) % 2; wait until the consumers freed the slot (the opposite
// parity: a fresh barrier counts its previous phase as done), expect A + B bytes, issue both boxes.
// CHECK:             %{{[0-9]+}} = scf.for %[[K:[0-9]+]] = %c0 to %K step %c64 iter_args(%[[STEP:[0-9]+]] = %[[IT]]) -> (index) {
// CHECK-NEXT:          %[[S3:[0-9]+]] = arith.constant 3 : index
// CHECK-NEXT:          %[[SLOT:[0-9]+]] = arith.remsi %[[STEP]], %[[S3]] : index
// CHECK-NEXT:          %[[S3B:[0-9]+]] = arith.constant 3 : index
// CHECK-NEXT:          %[[ROUND:[0-9]+]] = arith.divsi %[[STEP]], %[[S3B]] : index
// CHECK-NEXT:          %[[TWO:[0-9]+]] = arith.constant 2 : index
// CHECK-NEXT:          %[[PHASE:[0-9]+]] = arith.remsi %[[ROUND]], %[[TWO]] : index
// CHECK-NEXT:          %[[ONE:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:          %[[FREE:[0-9]+]] = arith.subi %[[ONE]], %[[PHASE]] : index
// CHECK-NEXT:          nv.mbarrier_wait %[[SLOT]], %[[FREE]] {base = 147480 : i64}
// CHECK-NEXT:          nv.mbarrier_expect_tx %[[SLOT]] {base = 147456 : i64, bytes = 49152 : i64}
// CHECK-NEXT:          nv.tma_load %A[%m0, %[[K]]], %[[SLOT]] evict_first %[[ONCE_A]] {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 147456 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
// CHECK-NEXT:          nv.tma_load %B[%n0, %[[K]]], %[[SLOT]] evict_first %[[ONCE_B]] {dst = 49152 : i64, stage_bytes = 32768 : i64, bar = 147456 : i64, box = array<i64: 256, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
// CHECK-NEXT:          %[[ONE2:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:          %[[NEXT:[0-9]+]] = arith.addi %[[STEP]], %[[ONE2]] : index
// CHECK-NEXT:          scf.yield %[[NEXT]] : index
// Consumers take registers; consumer c = warpgroup - 1 owns rows 64c..64c+63 of the tile.
// CHECK:       } else {
// CHECK-NEXT:    nv.setmaxnreg {regs = 232 : i64, action = "inc"}
// CHECK-NEXT:    %[[C1:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:    %[[CONSUMER:[0-9]+]] = arith.subi %[[WG]], %[[C1]] : index
// CHECK-NEXT:    nv.logical_grid {axis = 0 : i64} : index
// CHECK-NEXT:    nv.logical_grid {axis = 1 : i64} : index
// CHECK:         %{{[0-9]+}} = scf.for %{{[0-9]+}} = %{{[0-9]+}} to %{{[0-9]+}} step %{{[0-9]+}} iter_args(%[[CIT:[0-9]+]] = %{{[0-9]+}}) -> (index) {
// The accumulator is 128 f32 registers per thread (m64n256), zero at the start of every tile.
// CHECK:           %[[ROWS:[0-9]+]] = arith.muli %[[CONSUMER]], %{{[0-9]+}} : index
// CHECK-NEXT:      %[[ACC0:[0-9]+]] = nv.fill {value = 0.000000e+00 : f64} : vector<128xf32>
// CHECK:           %[[STEPS:[0-9]+]], %[[ACC:[0-9]+]] = scf.for %{{[0-9]+}} = %c0_1 to %K_1 step %c64_1 iter_args(%[[CSTEP:[0-9]+]] = %[[CIT]], %[[CACC:[0-9]+]] = %[[ACC0]]) -> (index, vector<128xf32>) {
// CHECK:             %[[CSLOT:[0-9]+]] = arith.remsi %[[CSTEP]], %{{[0-9]+}} : index
// CHECK:             %[[CPHASE:[0-9]+]] = arith.remsi %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK-NEXT:        nv.mbarrier_wait %[[CSLOT]], %[[CPHASE]] {base = 147456 : i64}
// CHECK-NEXT:        %[[D:[0-9]+]] = nv.wgmma %[[CACC]], %[[CSLOT]], %[[CONSUMER]] {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
// One wgmma group stays in flight: once the previous step's group is done its slot goes back to the producer.
// CHECK-NEXT:        %[[W:[0-9]+]] = nv.wgmma_wait %[[D]] {pending = 1 : i64} : vector<128xf32> -> vector<128xf32>
// CHECK-NEXT:        %[[STARTED:[0-9]+]] = arith.cmpi ne, %[[CSTEP]], %[[CIT]] : index
// CHECK-NEXT:        scf.if %[[STARTED]] {
// CHECK:               %[[PREV:[0-9]+]] = arith.subi %[[CSTEP]], %{{[0-9]+}} : index
// CHECK:               %[[PSLOT:[0-9]+]] = arith.remsi %[[PREV]], %{{[0-9]+}} : index
// CHECK-NEXT:          nv.mbarrier_arrive %[[PSLOT]] {base = 147480 : i64, per = "warpgroup"}
// CHECK:             scf.yield %{{[0-9]+}}, %[[W]] : index, vector<128xf32>
// After the loop: drain, release the last slot, then the epilogue on the accumulator registers.
// CHECK:           %[[DONE:[0-9]+]] = nv.wgmma_wait %[[ACC]] {pending = 0 : i64} : vector<128xf32> -> vector<128xf32>
// CHECK-NEXT:      %[[RAN:[0-9]+]] = arith.cmpi ne, %[[STEPS]], %[[CIT]] : index
// CHECK-NEXT:      scf.if %[[RAN]] {
// CHECK:             nv.mbarrier_arrive %{{[0-9]+}} {base = 147480 : i64, per = "warpgroup"}
// CHECK:           %[[ALPHA:[0-9]+]] = nv.splat %alpha : f32 -> vector<128xf32>
// CHECK-NEXT:      %[[SCALED:[0-9]+]] = nv.map "mul" %[[DONE]], %[[ALPHA]] : vector<128xf32>
// CHECK-NEXT:      %[[BIAS:[0-9]+]] = nv.wgacc_load %bias[%c0_1, %n0_1] {n = 256 : i64, broadcast_rows = true, pad = 0.000000e+00 : f64} : memref<1x?xf32> -> vector<128xf32>
// CHECK-NEXT:      %[[SUM:[0-9]+]] = nv.map "add" %[[SCALED]], %[[BIAS]] : vector<128xf32>
// CHECK-NEXT:      %[[ROW:[0-9]+]] = arith.addi %m0_1, %[[ROWS]] : index
// CHECK-NEXT:      nv.wgacc_store %[[SUM]], %C[%[[ROW]], %n0_1] {n = 256 : i64} : vector<128xf32>, memref<?x?xf32>
// CHECK-NEXT:      scf.yield %[[STEPS]] : index
// CHECK-NOT:   tile.
// CHECK:       func.return
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %bias: memref<1x?xf32>, %alpha: f32) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %K = memref.dim %A, %c1 : memref<?x?xbf16>
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
  %al = tile.splat %alpha : f32 -> !tile.tile<128x256xf32>
  %scaled = tile.mul %acc, %al : !tile.tile<128x256xf32>
  %b1 = tile.load %bias[%c0, %n0] pad 0.0 : memref<1x?xf32> -> !tile.tile<1x256xf32>
  %bb = tile.broadcast %b1 : !tile.tile<1x256xf32> -> !tile.tile<128x256xf32>
  %x = tile.add %scaled, %bb : !tile.tile<128x256xf32>
  tile.store %x, %C[%m0, %n0] : !tile.tile<128x256xf32> -> memref<?x?xf32>
  func.return
}

// BM=64 (one consumer warpgroup: no register reallocation, 256 threads), BN=128, f16, BK=128: a K step is two
// 64-column TMA boxes per operand (a 128-byte swizzle row holds 64 f16), the second one 64 rows x 128 bytes
// further in the slot, at column k + 64; the wgmma reads all 128 columns.
// CHECK-LABEL: func.func @gemm_bm64(
// CHECK-SAME:  attributes {nv.num_threads = 256 : i64, nv.smem_bytes = 147504 : i64, nv.arch = "sm_90a"}
// CHECK-NEXT:  nv.mbarrier_init {base = 147456 : i64, count = 3 : i64, arrivals = 1 : i64}
// CHECK-NEXT:  nv.mbarrier_init {base = 147480 : i64, count = 3 : i64, arrivals = 1 : i64}
// CHECK-NOT:   nv.setmaxnreg
// CHECK:       nv.mbarrier_expect_tx %[[SLOT:[0-9]+]] {base = 147456 : i64, bytes = 49152 : i64}
// CHECK-NEXT:  nv.tma_load %A[%m0, %[[K:[0-9]+]]], %[[SLOT]] evict_first %{{[0-9]+}} {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 147456 : i64, box = array<i64: 64, 64>, swizzle = 128 : i64} : memref<?x?xf16>
// CHECK-NEXT:  %[[C64:[0-9]+]] = arith.constant 64 : index
// CHECK-NEXT:  %[[K64:[0-9]+]] = arith.addi %[[K]], %[[C64]] : index
// CHECK-NEXT:  nv.tma_load %A[%m0, %[[K64]]], %[[SLOT]] evict_first %{{[0-9]+}} {dst = 8192 : i64, stage_bytes = 16384 : i64, bar = 147456 : i64, box = array<i64: 64, 64>, swizzle = 128 : i64} : memref<?x?xf16>
// CHECK-NEXT:  nv.tma_load %B[%n0, %[[K]]], %[[SLOT]] evict_first %{{[0-9]+}} {dst = 49152 : i64, stage_bytes = 32768 : i64, bar = 147456 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xf16>
// CHECK:       nv.tma_load %B[%n0, %{{[0-9]+}}], %[[SLOT]] evict_first %{{[0-9]+}} {dst = 65536 : i64, stage_bytes = 32768 : i64, bar = 147456 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xf16>
// CHECK:       } else {
// CHECK-NOT:   nv.setmaxnreg
// CHECK:       nv.fill {value = 0.000000e+00 : f64} : vector<64xf32>
// CHECK:       nv.wgmma %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} {n = 128 : i64, k = 128 : i64, dtype = f16, a = array<i64: 0, 16384, 64, 8192>, b = array<i64: 49152, 32768, 128>, swizzle = 128 : i64} : vector<64xf32> -> vector<64xf32>
// CHECK:       %[[DONE:[0-9]+]] = nv.wgmma_wait %{{[0-9]+}} {pending = 0 : i64} : vector<64xf32> -> vector<64xf32>
// CHECK:       %[[Z:[0-9]+]] = nv.fill {value = 0.000000e+00 : f64} : vector<64xf32>
// CHECK-NEXT:  %[[R:[0-9]+]] = nv.map "max" %[[DONE]], %[[Z]] : vector<64xf32>
// CHECK-NEXT:  %[[H:[0-9]+]] = nv.convert %[[R]] : vector<64xf32> -> vector<64xf16>
// CHECK:       nv.wgacc_store %[[H]], %C[%{{[0-9]+}}, %n0_1] {n = 128 : i64} : vector<64xf16>, memref<?x?xf16>
// CHECK-NOT:   tile.
// CHECK:       func.return
func.func @gemm_bm64(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf16>, %K: index) {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %pm, %c64 : index
  %n0 = arith.muli %pn, %c128 : index
  %init = tile.constant 0.0 : !tile.tile<64x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%c = %init) -> (!tile.tile<64x128xf32>) {
    %a = tile.load %A[%m0, %k] pad 0.0 : memref<?x?xf16> -> !tile.tile<64x128xf16>
    %bt = tile.load %B[%n0, %k] pad 0.0 : memref<?x?xf16> -> !tile.tile<128x128xf16>
    %b = tile.transpose %bt : !tile.tile<128x128xf16> -> !tile.tile<128x128xf16>
    %d = tile.mma %a, %b, %c : !tile.tile<64x128xf16>, !tile.tile<128x128xf16>, !tile.tile<64x128xf32>
    scf.yield %d : !tile.tile<64x128xf32>
  }
  %zero = tile.constant 0.0 : !tile.tile<64x128xf32>
  %r = tile.max %acc, %zero : !tile.tile<64x128xf32>
  %h = tile.convert %r : !tile.tile<64x128xf32> -> !tile.tile<64x128xf16>
  tile.store %h, %C[%m0, %n0] : !tile.tile<64x128xf16> -> memref<?x?xf16>
  func.return
}

// GROUP:      func.func @gemm(
// GROUP:      %[[GN:[0-9]+]] = nv.logical_grid {axis = 1 : i64} : index
// GROUP:      %[[G4:[0-9]+]] = arith.constant 4 : index
// GROUP-NEXT: arith.muli %[[GN]], %[[G4]] : index
// GROUP-NOT:  arith.constant 8 : index
// GROUP:      func.func @gemm_bm64(
