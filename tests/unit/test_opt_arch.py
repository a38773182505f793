"""The arch table and the tile-verify-target pass behind it."""

from __future__ import annotations

import pytest

from tessera.ir import diagnostics as D
from tessera.ir.parse import parse_module
from tessera.target.arch import ARCH_NAMES, FEATURES, Arch, family_supported, parse_arch
from tessera.target.nvidia.passes.verify_target import TileVerifyTargetPass, check_fragment_families


def test_parse_arch_round_trips_and_orders():
    arches = [parse_arch(name) for name in ARCH_NAMES]
    assert [a.name for a in arches] == list(ARCH_NAMES)
    assert arches == sorted(arches)
    assert parse_arch("sm_90a") == Arch(9, 0, "a") and str(parse_arch("sm_86")) == "sm_86"
    assert parse_arch("sm_90") < parse_arch("sm_90a")


@pytest.mark.parametrize("text", ["sm_12", "sm_70", "sm_75", "sm90", "sm_90b", "sm_", "", "sm_100a", None, 90])
def test_parse_arch_rejects_what_tessera_does_not_target(text):
    with pytest.raises(ValueError, match="sm_80, sm_86, sm_89, sm_90, sm_90a"):
        parse_arch(text)


@pytest.mark.parametrize("arch, feature, expected", [
    ("sm_80", "mma_sync", True), ("sm_86", "cp_async", True), ("sm_90a", "mma_sync", True),
    ("sm_80", "tma", False), ("sm_89", "tma", False), ("sm_90", "tma", True), ("sm_90a", "tma", True),
    ("sm_80", "wgmma", False), ("sm_89", "wgmma", False), ("sm_90", "wgmma", False), ("sm_90a", "wgmma", True),
    ("sm_90", "setmaxnreg", False), ("sm_90a", "setmaxnreg", True),
])
def test_supports(arch, feature, expected):
    assert parse_arch(arch).supports(feature) is expected


def test_arch_specific_features_are_not_forward_compatible():
    # a hypothetical later arch has the portable features, but not sm_90a's wgmma
    later = Arch(10, 0, "a")
    assert later.supports("tma") and later.supports("mma_sync") and not later.supports("wgmma")


def test_unknown_feature_is_an_error():
    with pytest.raises(ValueError, match="unknown target feature 'tcgen05'"):
        parse_arch("sm_90a").supports("tcgen05")
    assert set(FEATURES) >= {"mma_sync", "wgmma", "tma", "cp_async", "ldmatrix", "mbarrier"}


def test_family_gate():
    sm80, sm90a = parse_arch("sm_80"), parse_arch("sm_90a")
    assert family_supported(sm80, "auto") and family_supported(sm80, "mma_sync")
    assert not family_supported(sm80, "wgmma") and family_supported(sm90a, "wgmma")
    assert not family_supported(sm90a, "tcgen05")


_FRAG = '!tile.fragment<m=64, n=128, k=16, elem=bf16, acc=f32, role="acc", layout="row", family="{}">'


def _module(family: str, where: str):
    t = _FRAG.format(family)
    body = {
        "result": f"func.func @f() {{\n  %z = tile.fragment_zero : {t}\n  func.return\n}}",
        "argument": f"func.func @f(%a: {t}) {{\n  func.return\n}}",
        "declaration": f"func.func private @f({t}) -> ()",
    }[where]
    return parse_module(body, "t.mlir")


@pytest.mark.parametrize("where, line, what", [
    ("result", 2, "tile.fragment_zero: result #0"),
    ("argument", 1, "func.func: region #0 block #0 argument #0"),
    ("declaration", 1, "func.func: function input #0"),
])
def test_verify_target_locates_the_fragment_that_arch_cannot_run(where, line, what):
    with pytest.raises(D.TesseraError) as info:
        TileVerifyTargetPass(arch="sm_80").apply(None, _module("wgmma", where))
    err = info.value
    assert err.code is D.TILE_FAMILY_UNSUPPORTED_ARCH
    assert what in err.message and '"wgmma" needs sm_90a exactly' in err.message
    assert D.op_location(err.op).startswith(f"t.mlir:{line}:")


@pytest.mark.parametrize("family", ["auto", "mma_sync", "wgmma"])
def test_verify_target_accepts_what_the_arch_runs(family):
    for where in ("result", "argument", "declaration"):
        check_fragment_families(_module(family, where), parse_arch("sm_90a"))
        if family != "wgmma":
            check_fragment_families(_module(family, where), parse_arch("sm_80"))
