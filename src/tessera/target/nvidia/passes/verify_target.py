"""`tile-verify-target{arch=...}`: reject fragments whose family the target arch cannot run.

The family of a fragment type fixes its register layout and the instruction
that consumes it (DESIGN section 2): `mma_sync` needs sm_80 or newer, `wgmma`
exists on sm_90a only. Checking every fragment type in the module against the
arch turns "wgmma on sm_80" into a coded error at the op that introduces the
fragment, long before any assembler sees it (DESIGN section 3, lesson 3).
`auto` passes: tile-to-fragments resolves it later, for the same arch.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass

from tessera.ir import diagnostics as D
from tessera.ir.types import FragmentType
from tessera.target.arch import Arch, family_requirement, family_supported, parse_arch
from tessera.passes.pipeline import register_pass


def check_fragment_families(module: ModuleOp, arch: Arch) -> None:
    """Raise TILE_FAMILY_UNSUPPORTED_ARCH at the first op that defines a fragment `arch` cannot run.

    Every value is an op result or a block argument, so checking those (and
    function signatures, which also cover bodiless declarations) covers every
    operand too, at the place where the offending value is introduced.
    """
    for op in module.walk():
        for i, res in enumerate(op.results):
            _check(op, f"result #{i}", res.type, arch)
        for r, region in enumerate(op.regions):
            for b, block in enumerate(region.blocks):
                for i, arg in enumerate(block.args):
                    _check(op, f"region #{r} block #{b} argument #{i}", arg.type, arch)
        if isinstance(op, func.FuncOp):
            for i, t in enumerate(op.function_type.inputs.data):
                _check(op, f"function input #{i}", t, arch)
            for i, t in enumerate(op.function_type.outputs.data):
                _check(op, f"function result #{i}", t, arch)


def _check(op: Operation, what: str, t: Attribute, arch: Arch) -> None:
    if isinstance(t, FragmentType) and not family_supported(arch, t.family.data):
        family = t.family.data
        raise D.TesseraError(
            D.TILE_FAMILY_UNSUPPORTED_ARCH,
            f"{op.name}: {what} is a fragment of family \"{family}\", which {arch} cannot run "
            f"(\"{family}\" needs {family_requirement(family)}): {t}", op=op)


@register_pass
@dataclass(frozen=True)
class TileVerifyTargetPass(ModulePass):
    """Check that every fragment family in the module runs on the target arch (mma_sync: sm_80+, wgmma: sm_90a)."""

    name = "tile-verify-target"

    arch: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_fragment_families(op, parse_arch(self.arch))
