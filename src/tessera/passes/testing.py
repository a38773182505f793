"""Passes that exist only to test tessera-opt itself (MLIR's `test-*` convention).

`test-pass-crash` raises an uncoded Python exception, the way a buggy pass
would, so a lit fixture can check that tessera-opt reports it as a coded
OPT_PASS_FAILED diagnostic naming the pass instead of printing a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tessera.passes.pipeline import register_pass


@register_pass
@dataclass(frozen=True)
class TestPassCrash(ModulePass):
    """Testing only: raise an uncoded exception, as a buggy pass would (checks OPT_PASS_FAILED)."""

    name = "test-pass-crash"
    __test__ = False  # not a pytest class

    message: str = "deliberate failure"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise RuntimeError(self.message)
