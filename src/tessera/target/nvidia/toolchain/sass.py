"""Read the machine code NVRTC produced: SASS text, instruction counts, resources.

CI has no GPU, so the SASS is the evidence that a lowering did what it claims:
an sm_90a GEMM must contain HGMMA, an mma.sync kernel HMMA, and no shipped
kernel may touch local memory (LDL/STL, or a stack frame) - DESIGN.md section 4.
The disassemblers are the pip packages nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm
(found through cuda.pathfinder) or whatever is on PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache

from tessera.target.nvidia.toolchain.nvrtc import CodegenError
from tessera.ir.diagnostics import CODEGEN_SASS_FAILED, CODEGEN_TOOLCHAIN_MISSING

LOCAL_MEMORY_OPCODES = ("LDL", "STL")
TOOL_TIMEOUT_S = 120

# `/*0310*/   @!P0 HMMA.16816.F32.BF16 R4, R8, R14, R4 ;` in cuobjdump and nvdisasm output alike.
# Possessive quantifiers: the opcode, the blanks and the operands overlap, and without them a line with
# no ';' backtracks through every split of opcode and operands (quadratic in the line).
_INSTR_RE = re.compile(r"/\*([0-9a-f]{4,}+)\*/\s++(@!?U?P[T0-9]++\s++)?+([A-Z][A-Za-z0-9_.]*+)\s*+([^;]*+);")
_FUNC_RE = re.compile(r"^\s*(?:Function\s*:\s*(\S+)|\.text\.(\S+):)\s*$")  # cuobjdump | nvdisasm
_RES_FUNC_RE = re.compile(r"^\s*Function\s+(\S+):")
# `REG:40 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:380`; a name starts after a non-capital, so that findall
# does not rescan a run of capitals from each of its letters (quadratic in the run).
_RES_FIELD_RE = re.compile(r"(?<![A-Z])([A-Z]++(?:\[\d++\])?+):(\d++)")


@dataclass(frozen=True)
class Instruction:
    function: str
    offset: int
    predicate: str
    opcode: str
    operands: str


@dataclass(frozen=True)
class ResourceUsage:
    """Per-kernel resources as `cuobjdump -res-usage` reports them (bytes, except registers)."""

    registers: int
    shared_bytes: int
    local_bytes: int
    stack_bytes: int
    constant_bytes: int

    @property
    def uses_local_memory(self) -> bool:
        return self.local_bytes > 0 or self.stack_bytes > 0


def find_tool(name: str) -> str:
    """Path of `cuobjdump` or `nvdisasm`: the pip package's copy first, then PATH."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        path = find_nvidia_binary_utility(name)
    except Exception:  # an older or missing pathfinder: fall back to PATH
        path = None
    path = path or shutil.which(name)
    if not path:
        raise CodegenError(CODEGEN_TOOLCHAIN_MISSING, f"{name} was found neither in the nvidia-cuda-{name} pip "
                           "package nor on PATH", location=name)
    return path


def _run_on_cubin(tool: str, flags: list[str], cubin: bytes) -> str:
    if not isinstance(cubin, (bytes, bytearray)):
        raise CodegenError(CODEGEN_SASS_FAILED, f"expected cubin bytes, got {type(cubin).__name__}", location=tool)
    exe = find_tool(tool)
    with tempfile.TemporaryDirectory(prefix="tessera-sass-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        try:
            proc = subprocess.run([exe, *flags, path], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CodegenError(CODEGEN_SASS_FAILED, f"{tool} could not run: {exc}", location=tool) from None
    if proc.returncode != 0:
        why = (proc.stderr or proc.stdout).strip().splitlines()[:5]
        raise CodegenError(CODEGEN_SASS_FAILED, f"{tool} {' '.join(flags)} exited with {proc.returncode}: "
                           f"{' | '.join(why) or 'no message'}", location=tool)
    return proc.stdout


@lru_cache(maxsize=64)
def disassemble(cubin: bytes, tool: str = "cuobjdump") -> str:
    """SASS text of a cubin (`cuobjdump -sass`, or `nvdisasm -c` with tool='nvdisasm')."""
    if tool == "cuobjdump":
        return _run_on_cubin("cuobjdump", ["-sass"], cubin)
    if tool == "nvdisasm":
        return _run_on_cubin("nvdisasm", ["-c"], cubin)
    raise ValueError(f"tool must be 'cuobjdump' or 'nvdisasm', not {tool!r}")


def instructions(sass: str) -> list[Instruction]:
    """Every instruction line of SASS text, tagged with its function (`Function : f` or `.text.f:` headers)."""
    out, function = [], ""
    for line in sass.splitlines():
        head = _FUNC_RE.match(line)
        if head:
            function = head.group(1) or head.group(2)
            continue
        # Searching only up to the last ';' keeps the search linear: every start that reaches the operands
        # then finds its ';', instead of each scanning to the end of the line and failing.
        m = _INSTR_RE.search(line, 0, line.rfind(";") + 1)
        if m:
            out.append(Instruction(function, int(m.group(1), 16), (m.group(2) or "").strip(),
                                   m.group(3), m.group(4).strip()))
    return out


def _matches(opcode: str, wanted: str) -> bool:
    return opcode == wanted or opcode.startswith(wanted + ".")


def count_instructions(sass: str, opcode: str, function: str | None = None) -> int:
    """How many instructions are `opcode` or a variant of it ('HMMA' counts 'HMMA.16816.F32.BF16', not 'HGMMA')."""
    return sum(1 for ins in instructions(sass)
               if _matches(ins.opcode, opcode) and (function is None or ins.function == function))


@lru_cache(maxsize=64)
def resource_usage(cubin: bytes) -> dict[str, ResourceUsage]:
    """Registers, shared, local, stack and constant-bank-0 bytes of each kernel in the cubin."""
    text = _run_on_cubin("cuobjdump", ["-res-usage"], cubin)
    usage, function = {}, None
    for line in text.splitlines():
        head = _RES_FUNC_RE.match(line)
        if head:
            function = head.group(1)
            continue
        if function is None or "REG:" not in line:
            continue
        fields = {k: int(v) for k, v in _RES_FIELD_RE.findall(line)}
        usage[function] = ResourceUsage(registers=fields.get("REG", 0), shared_bytes=fields.get("SHARED", 0),
                                        local_bytes=fields.get("LOCAL", 0), stack_bytes=fields.get("STACK", 0),
                                        constant_bytes=fields.get("CONSTANT[0]", 0))
        function = None
    if not usage:
        raise CodegenError(CODEGEN_SASS_FAILED, "cuobjdump -res-usage reported no kernel", location="cuobjdump")
    return usage


def has_local_memory(sass_or_cubin: str | bytes) -> bool:
    """True if the code touches local memory: LDL/STL in the SASS, or (for a cubin) a stack frame or local bytes."""
    if isinstance(sass_or_cubin, (bytes, bytearray)):
        cubin = bytes(sass_or_cubin)
        if any(u.uses_local_memory for u in resource_usage(cubin).values()):
            return True
        sass_or_cubin = disassemble(cubin)
    return any(_matches(ins.opcode, op) for ins in instructions(sass_or_cubin) for op in LOCAL_MEMORY_OPCODES)
