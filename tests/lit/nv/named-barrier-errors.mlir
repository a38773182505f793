// nv.named_barrier rules: whole warps (a multiple of 32 threads, at most a CTA's 1024) and a mode of sync or
// arrive, each a coded NV_OP_INVALID that names the op and the value.
// RUN: tessera-opt %s --split-input-file --verify-diagnostics
// RUN: not tessera-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK: error: NV_OP_INVALID: nv.named_barrier: threads=100 must be a multiple of 32 (whole warps) in [32, 1024]
// CHECK: error: NV_OP_INVALID: nv.named_barrier: threads=2048 must be a multiple of 32
// CHECK: error: NV_OP_INVALID: nv.named_barrier: mode 'wait' is not sync or arrive

// -----

func.func @partial_warp(%id: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.named_barrier: threads=100 must be a multiple of 32 (whole warps) in [32, 1024]}}
  nv.named_barrier %id {threads = 100 : i64, mode = "sync"}
  func.return
}

// -----

func.func @too_many(%id: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.named_barrier: threads=2048 must be a multiple of 32 (whole warps) in [32, 1024]}}
  nv.named_barrier %id {threads = 2048 : i64, mode = "arrive"}
  func.return
}

// -----

func.func @mode(%id: index) {
  // expected-error@+1 {{NV_OP_INVALID: nv.named_barrier: mode 'wait' is not sync or arrive}}
  nv.named_barrier %id {threads = 256 : i64, mode = "wait"}
  func.return
}
