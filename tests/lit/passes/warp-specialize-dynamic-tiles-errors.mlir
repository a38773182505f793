// tiles=dynamic hands single tiles to single CTAs: a 2-CTA cluster (its CTAs take neighbouring tiles together),
// stream-K (a fixed share of K steps per CTA) and a GEMM K-loop's pingpong (alternate tiles of a static walk) are
// coded errors naming the combination; an unknown tiles value is an option error.
// RUN: not tessera-opt %S/warp-specialize.mlir -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2 cluster=2 tiles=dynamic}' 2>&1 | FileCheck %s --check-prefix=CLUSTER
// RUN: not tessera-opt %S/warp-specialize.mlir -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=2 streamk=1 tiles=dynamic}' 2>&1 | FileCheck %s --check-prefix=STREAMK
// RUN: not tessera-opt %S/warp-specialize-pingpong.mlir -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a stages=5 schedule=pingpong tiles=dynamic}' 2>&1 | FileCheck %s --check-prefix=PINGPONG
// RUN: not tessera-opt %S/warp-specialize.mlir -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a tiles=greedy}' 2>&1 | FileCheck %s --check-prefix=OPTION
// CLUSTER: error: NV_WGMMA_{{UNSUPPORTED}}: {{.*}}tiles=dynamic with cluster=2
// CLUSTER: hint: use cluster=1
// STREAMK: error: NV_WGMMA_{{UNSUPPORTED}}: {{.*}}tiles=dynamic with streamk=1
// PINGPONG: error: NV_WGMMA_{{UNSUPPORTED}}: {{.*}}tiles=dynamic with schedule=pingpong on a loop that only accumulates
// OPTION: tiles=greedy is not one of static, dynamic
