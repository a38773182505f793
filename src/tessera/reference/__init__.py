"""The CPU reference: an interpreter for Tile and Fragment IR, and float64 numpy oracles.

`run(module, grid, args)` executes a kernel grid-sequentially on numpy arrays
(whole tiles at a time, bf16/f16 rounded after every op as on the GPU) and
returns a `RunResult` naming the lane and the IR hash. `oracles` holds the
float64 references (GEMM, attention, linear attention) and the per-dtype error
bounds every numeric test uses.

The names below load on first use (issue 14): `from tessera.reference.oracles
import gemm_ref` loads the oracles alone, and only `run` and its kin load the
interpreter and, with it, all of xDSL's interpreters (about 0.2 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tessera.reference.oracles import REL_ERROR_BOUNDS, attention_ref, gemm_ref, linear_attention_ref, rel_error
    from tessera.reference.runner import LANE, RunResult, ir_hash, run

_ORACLES = ("REL_ERROR_BOUNDS", "attention_ref", "gemm_ref", "linear_attention_ref", "rel_error")
_RUNNER = ("LANE", "RunResult", "ir_hash", "run")

__all__ = sorted(_ORACLES + _RUNNER)


def __getattr__(name: str):
    """Import the oracles or the interpreter when one of their names is first asked for."""
    if name in _ORACLES:
        from tessera.reference import oracles as home
    elif name in _RUNNER:
        from tessera.reference import runner as home
    else:  # an AttributeError also lets `from tessera.reference import numerics` import that submodule
        raise AttributeError(f"module 'tessera.reference' has no attribute {name!r}")
    value = globals()[name] = getattr(home, name)
    return value
