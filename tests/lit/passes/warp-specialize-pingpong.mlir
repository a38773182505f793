// warp-specialize{schedule=pingpong}: each consumer warpgroup owns whole 128 x BN tiles (two 64-row wgmma blocks,
// one accumulator each) and the two alternate over the CTA's tiles, so one's epilogue overlaps the other's main
// loop. A `turn` barrier pair orders their main loops: a consumer waits on ring slots by phase parity, so it may
// only start once its partner's tile has used the ring (else a slot two phases behind would look complete).
// RUN: tessera-opt %s -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=5 schedule=pingpong store=registers}' | FileCheck %s
// The named pipeline forwards schedule= to warp-specialize.
// RUN: tessera-opt %s -p 'tessera-lower-to-nv{arch=sm_90a stages=5 schedule=pingpong store=registers}' | FileCheck %s
// An unknown schedule is an option error.
// RUN: not tessera-opt %s -p 'warp-specialize{arch=sm_90a schedule=zigzag}' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: OPT_OPTION_INVALID: {{.*}}warp-specialize: schedule=zigzag is not one of cooperative, pingpong

// Slots: 5 x (16 KiB of A + 16 KiB of B), then full (5), empty (5: one reader per slot) and turn (2) barriers.
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME: nv.num_threads = 384 : i64, nv.smem_bytes = 163936 : i64, nv.arch = "sm_90a"
// CHECK: nv.mbarrier_init {base = 163840 : i64, count = 5 : i64, arrivals = 1 : i64}
// CHECK-NEXT: nv.mbarrier_init {base = 163880 : i64, count = 5 : i64, arrivals = 1 : i64}
// CHECK-NEXT: nv.mbarrier_init {base = 163920 : i64, count = 2 : i64, arrivals = 1 : i64}
// The producer is unchanged: every tile of the CTA, in order.
// CHECK: nv.setmaxnreg {regs = 40 : i64, action = "dec"}
// CHECK: nv.tma_load %A
// CHECK: nv.tma_load %B
// Consumers: start at blockIdx + c * gridDim, step 2 * gridDim; wait for their turn, then two wgmmas per K step.
// CHECK: nv.setmaxnreg {regs = 232 : i64, action = "inc"}
// CHECK: scf.for
// CHECK: nv.mbarrier_wait %{{.*}}, %{{.*}} {base = 163920 : i64}
// CHECK: scf.for {{.*}} -> (index, vector<64xf32>, vector<64xf32>)
// CHECK: nv.mbarrier_wait %{{.*}}, %{{.*}} {base = 163840 : i64}
// CHECK: nv.wgmma %
// CHECK-NEXT: nv.wgmma %
// CHECK-NEXT: nv.wgmma_wait %{{.*}} {pending = 2 : i64}
// CHECK-NEXT: nv.wgmma_wait %{{.*}} {pending = 2 : i64}
// CHECK: nv.wgmma_wait %{{.*}} {pending = 0 : i64}
// CHECK-NEXT: nv.wgmma_wait %{{.*}} {pending = 0 : i64}
// Hand the ring to the partner, then the epilogue of both row blocks.
// CHECK: nv.mbarrier_arrive %{{.*}} {base = 163920 : i64, per = "warpgroup"}
// CHECK: nv.wgacc_store
// CHECK: nv.wgacc_store
// The counter skips the partner's tile: its trip count, or 0 past the last tile.
// CHECK: arith.select
builtin.module {
  func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %alpha: f32) {
    %0 = tile.program_id 0
    %1 = arith.constant 128 : index
    %2 = tile.program_id 1
    %3 = arith.constant 0 : index
    %4 = arith.constant 1 : index
    %5 = memref.dim %A, %4 : memref<?x?xbf16>
    %6 = arith.constant 64 : index
    %7 = arith.muli %0, %1 : index
    %8 = arith.muli %2, %1 : index
    %9 = tile.constant 0.0 : !tile.tile<128x128xf32>
    %acc = scf.for %k = %3 to %5 step %6 iter_args(%acc_1 = %9) -> (!tile.tile<128x128xf32>) {
      %10 = tile.load %A[%7, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
      %11 = tile.load %B[%8, %k] pad 0.0 : memref<?x?xbf16> -> !tile.tile<128x64xbf16>
      %12 = tile.transpose %11 : !tile.tile<128x64xbf16> -> !tile.tile<64x128xbf16>
      %13 = tile.mma %10, %12, %acc_1 : !tile.tile<128x64xbf16>, !tile.tile<64x128xbf16>, !tile.tile<128x128xf32>
      scf.yield %13 : !tile.tile<128x128xf32>
    }
    %14 = tile.splat %alpha : f32 -> !tile.tile<128x128xf32>
    %15 = tile.mul %acc, %14 : !tile.tile<128x128xf32>
    %16 = tile.convert %15 : !tile.tile<128x128xf32> -> !tile.tile<128x128xbf16>
    tile.store %16, %C[%7, %8] : !tile.tile<128x128xbf16> -> memref<?x?xbf16>
    func.return
  }
}

