"""Targets: one package per vendor (`nvidia/`; a second vendor is a sibling), and the `Arch` value they share.

A target package registers what it adds when it is imported: its dialect
(`tessera.ir.dialect.register_dialect`), its passes and named pipelines
(`tessera.passes.register_pass`). The target-independent layers never import
a target; they find them here by name, the way the pass registry finds passes.
"""

from __future__ import annotations

import importlib
import pkgutil

_loaded = False


def names() -> list[str]:
    """The target packages under tessera.target (e.g. ['nvidia'])."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_"))


def load_all() -> None:
    """Import every target package once (each registers its dialects; passes load with `passes_modules`)."""
    global _loaded
    if not _loaded:
        _loaded = True
        for name in names():
            module = importlib.import_module(f"{__name__}.{name}")
            register = getattr(module, "register", None)
            if register is not None:
                register()


def pass_modules() -> list[str]:
    """Dotted names of every module of every target's `passes` package (the pass registry imports them)."""
    out = []
    for name in names():
        pkg = importlib.import_module(f"{__name__}.{name}.passes")
        out += [f"{pkg.__name__}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    return sorted(out)
