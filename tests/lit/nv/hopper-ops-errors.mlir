// Hopper nv op verifiers: each structural rule fails with NV_OP_INVALID naming the op, the value and the rule.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: hopper-ops-errors.mlir:[[# @LINE + 36]]:3: error: NV_OP_INVALID: nv.setmaxnreg: regs=44 must be a multiple of 8 in [24, 256]
// CHECK: error: NV_OP_INVALID: nv.tma_load: box [512, 64] must be two sizes in [1, 256]
// CHECK: error: NV_OP_INVALID: nv.wgmma: n=12 must be a multiple of 8 in [8, 256]
//
// The same ops are checked against the target arch (their MIN_ARCH, DESIGN lesson 3) when lower-tile-to-nv runs
// over them: wgmma, wgmma_wait and setmaxnreg need sm_90a exactly, mbarriers and TMA sm_90 or newer. The last
// four cases verify on their own (the first RUN expects no error there) and fail only for a target that lacks
// their instructions; the verifier cases before them fail as above, before the pass runs.
// (lit reads "UNSUPPORTED" and a colon as its own directive, hence NV_ARCH_UNSUPPORTED{{:}}.)
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_90}' 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_80}' 2>&1 | FileCheck %s --check-prefix=SM80
// On sm_90a all of them lower (nv.arch is recorded); only the kernel lowered for sm_90 before is refused.
// RUN: not tessera-opt %s --split-input-file -p 'lower-tile-to-nv{arch=sm_90a}' 2>%t.err | FileCheck %s --check-prefix=SM90A-OUT
// RUN: FileCheck %s --check-prefix=SM90A < %t.err
// SM90A-OUT: func.func @wgmma_needs_sm_90a(%i: index) attributes {{{.*}}nv.arch = "sm_90a"}
// SM90A-OUT: nv.wgmma %z
// SM90A-OUT: func.func @setmaxnreg_needs_sm_90a() attributes {{{.*}}nv.arch = "sm_90a"}
// SM90A-OUT: func.func @tma_needs_sm_90(%A: memref<?x?xbf16>, %i: index) attributes {{{.*}}nv.arch = "sm_90a"}
// SM90A-OUT: nv.tma_load %A
// SM90A-NOT: error: NV_ARCH_UNSUPPORTED{{:}} nv.
// SM90A: error: NV_ARCH_UNSUPPORTED{{:}} kernel @lowered_for_sm_90 was lowered for sm_90, not sm_90a
// SM90A-NOT: error: NV_ARCH_UNSUPPORTED{{:}} nv.

// -----

func.func @logical_grid_axis() {
  // expected-error@+1 {{NV_OP_INVALID: nv.logical_grid: axis 3 is not 0, 1 or 2}}
  %g = nv.logical_grid {axis = 3 : i64} : index
  func.return
}

// -----

func.func @setmaxnreg_regs() {
  // setmaxnreg moves registers in units of 8 per thread.
  // expected-error@+1 {{NV_OP_INVALID: nv.setmaxnreg: regs=44 must be a multiple of 8 in [24, 256]}}
  nv.setmaxnreg {regs = 44 : i64, action = "dec"}
  func.return
}

// -----

func.func @setmaxnreg_range() {
  // expected-error@+1 {{nv.setmaxnreg: regs=264 must be a multiple of 8 in [24, 256]}}
  nv.setmaxnreg {regs = 264 : i64, action = "inc"}
  func.return
}

// -----

func.func @setmaxnreg_action() {
  // expected-error@+1 {{NV_OP_INVALID: nv.setmaxnreg: action 'keep' is not inc or dec}}
  nv.setmaxnreg {regs = 40 : i64, action = "keep"}
  func.return
}

// -----

func.func @mbarrier_init_count() {
  // expected-error@+1 {{NV_OP_INVALID: nv.mbarrier_init: count=0 must be in [1, 64] and arrivals=1 in [1, 1024]}}
  nv.mbarrier_init {base = 0 : i64, count = 0 : i64, arrivals = 1 : i64}
  func.return
}

// -----

func.func @mbarrier_init_arrivals() {
  // expected-error@+1 {{nv.mbarrier_init: count=4 must be in [1, 64] and arrivals=0 in [1, 1024]}}
  nv.mbarrier_init {base = 0 : i64, count = 4 : i64, arrivals = 0 : i64}
  func.return
}

// -----

func.func @mbarrier_base_alignment() {
  // An mbarrier is an 8-byte object.
  // expected-error@+1 {{NV_OP_INVALID: nv.mbarrier_init: barrier base 12 must be a multiple of 8 in [0, 232448)}}
  nv.mbarrier_init {base = 12 : i64, count = 4 : i64, arrivals = 1 : i64}
  func.return
}

// -----

