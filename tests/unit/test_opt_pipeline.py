"""The pass registry and pipeline parser: spellings, typed options, coded errors, named pipelines."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from xdsl.passes import ModulePass

from tessera.ir import diagnostics as D
from tessera.passes import pipeline as P
from tessera.passes.options import option_infos
from tessera.target.nvidia.passes.verify_target import TileVerifyTargetPass


@dataclass(frozen=True)
class _TypedPass(ModulePass):
    """A pass with one option of every supported kind (registered per test)."""

    name = "test-typed"

    arch: str
    stages: int = 3
    scale: float = 1.0
    swizzle: bool = False
    tiles: tuple[int, ...] = (128, 64)
    mode: str = field(default="fast", metadata={"choices": ("fast", "exact"), "help": "rounding"})
    limit: int | None = None

    def apply(self, ctx, op) -> None:
        pass


@pytest.fixture
def typed(monkeypatch):
    P.available_passes()
    monkeypatch.setitem(P._PASSES, _TypedPass.name, P.PassInfo(_TypedPass.name, _TypedPass, "typed",
                                                                 option_infos(_TypedPass)))
    return _TypedPass


def _code(text: str) -> tuple[str, str]:
    with pytest.raises(D.TesseraError) as info:
        P.parse_pipeline(text)
    return info.value.code.name, info.value.message


def test_mlir_and_flat_spellings_give_the_same_passes():
    mlir = P.parse_pipeline("builtin.module(tile-verify-target{arch=sm_90a}, cse,dce)")
    flat = P.parse_pipeline("tile-verify-target{arch=sm_90a},cse,dce")
    assert mlir.passes == flat.passes
    assert [p.name for p in flat.passes] == ["tile-verify-target", "cse", "dce"]
    assert flat.passes[0] == TileVerifyTargetPass(arch="sm_90a")


def test_empty_pipelines_are_valid():
    assert P.parse_pipeline("").passes == ()
    assert P.parse_pipeline("builtin.module()").passes == ()


def test_upstream_passes_are_registered_with_a_purpose():
    passes = P.available_passes()
    for name in ("canonicalize", "cse", "dce", "tile-verify-target"):
        assert name in passes and passes[name].summary


def test_typed_options_convert(typed):
    (p,) = P.parse_pipeline("test-typed{arch=sm_86 stages=4 scale=2 swizzle tiles=64,32,16 mode=exact limit=7}").passes
    assert p == typed(arch="sm_86", stages=4, scale=2.0, swizzle=True, tiles=(64, 32, 16), mode="exact", limit=7)
    (d,) = P.parse_pipeline("test-typed{arch=sm_80}").passes
    assert (d.stages, d.scale, d.swizzle, d.tiles, d.mode, d.limit) == (3, 1.0, False, (128, 64), "fast", None)


@pytest.mark.parametrize("options, words", [
    ("stages=abc", ["'test-typed'", "'stages'", "'abc'", "int"]),
    ("stages=1.5", ["'stages'", "'1.5'", "int"]),
    ("stages=true", ["'stages'", "'true'", "int"]),
    ("swizzle=1", ["'swizzle'", "'1'", "bool"]),
    ("scale=fast", ["'scale'", "'fast'", "float"]),
    ("tiles=a,b", ["'tiles'", "'a'", "list of int"]),
    ("mode=slow", ["'mode'", "'slow'", "fast|exact"]),
    ("stages=1,2", ["'stages'", "list of 2"]),
])
def test_ill_typed_values_name_pass_option_value_and_type(typed, options, words):
    code, message = _code(f"test-typed{{arch=sm_80 {options}}}")
    assert code == "OPT_OPTION_INVALID"
    for w in words:
        assert w in message, (w, message)


@pytest.mark.parametrize("arch", ["sm_12", "sm_70", "sm_90b", "sm90", "90", "SM_90", "sm_100a"])
def test_arch_values_are_checked(arch):
    code, message = _code(f"tile-verify-target{{arch={arch}}}")
    assert code == "OPT_OPTION_INVALID" and f"'{arch}'" in message and "sm_80|sm_86|sm_89|sm_90|sm_90a" in message


def test_missing_arch_is_always_an_error(typed):
    assert _code("tile-verify-target")[0] == "OPT_OPTION_MISSING"
    assert _code("builtin.module(tile-verify-target{})")[0] == "OPT_OPTION_MISSING"
    code, message = _code("test-typed{stages=2}")
    assert code == "OPT_OPTION_MISSING" and "'arch'" in message


def test_an_arch_option_with_a_default_cannot_be_registered():
    @dataclass(frozen=True)
    class Defaulted(ModulePass):
        """Assumes an arch."""

        name = "test-defaulted"
        arch: str = "sm_80"

        def apply(self, ctx, op) -> None:
            pass

    with pytest.raises(TypeError, match="arch"):
        option_infos(Defaulted)


def test_unsupported_option_types_are_refused_at_registration():
    @dataclass(frozen=True)
    class Listy(ModulePass):
        """Takes a dict."""

        name = "test-listy"
        table: dict = field(default_factory=dict)

        def apply(self, ctx, op) -> None:
            pass

    with pytest.raises(TypeError, match="table"):
        option_infos(Listy)


@pytest.mark.parametrize("text, code, col", [
    ("frobnicate", "OPT_PASS_UNKNOWN", 1),
    ("cse, canonicalise", "OPT_PASS_UNKNOWN", 6),
    ("cse{bogus=1}", "OPT_OPTION_UNKNOWN", 1),
    ("dce,tile-verify-target{arch=sm_80 unknown}", "OPT_OPTION_UNKNOWN", 5),
    ("tile-verify-target{arch=sm_80 arch=sm_90}", "OPT_OPTION_INVALID", 1),
    ("cse{", "OPT_PIPELINE_SYNTAX", 5),
    ("cse)", "OPT_PIPELINE_SYNTAX", 4),
    ("cse,", "OPT_PIPELINE_SYNTAX", 5),
    ("builtin.module(cse", "OPT_PIPELINE_SYNTAX", 1),
    ("builtin.module(func.func(cse))", "OPT_PIPELINE_SYNTAX", 16),
    ("cse dce", "OPT_PIPELINE_SYNTAX", 1),
    ("cse{a=\"x}", "OPT_PIPELINE_SYNTAX", 10),
    ("cse{a=$}", "OPT_PIPELINE_SYNTAX", 1),  # xDSL's lexer raises ArgSpecParseError, a BaseException
])
def test_errors_are_coded_and_located_in_the_pipeline(text, code, col):
    with pytest.raises(D.TesseraError) as info:
        P.parse_pipeline(text)
    assert info.value.code.name == code
    assert info.value.location == f"<pass-pipeline>:1:{col}"


def test_unknown_pass_suggests_a_close_name():
    assert "did you mean 'canonicalize'" in _code("canonicalise")[1]


def test_named_pipeline_expands_and_forwards_options(typed, monkeypatch):
    monkeypatch.setitem(P.NAMED_PIPELINES, "test-lower", "builtin.module(cse,test-typed{stages=2},dce)")
    monkeypatch.setitem(P._PIPELINE_SUMMARIES, "test-lower", "for tests")
    passes = P.parse_pipeline("canonicalize,test-lower{arch=sm_90a swizzle=true}").passes
    assert [p.name for p in passes] == ["canonicalize", "cse", "test-typed", "dce"]
    assert passes[2] == typed(arch="sm_90a", stages=2, swizzle=True)
    # an option given to the named pipeline overrides the value written in it
    assert P.parse_pipeline("test-lower{arch=sm_80 stages=5}").passes[1].stages == 5
    help_text = P.describe_passes()
    assert "arch: one of sm_80|sm_86|sm_89|sm_90|sm_90a (required) -> test-typed" in help_text
    assert "stages: int (default: 2, as written in the pipeline) -> test-typed" in help_text


def test_named_pipeline_errors_name_the_pipeline(typed, monkeypatch):
    monkeypatch.setitem(P.NAMED_PIPELINES, "test-lower", "cse,test-typed")
    code, message = _code("test-lower")
    assert code == "OPT_OPTION_MISSING" and "'test-typed'" in message and "'test-lower'" in message
    code, message = _code("test-lower{arch=sm_90 nope=1}")
    assert code == "OPT_OPTION_UNKNOWN" and "'test-lower'" in message and "'nope'" in message
    code, message = _code("test-lower{arch=sm_12}")
    assert code == "OPT_OPTION_INVALID" and "'sm_12'" in message


def test_named_pipeline_cannot_include_itself(monkeypatch):
    monkeypatch.setitem(P.NAMED_PIPELINES, "test-loop", "cse,test-loop")
    assert _code("test-loop")[0] == "OPT_PIPELINE_SYNTAX"


def test_pipeline_text_is_canonical_and_reparses(typed):
    pipeline = P.parse_pipeline("builtin.module(test-typed{arch=sm_89 tiles=32}, cse)")
    text = P.pipeline_text(pipeline)
    assert text.startswith("builtin.module(test-typed{") and "stages=3" in text and text.endswith(",cse)")
    assert P.parse_pipeline(text).passes == pipeline.passes


def test_help_lists_every_pass_with_options_and_purpose(typed):
    text = P.describe_passes()
    for name, info in P.available_passes().items():
        line = next(line for line in text.splitlines() if line.split()[:1] == [name])
        assert info.summary in line
    assert "arch: one of sm_80|sm_86|sm_89|sm_90|sm_90a (required)" in text
    assert "stages: int (default: 3)" in text
    assert "mode: one of fast|exact (default: fast) - rounding" in text
    assert "tiles: comma-separated list of int (default: 128,64)" in text
    assert "limit: int (default: none)" in text


def test_register_pass_needs_a_purpose():
    @dataclass(frozen=True)
    class Silent(ModulePass):
        name = "test-silent"

        def apply(self, ctx, op) -> None:
            pass

    Silent.__doc__ = None
    with pytest.raises(TypeError, match="docstring"):
        P.register_pass(Silent)
    assert "test-silent" not in P.available_passes()
