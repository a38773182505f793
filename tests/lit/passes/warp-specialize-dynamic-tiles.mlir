// tiles=dynamic (ws_sched.py): after its first tile (its block index) a persistent CTA's producer thread takes
// the next one from the launch's counter (nv.tile_fetch) as it starts a tile and hands it to the consumers
// through a ring of 4 shared-memory words after the barriers (nv.smem_put; full barriers of 1 arrival, empty
// ones of every consumer thread); each consumer reads it (nv.smem_get) once it has finished its tile. Both roles
// loop with scf.while while the tile is below the count, carrying the tile, its ordinal and the ring step; with
// tile overlap the consumers also carry the next tile's QK^T accumulator. tiles=static keeps scf.for loops.
// RUN: tessera-opt %S/warp-specialize-tile-overlap.mlir -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a store=registers stages=2 tiles=dynamic}' | FileCheck %s
// RUN: tessera-opt %S/warp-specialize-tile-overlap.mlir -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a store=registers stages=2 tiles=dynamic overlap=0}' | FileCheck %s --check-prefix=PLAIN
// RUN: tessera-opt %S/warp-specialize-tile-overlap.mlir -p 'tile-to-fragments{arch=sm_90a},warp-specialize{arch=sm_90a store=registers stages=2}' | FileCheck %s --check-prefix=STATIC
// CHECK: func.func @two_mmas{{.*}}nv.smem_bytes = 65712
// CHECK: nv.mbarrier_init {base = 65648 : i64, count = 4 : i64, arrivals = 1 : i64}
// CHECK-NEXT: nv.mbarrier_init {base = 65680 : i64, count = 4 : i64, arrivals = 256 : i64}
// The producer:
// CHECK: scf.while ({{.*}}) : (index, index, index) -> (index, index, index) {
// CHECK: scf.condition
// CHECK: } do {
// CHECK-NEXT: ^bb0(%[[T:.*]]: index, %[[N:.*]]: index, %{{.*}}: index):
// CHECK-NEXT: %[[NEXT:.*]] = nv.tile_fetch
// CHECK: nv.mbarrier_wait {{.*}}base = 65680
// CHECK-NEXT: nv.smem_put %[[NEXT]], {{.*}}base = 65632
// CHECK-NEXT: nv.mbarrier_arrive {{.*}}base = 65648 : i64, per = "thread"
// CHECK: nv.tma_load
// CHECK: scf.yield %[[NEXT]],
// The consumers, with the next tile's accumulator:
// CHECK: scf.while ({{.*}}) : (index, index, index, vector<32xf32>) -> (index, index, index, vector<32xf32>) {
// CHECK: nv.mbarrier_wait {{.*}}base = 65648
// CHECK-NEXT: %[[GOT:.*]] = nv.smem_get {{.*}}base = 65632
// CHECK-NEXT: nv.mbarrier_arrive {{.*}}base = 65680 : i64, per = "thread"
// CHECK: scf.yield %[[GOT]],
// CHECK-NOT: nv.tile_fetch
// PLAIN: scf.while ({{.*}}) : (index, index, index) -> (index, index, index) {
// PLAIN: nv.tile_fetch
// PLAIN: scf.while ({{.*}}) : (index, index, index) -> (index, index, index) {
// PLAIN: nv.smem_get
// STATIC-NOT: scf.while
// STATIC-NOT: nv.tile_fetch