func.func @mbarrier_wait_past_smem(%s: index, %p: index) {
  // Past the 227 KiB of shared memory an sm_90 CTA can have.
  // expected-error@+1 {{NV_OP_INVALID: nv.mbarrier_wait: barrier base 232448 must be a multiple of 8 in [0, 232448)}}
  nv.mbarrier_wait %s, %p {base = 232448 : i64}
  func.return
}

// -----

func.func @mbarrier_arrive_per(%s: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.mbarrier_arrive: per='warp' is not warpgroup or thread}}
  nv.mbarrier_arrive %s {base = 0 : i64, per = "warp"}
  func.return
}

// -----

func.func @mbarrier_expect_tx_bytes(%s: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.mbarrier_expect_tx: bytes=0 must be in (0, 2**20)}}
  nv.mbarrier_expect_tx %s {base = 0 : i64, bytes = 0 : i64}
  func.return
}

// -----

func.func @tma_box_too_big(%A: memref<?x?xbf16>, %i: index) {
  // A TMA box dimension is at most 256 elements.
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: box [512, 64] must be two sizes in [1, 256]}}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 131072 : i64, bar = 200000 : i64, box = array<i64: 512, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @tma_box_rank(%A: memref<?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: box [64, 64, 1] must be two sizes in [1, 256]}}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 8192 : i64, bar = 65536 : i64, box = array<i64: 64, 64, 1>, swizzle = 128 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @tma_swizzle_48(%A: memref<?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: swizzle=48 is not one of (0, 32, 64, 128)}}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 4096 : i64, bar = 65536 : i64, box = array<i64: 64, 16>, swizzle = 48 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @tma_row_wider_than_swizzle(%A: memref<?x?xbf16>, %i: index) {
  // 128 bf16 are 256 bytes: a 128-byte swizzle atom holds 64 of them (load K in 64-column boxes).
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: a 128-element box row is wider than the 128-byte swizzle}}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 32768 : i64, bar = 65536 : i64, box = array<i64: 128, 128>, swizzle = 128 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @tma_row_f32_wider_than_swizzle(%X: memref<?x?xf32>, %i: index) {
  // 16 f32 are 64 bytes: wider than a 32-byte swizzle although 16 bf16 would fit.
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: a 16-element box row is wider than the 32-byte swizzle}}
  nv.tma_load %X[%i, %i], %i {dst = 0 : i64, stage_bytes = 4096 : i64, bar = 65536 : i64, box = array<i64: 64, 16>, swizzle = 32 : i64} : memref<?x?xf32>
  func.return
}

// -----

func.func @tma_row_16_bytes(%A: memref<?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: a box row of 4 elements is not a multiple of 16 bytes}}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 512 : i64, bar = 65536 : i64, box = array<i64: 64, 4>, swizzle = 0 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @tma_rank_3_without_outer(%A: memref<?x?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: source memref<?x?x?xbf16> has rank 3: it is read at 3 coordinates [outer..., row, col] (1 before row and col), got 2}}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?x?xbf16>
  func.return
}

// -----

func.func @tma_elem(%A: memref<?x?xi8>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: source memref<?x?xi8> must be a 2-D bf16, f16 or f32 memref}}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 8192 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xi8>
  func.return
}

// -----

func.func @tma_dst_alignment(%A: memref<?x?xbf16>, %i: index) {
  // The 128-byte swizzle repeats every 1024 bytes: a swizzled destination starts on that period.
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: dst 512 must be a multiple of 1024 in [0, 232448)}}
  nv.tma_load %A[%i, %i], %i {dst = 512 : i64, stage_bytes = 16384 : i64, bar = 65536 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @tma_stage_alignment(%A: memref<?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: stage_bytes 1000 must be a multiple of 128 in [0, 232448)}}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 1000 : i64, bar = 65536 : i64, box = array<i64: 8, 32>, swizzle = 64 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @tma_bar_alignment(%A: memref<?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.tma_load: bar 65540 must be a multiple of 8 in [0, 232448)}}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 65540 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  func.return
}

// -----

func.func @wgmma_n(%acc: vector<6xf32>, %i: index) {
  // wgmma's N is a multiple of 8 from 8 to 256.
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: n=12 must be a multiple of 8 in [8, 256]}}
  %d = nv.wgmma %acc, %i, %i {n = 12 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 8192, 64, 8192>, b = array<i64: 8192, 2048, 12>, swizzle = 128 : i64} : vector<6xf32> -> vector<6xf32>
  func.return
}

// -----

func.func @wgmma_n_264(%acc: vector<132xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: n=264 must be a multiple of 8 in [8, 256]}}
  %d = nv.wgmma %acc, %i, %i {n = 264 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 8192, 64, 8192>, b = array<i64: 8192, 33792, 264>, swizzle = 128 : i64} : vector<132xf32> -> vector<132xf32>
  func.return
}

