"""xDSL's generic cleanup passes, registered under their upstream (and MLIR) names.

They work on Tile IR as on any IR: tile ops declare `Pure` where they have no
side effects, which is what dead-code elimination and CSE key on.
"""

from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from tessera.passes.pipeline import register_pass

register_pass(CanonicalizePass, summary="Apply every op's canonicalization patterns, fold constants, drop dead code")
register_pass(CommonSubexpressionElimination, summary="Merge identical side-effect-free ops (common subexpressions)")
register_pass(DeadCodeElimination, summary="Erase side-effect-free ops whose results are unused")
