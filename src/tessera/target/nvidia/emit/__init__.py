"""nv IR -> CUDA C++ text: one emitter per op family, table-driven (`cuda.emit_cuda`)."""