// -----

func.func @wgmma_major(%acc: vector<128xf32>, %i: index) {
  // An operand is stored K-major or MN-major; "row" names neither.
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: b_major="row" is not one of "k", "mn"}}
  %d = nv.wgmma %acc, %i, %i {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64, b_major = "row"} : vector<128xf32> -> vector<128xf32>
  func.return
}

// -----

func.func @wgmma_a_slot_of_one_slot(%acc: vector<128xf32>, %i: index) {
  // a_slot indexes A's slots: an A of one slot (stage_bytes 0) has nothing to pick from.
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: a_slot picks one of A's slots, but A's stage_bytes is 0 (one slot): give A's slot size}}
  %d = nv.wgmma %acc, %i, %i a_slot %i {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 0, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
  func.return
}

// -----

func.func @wgmma_major_interleaved(%acc: vector<128xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: a_major="mn" needs a swizzled layout (swizzle 32, 64 or 128): the interleaved MN-major layout is not lowered}}
  %d = nv.wgmma %acc, %i, %i {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 0 : i64, a_major = "mn"} : vector<128xf32> -> vector<128xf32>
  func.return
}

// -----

func.func @wgmma_k(%acc: vector<128xf32>, %i: index) {
  // One wgmma instruction reads k16 of a 16-bit type: K is a whole number of them.
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: k=24 must be a positive multiple of 16}}
  %d = nv.wgmma %acc, %i, %i {n = 256 : i64, k = 24 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
  func.return
}

// -----

func.func @wgmma_dtype(%acc: vector<128xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: dtype f32 is not one of bf16, f16}}
  %d = nv.wgmma %acc, %i, %i {n = 256 : i64, k = 64 : i64, dtype = f32, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
  func.return
}

// -----

func.func @wgmma_acc_length(%acc: vector<64xf32>, %i: index) {
  // m64n256: 64 * 256 f32 over a warpgroup's 128 threads is 128 per thread.
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: acc vector<64xf32> must hold 128 elements per thread}}
  %d = nv.wgmma %acc, %i, %i {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<64xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @wgmma_acc_elem(%acc: vector<128xf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: acc vector<128xf16> must have element type f32}}
  %d = nv.wgmma %acc, %i, %i {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf16> -> vector<128xf16>
  func.return
}

// -----

func.func @wgmma_result(%acc: vector<128xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: result vector<256xf32> differs from acc vector<128xf32>}}
  %d = nv.wgmma %acc, %i, %i {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<256xf32>
  func.return
}

// -----

func.func @wgmma_operand_fields(%acc: vector<128xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: a must be [base, stage_bytes, rows, warpgroup_bytes] and b [base, stage_bytes, rows]}}
  %d = nv.wgmma %acc, %i, %i {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
  func.return
}

// -----

func.func @wgmma_swizzle(%acc: vector<128xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma: swizzle=16 is not one of (0, 32, 64, 128)}}
  %d = nv.wgmma %acc, %i, %i {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 16 : i64} : vector<128xf32> -> vector<128xf32>
  func.return
}

// -----

func.func @wgmma_wait_pending(%acc: vector<128xf32>) {
  // wgmma.wait_group takes 0 to 7 groups still in flight.
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma_wait: pending=9 must be in [0, 7]}}
  %w = nv.wgmma_wait %acc {pending = 9 : i64} : vector<128xf32> -> vector<128xf32>
  func.return
}

// -----

func.func @wgmma_wait_acc(%acc: vector<128xbf16>) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma_wait: acc vector<128xbf16> must have element type f32}}
  %w = nv.wgmma_wait %acc {pending = 0 : i64} : vector<128xbf16> -> vector<128xbf16>
  func.return
}

// -----

func.func @wgmma_wait_result(%acc: vector<128xf32>) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgmma_wait: result vector<64xf32> differs from acc vector<128xf32>}}
  %w = nv.wgmma_wait %acc {pending = 0 : i64} : vector<128xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @wgacc_load_length(%C: memref<?x?xf32>, %i: index) {
  // A 64 x 256 window is 128 slots per thread, not 64.
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_load: value vector<64xf32> must hold 128 elements per thread}}
  %v = nv.wgacc_load %C[%i, %i] {n = 256 : i64, broadcast_rows = false, pad = 0.0 : f64} : memref<?x?xf32> -> vector<64xf32>
  func.return
}

// -----

func.func @wgacc_load_n(%C: memref<?x?xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_load: n=100 must be a multiple of 8 in [8, 256]}}
  %v = nv.wgacc_load %C[%i, %i] {n = 100 : i64, broadcast_rows = false, pad = 0.0 : f64} : memref<?x?xf32> -> vector<50xf32>
  func.return
}

