// The named pipeline tessera-lower-to-nv{arch stages} = tile-to-fragments, pipeline-smem, lower-tile-to-nv:
// Tile IR in, nv ops out; with stages=3 the K loop rotates three buffers per operand and keeps one barrier.
// RUN: tessera-opt %S/Inputs/gemm_tile.mlir -p 'tessera-lower-to-nv{arch=sm_80 stages=3}' | FileCheck %s
// It equals the three passes spelled out.
// RUN: tessera-opt %S/Inputs/gemm_tile.mlir -p 'tessera-lower-to-nv{arch=sm_90 stages=2}' > %t.named
// RUN: tessera-opt %S/Inputs/gemm_tile.mlir -p 'tile-to-fragments{arch=sm_90},pipeline-smem{stages=2},lower-tile-to-nv{arch=sm_90}' > %t.spelled
// RUN: diff %t.named %t.spelled
// Without stages it runs one stage.
// RUN: tessera-opt %S/Inputs/gemm_tile.mlir -p 'tessera-lower-to-nv{arch=sm_86}' | FileCheck %s --check-prefix=ONE
// ONE-COUNT-2: nv.alloc_shared {offset = {{[0-9]+}} : i64} : !nv.smem<{{32x128|128x32}}xbf16
// ONE-NOT: nv.alloc_shared {offset = {{[0-9]+}} : i64} : !nv.smem<{{32x128|128x32}}xbf16

// CHECK-COUNT-6: = nv.alloc_shared {offset = {{[0-9]+}} : i64} : !nv.smem<{{32x128|128x32}}xbf16
// CHECK:      scf.for %k = %c0 to %K step %c32 iter_args(%a = %acc_init,
// CHECK-SAME: -> (vector<128xf32>, !nv.smem<128x32xbf16, 40>, !nv.smem<128x32xbf16, 40>, !nv.smem<128x32xbf16, 40>, !nv.smem<32x128xbf16, 136>, !nv.smem<32x128xbf16, 136>, !nv.smem<32x128xbf16, 136>, !nv.async_group, !nv.async_group, !nv.async_group, !nv.async_group)
// CHECK-NEXT:   nv.cp_async_wait %ta_s0, %tb_s0
// CHECK:        nv.barrier
// CHECK-NOT:    nv.barrier
// CHECK:        nv.mma_sync %frag_a, %frag_b, %a
// CHECK-NEXT:   scf.yield
// CHECK-NOT:  tile.
