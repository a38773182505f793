"""The tree reads as the pipeline, and imports flow one way (issue 14).

dsl -> ir -> passes -> target/<vendor> -> compiler -> runtime -> ops: a
module may import its own layer and the layers before it, never a later one,
function-level imports included (they used to hold cycles together). The
target-independent layers find targets only by name (`tessera.target.load_all`,
`pass_modules`), so the tile dialect never imports a target.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "tessera"
# For each layer, the layers it must not import (anything not named is allowed).
FORBIDDEN = {
    "dsl": ("target", "compiler", "runtime", "ops", "reference"),
    "ir": ("dsl", "passes", "target", "compiler", "runtime", "ops", "reference", "kernels"),
    "layouts": ("dsl", "passes", "target", "compiler", "runtime", "ops", "reference", "kernels"),
    "passes": ("dsl", "target", "compiler", "runtime", "ops", "reference", "kernels"),
    "target": ("dsl", "compiler", "ops", "reference", "kernels"),
    "runtime": ("dsl", "compiler", "ops", "reference", "kernels"),
    "compiler": ("ops",),
    "reference": ("target", "compiler", "runtime", "ops"),
}


# The one Arch value every layer that takes an arch uses (it imports no target).
SHARED = ("tessera.target.arch",)


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "tessera" else None


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_layer_imports_a_later_one(layer):
    bad = []
    for path in sorted((SRC / layer).rglob("*.py")):
        for module in _imports(path):
            if _layer(module) in FORBIDDEN[layer] and module not in SHARED:
                bad.append(f"{path.relative_to(SRC)} imports {module}")
    assert not bad, "\n".join(bad)


def test_the_shared_arch_value_imports_no_target():
    assert all(_layer(m) in (None, "ir") for m in _imports(SRC / "target" / "arch.py"))


def test_the_nvidia_target_has_one_home():
    """Its dialect, passes, emitters and toolchain live under target/nvidia; none is left in the shared rooms."""
    stray = [p.relative_to(SRC) for d in ("ir", "passes") for p in (SRC / d).glob("*.py")
             if p.name.startswith(("nv_", "wgmma", "ws_", "warp_specialize", "tile_to_fragments", "lower_to_nv"))]
    assert not stray and not (SRC / "codegen").exists(), stray


def test_one_grammar_for_arch_strings():
    """Only tessera.target.arch spells the sm_XY pattern (there were three regexes)."""
    spelled = [p.relative_to(SRC) for p in SRC.rglob("*.py")
               if re.search(r"sm_\(\\\\?d", p.read_text()) and p != SRC / "target" / "arch.py"]
    assert not spelled, spelled


@pytest.mark.parametrize("text, want", [("sm_90a", (9, 0, "a")), ("sm_80", (8, 0, "")), ("sm_100f", (10, 0, "f")),
                                        ("sm_120", (12, 0, "")), ("sm90", None), ("sm_9", None), ("sm_90b", None),
                                        (90, None)])
def test_every_arch_reader_agrees(text, want):
    from tessera.ir import diagnostics as D
    from tessera.target.arch import Arch
    from tessera.target.nvidia.ir.types import need_arch
    from tessera.target.nvidia.toolchain.nvrtc import parse_arch as nvrtc_arch

    got = Arch.read(text)
    assert (got and (got.major, got.minor, got.suffix)) == (want or None)
    if want is None:
        with pytest.raises(D.TesseraError) as err:
            nvrtc_arch(text)
        assert err.value.code is D.CODEGEN_ARCH_UNSUPPORTED
        if isinstance(text, str):
            with pytest.raises(ValueError):
                need_arch(text)
    else:
        assert nvrtc_arch(text) == want and need_arch(text) == got and got.vendor == "nvidia"


def _module_of(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_no_import_cycle_in_the_pipeline_layers():
    """Function-level imports used to hold six cycles together (issue 14); none is left. The last was in
    dsl/: dtypes, scalar, tile and values, tied by imports in DType.__call__, Scalar._bin and Tensor.dim."""
    rooms = ("dsl", "target", "ir", "passes", "runtime", "compiler", "reference", "layouts")
    paths = [p for room in rooms for p in (SRC / room).rglob("*.py")]
    modules = {_module_of(p): p for p in paths}
    graph = {m: {i for i in _imports(p) if i in modules and i != m} for m, p in modules.items()}
    for m, p in modules.items():  # `from pkg import mod` names a module too
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                graph[m] |= {f"{node.module}.{a.name}" for a in node.names} & modules.keys() - {m}
    done, stack, cycles = set(), [], []

    def visit(m):
        if m in stack:
            cycles.append(stack[stack.index(m):] + [m])
            return
        if m in done:
            return
        stack.append(m)
        for n in sorted(graph[m]):
            if not n.endswith("__init__") and modules[n].name != "__init__.py":
                visit(n)
        stack.pop()
        done.add(m)

    for m in sorted(graph):
        visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles[:5])