// -----

func.func @wgacc_load_elem(%C: memref<?x?xbf16>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_load: value vector<64xf32> and memref memref<?x?xbf16> differ in element type}}
  %v = nv.wgacc_load %C[%i, %i] {n = 128 : i64, broadcast_rows = false, pad = 0.0 : f64} : memref<?x?xbf16> -> vector<64xf32>
  func.return
}

// -----

func.func @wgacc_store_rank(%v: vector<64xf32>, %C: memref<?x?x?xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store: memref memref<?x?x?xf32> takes 3 offsets (outer dims, then row and col), got 2}}
  nv.wgacc_store %v, %C[%i, %i] {n = 128 : i64} : vector<64xf32>, memref<?x?x?xf32>
  func.return
}

// -----

func.func @wgacc_store_length(%v: vector<128xf32>, %C: memref<?x?xf32>, %i: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.wgacc_store: value vector<128xf32> must hold 64 elements per thread}}
  nv.wgacc_store %v, %C[%i, %i] {n = 128 : i64} : vector<128xf32>, memref<?x?xf32>
  func.return
}

// -----

// Valid IR, but wgmma exists on sm_90a only: lower-tile-to-nv checks every op's MIN_ARCH against its target.
// SM90: hopper-ops-errors.mlir:[[# @LINE + 4]]:3: error: NV_ARCH_UNSUPPORTED{{:}} nv.wgmma needs sm_90a exactly, but the target is sm_90
// SM80: hopper-ops-errors.mlir:[[# @LINE + 3]]:3: error: NV_ARCH_UNSUPPORTED{{:}} nv.wgmma needs sm_90a exactly, but the target is sm_80
func.func @wgmma_needs_sm_90a(%i: index) {
  %z = nv.fill {value = 0.0 : f64} : vector<128xf32>
  %d = nv.wgmma %z, %i, %i {n = 256 : i64, k = 64 : i64, dtype = bf16, a = array<i64: 0, 16384, 128, 8192>, b = array<i64: 49152, 32768, 256>, swizzle = 128 : i64} : vector<128xf32> -> vector<128xf32>
  %w = nv.wgmma_wait %d {pending = 0 : i64} : vector<128xf32> -> vector<128xf32>
  func.return
}

// -----

// A kernel already lowered for sm_90 (nv.arch set) is not lowered again, but its ops are still checked.
// SM90: hopper-ops-errors.mlir:[[# @LINE + 3]]:3: error: NV_ARCH_UNSUPPORTED{{:}} nv.wgmma_wait needs sm_90a exactly, but the target is sm_90
// SM80: hopper-ops-errors.mlir:[[# @LINE + 1]]:1: error: NV_ARCH_UNSUPPORTED{{:}} kernel @lowered_for_sm_90 was lowered for sm_90, not sm_80
func.func @lowered_for_sm_90(%acc: vector<8xf32>) attributes {nv.num_threads = 128 : i64, nv.arch = "sm_90"} {
  %w = nv.wgmma_wait %acc {pending = 0 : i64} : vector<8xf32> -> vector<8xf32>
  func.return
}

// -----

// setmaxnreg is sm_90a-only too.
// SM90: hopper-ops-errors.mlir:[[# @LINE + 3]]:3: error: NV_ARCH_UNSUPPORTED{{:}} nv.setmaxnreg needs sm_90a exactly, but the target is sm_90
// SM80: hopper-ops-errors.mlir:[[# @LINE + 2]]:3: error: NV_ARCH_UNSUPPORTED{{:}} nv.setmaxnreg needs sm_90a exactly, but the target is sm_80
func.func @setmaxnreg_needs_sm_90a() {
  nv.setmaxnreg {regs = 232 : i64, action = "inc"}
  func.return
}

// -----

// mbarriers with transaction counts and TMA are sm_90: accepted there, refused on sm_80.
// SM80: hopper-ops-errors.mlir:[[# @LINE + 3]]:3: error: NV_ARCH_UNSUPPORTED{{:}} nv.mbarrier_init needs sm_90 or newer, but the target is sm_80
// SM90-NOT: error:
func.func @tma_needs_sm_90(%A: memref<?x?xbf16>, %i: index) {
  nv.mbarrier_init {base = 16384 : i64, count = 1 : i64, arrivals = 1 : i64}
  nv.mbarrier_expect_tx %i {base = 16384 : i64, bytes = 16384 : i64}
  nv.tma_load %A[%i, %i], %i {dst = 0 : i64, stage_bytes = 16384 : i64, bar = 16384 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64} : memref<?x?xbf16>
  nv.mbarrier_wait %i, %i {base = 16384 : i64}
  func.return
}
