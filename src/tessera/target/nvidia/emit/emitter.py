"""The CUDA C++ text being built and what it describes: the Emitter, the kernel's parameters, the emitted kernel.

The per-op emitters (`nv`, `scalar`, ...) write through an Emitter; which op
goes to which emitter is an `OpTable` that `cuda.emit_cuda` hands it, so this
module imports none of them (and they import only this one).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation, SSAValue

from tessera.ir import diagnostics as D
from tessera.target.nvidia.emit.abi import EmittedKernel, KernelParam  # noqa: F401 - re-exported


@dataclass(frozen=True)
class OpTable:
    """Op name -> emitter, plus the slot-wise ops that fuse into one loop and how (`nv.emit_run`, `nv.slots_of`)."""

    emitters: dict
    slotwise: frozenset
    emit_run: Callable
    slots_of: Callable


_RESERVED = {"tid", "lane", "warp", "tsr_smem", "tsr_groups", "tsr_sbase", "int", "float", "double", "char", "bool", "long",
             "short", "unsigned", "signed", "void", "const", "auto", "if", "else", "for", "while", "do", "return",
             "break", "continue", "switch", "case", "default", "struct", "class", "union", "enum", "static",
             "extern", "inline", "volatile", "register", "goto", "sizeof", "typedef", "template", "new", "delete",
             "this", "true", "false", "asm", "min", "max", "abs", "exp", "log", "sqrt"}


@dataclass(frozen=True)
class Memref:
    """How the body reaches a memref argument: pointer, per-dim size and stride expressions."""

    ptr: str
    sizes: tuple[str, ...]
    strides: tuple[str, ...]
    elem: object


def location(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return D.op_location(op)


class Emitter:
    """The text being built: lines, indentation, C names of SSA values."""

    def __init__(self, threads: int, table: "OpTable"):
        self.threads, self.table = threads, table
        self.lines: list[str] = []
        self.depth = 1
        self.names: dict[SSAValue, str] = {}
        self.taken: set[str] = set(_RESERVED)
        self.memrefs: dict[SSAValue, Memref] = {}
        self.tmaps: dict[SSAValue, str] = {}  # memref argument -> name of its TMA tensor-map parameter
        self.uses_groups = False
        self.fast_windows: dict = {}  # window op -> (base pointer, row-step) names on an interior path
        self.staging: dict = {}  # nv.wgacc_store_tma -> names of its buffers, barrier and thread position

    # -- text ------------------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def comment(self, op: Operation, what: str = "") -> None:
        self.line(f"// {op.name} @ {location(op)}" + (f": {what}" if what else ""))

    @contextmanager
    def block(self, head: str = "", note: str = ""):
        self.line(head + "{" + (f"  // {note}" if note else ""))
        self.depth += 1
        yield
        self.depth -= 1
        self.line("}")

    @contextmanager
    def unrolled(self, var: str, n: int, note: str = ""):
        """A fully unrolled loop: register arrays indexed by `var` see only constants."""
        self.line("#pragma unroll")
        with self.block(f"for (int {var} = 0; {var} < {n}; ++{var}) ", note):
            yield

    # -- names -----------------------------------------------------------------
    def fresh(self, hint: str | None) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint or "v").strip("_") or "v"
        if base[0].isdigit():
            base = "v" + base
        if base.startswith("tsr_"):
            base = "u" + base
        name, n = base, 1
        while name in self.taken:
            name = f"{base}_{n}"
            n += 1
        self.taken.add(name)
        return name

    def define(self, value: SSAValue, name: str | None = None) -> str:
        name = name or self.fresh(value.name_hint)
        self.names[value] = name
        return name

    def __getitem__(self, value: SSAValue) -> str:
        if value not in self.names:
            raise D.TesseraError(D.EMIT_UNSUPPORTED, f"value {value.name_hint or ''} of type {value.type} is used "
                                                     "but was never defined by an emitted op", op=value.owner
                                 if isinstance(value.owner, Operation) else None)
        return self.names[value]

    def memref(self, value: SSAValue, op: Operation) -> Memref:
        if value not in self.memrefs:
            raise D.TesseraError(D.EMIT_UNSUPPORTED, f"{op.name} reads a memref that is not a kernel argument",
                                 op=op)
        return self.memrefs[value]

    # -- ops ---------------------------------------------------------------------
    def emit_ops(self, ops) -> None:
        """Emit ops in order; runs of slot-wise ops become one loop (see nv.emit_run)."""
        table = self.table
        ops = list(ops)
        i = 0
        while i < len(ops):
            op = ops[i]
            if op.name in table.slotwise:
                run, hoisted, j = _collect_run(ops, i, table.slotwise, table.slots_of)
                self.emit_ops(hoisted)
                table.emit_run(self, run)
                i = j
                continue
            emit = table.emitters.get(op.name)
            if emit is None:
                raise D.TesseraError(D.EMIT_UNKNOWN_OP, f"no CUDA C++ for {op.name}; emission takes nv, arith, "
                                                        "math, scf.for and func ops", op=op)
            emit(self, op)
            i += 1


_HOISTABLE = ("arith.", "math.", "nv.alloc_shared", "nv.block_id", "nv.grid_dim")
# Slot-wise ops of another slot count that may move before a run they do not depend on (no memory writes).
_LOADS, _STORES = ("nv.load_global", "nv.wgacc_load"), ("nv.store_global", "nv.atomic_add_global", "nv.wgacc_store",
                                                         "nv.wgacc_atomic_add",
                                                         "nv.wgacc_store_tma")
_HOIST_SLOTWISE = ("nv.load_global", "nv.map", "nv.cmp", "nv.select", "nv.convert", "nv.splat", "nv.fill",
                   "nv.iota", "nv.slots")


def _collect_run(ops, i, slotwise, slots_of):
    """Slot-wise ops from ops[i] with one slot count; pure scalar ops met on the way are hoisted before the run.

    A run stops at anything else (a barrier, a fragment op, a loop), before a
    global load from a memref that the run already stores to (fusing would let
    an earlier slot read before a later slot's store) and before a second
    staged TMA store.
    """
    run, hoisted, stored = [ops[i]], [], set()
    n = slots_of(ops[i])
    j = i + 1
    if ops[i].name in _STORES:
        stored.add(ops[i].dest)
    produced = {ops[i].results[0]} if ops[i].results else set()
    while j < len(ops):
        op = ops[j]
        if op.name in slotwise and slots_of(op) == n:
            if op.name in _LOADS and op.source in stored:
                break
            if op.name == "nv.wgacc_store_tma" and any(o.name == op.name for o in run):
                break  # one staged store per run: its box loop owns the run's barriers
            if op.name in _STORES:
                stored.add(op.dest)
            run.append(op)
            produced.update(op.results)
        elif op.name.startswith(_HOISTABLE) and not op.regions:
            hoisted.append(op)
        elif op.name in _HOIST_SLOTWISE and not produced.intersection(op.operands) and not (
                op.name in _LOADS and op.source in stored):
            hoisted.append(op)  # e.g. a bias row's load: independent of the run, so it goes first
        else:
            break
        j += 1
    return run, hoisted, j
