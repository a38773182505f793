"""The API reference, generated from the docstrings: `python -m tessera.tools.api_docs > docs/API.md`.

One section per public module (its docstring's first paragraph), then each
public name with its signature and docstring. The committed docs/API.md is
checked against this output by the tests, so the reference cannot drift from
the code; a public name without a docstring fails them.
"""

from __future__ import annotations

import importlib
import inspect
import sys

# (module, names): the surface a user imports, in the order a newcomer meets it.
MODULES = [
    ("tessera", ["kernel", "tensor", "scalar", "compile", "cdiv", "Kernel", "TracedKernel"]),
    ("tessera.tl", None),
    ("tessera.ops", ["gemm", "attention", "linear_attention", "last_run", "RunRecord", "tune_gemm"]),
    ("tessera.ops.torch_ops", ["gemm", "attention", "linear_attention"]),
    ("tessera.testing", ["do_bench", "Benchmark", "perf_report", "PerfReport", "plot_lines"]),
    ("tessera.reference", ["run", "RunResult", "gemm_ref", "attention_ref", "linear_attention_ref"]),
    ("tessera.compiler.kernel", ["CompiledKernel"]),
    ("tessera.compiler.report", ["CompileReport", "TesseraPerformanceWarning"]),
    ("tessera.compiler.launch_shape", ["LaunchShape"]),
]
SKIP_TL = {"bf16", "f16", "f32", "f64", "i1", "i32", "index", "Tile", "Scalar", "Tensor"}  # dtypes and value types


def _first_paragraph(doc: str | None) -> str:
    return inspect.cleandoc(doc or "").split("\n\n", 1)[0]


def _signature(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def public_names(module_name: str, names: list[str] | None) -> list[str]:
    module = importlib.import_module(module_name)
    if names is None:
        names = [n for n in getattr(module, "__all__", []) if n not in SKIP_TL]
    return names


def undocumented() -> list[str]:
    """Public names whose object has no docstring of its own."""
    missing = []
    for module_name, names in MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name, names):
            obj = getattr(module, name)
            if not (getattr(obj, "__doc__", None) or "").strip():
                missing.append(f"{module_name}.{name}")
    return missing


def render() -> str:
    out = ["# Tessera API reference", "",
           "Generated from the docstrings by `python -m tessera.tools.api_docs > docs/API.md`; the tests check that "
           "this file matches the code.", ""]
    for module_name, names in MODULES:
        module = importlib.import_module(module_name)
        out += [f"## `{module_name}`", "", _first_paragraph(module.__doc__), ""]
        for name in public_names(module_name, names):
            obj = getattr(module, name)
            kind = "class" if inspect.isclass(obj) else "def" if callable(obj) else ""
            sig = _signature(obj) if kind else ""
            out += [f"### `{name}{sig}`" if kind == "def" else f"### `{kind} {name}{sig}`".replace("`  ", "`"), ""]
            doc = inspect.cleandoc(obj.__doc__ or "")
            out += [doc, ""] if doc else []
            if inspect.isclass(obj):
                for attr, member in sorted(vars(obj).items()):
                    if attr.startswith("_") or not (callable(member) or isinstance(member, property)):
                        continue
                    fn = member.fget if isinstance(member, property) else member
                    mdoc = _first_paragraph(getattr(fn, "__doc__", None))
                    if mdoc:
                        msig = "" if isinstance(member, property) else _signature(fn)
                        out += [f"- `{attr}{msig}`: {mdoc.replace(chr(10), ' ')}"]
                out += [""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
