"""The CPU reference: an interpreter for Tile and Fragment IR, and float64 numpy oracles.

`run(module, grid, args)` executes a kernel grid-sequentially on numpy arrays
(whole tiles at a time, bf16/f16 rounded after every op as on the GPU) and
returns a `RunResult` naming the lane and the IR hash. `oracles` holds the
float64 references (GEMM, attention, linear attention) and the per-dtype error
bounds every numeric test uses.
"""

from tessera.reference.oracles import REL_ERROR_BOUNDS, attention_ref, gemm_ref, linear_attention_ref, rel_error
from tessera.reference.runner import LANE, RunResult, ir_hash, run

__all__ = ["LANE", "REL_ERROR_BOUNDS", "RunResult", "attention_ref", "gemm_ref", "ir_hash", "linear_attention_ref",
           "rel_error", "run"]
