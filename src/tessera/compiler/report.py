"""The compile report: what ptxas made of a kernel, and the performance problems that shows.

A kernel can compile, pass every numerics test and still run at a fraction of
its speed for reasons only the machine code shows: spilled registers, one CTA
per SM, a dot that never reached the tensor cores, wgmma serialised by ptxas.
`report(ck)` gathers them into a `CompileReport`: registers, shared memory and
local memory from `cuobjdump -res-usage`, the occupancy those allow
(`occupancy`), the tensor-core and CUDA-core FP instruction mix from the
SASS, and the ptxas log. Disassembly costs about 0.5 s for a GEMM, so the
report is built on first use and kept (`CompiledKernel.report`).

`tessera.compile` warns (TesseraPerformanceWarning) about the findings that are
cheap to see (`compile_findings`): local memory and a stack frame from the
resource usage (milliseconds), and a dot with no mma instruction in the PTX
(a text search: ptxas never makes HMMA or HGMMA out of anything else).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from tessera.ir import diagnostics as D
from tessera.target.nvidia.toolchain.sass import ResourceUsage, disassemble, instructions, resource_usage

from tessera.compiler.occupancy import Occupancy, limits, occupancy

DOT_OPS = frozenset({"tile.mma", "tile.dot", "tile.fragment_mma"})  # tl.dot traces to tile.mma
TENSOR_CORE_OPS = ("HGMMA", "HMMA")
CUDA_CORE_FP_OPS = ("FFMA", "FMUL", "FADD")
_PTX_MMA = re.compile(r"\b(?:wgmma\.mma_async|mma\.sync)\b")
# ptxas: `(C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due to ...`;
# C7510 and C7515 say the same for other reasons, so any serialised-wgmma line counts.
_SERIALIZED = re.compile(r"C7513|wgmma\S*\s+instructions\s+are\s+serialized", re.IGNORECASE)


@dataclass(frozen=True)
class Finding:
    """One performance problem: its stable code (diagnostics.COMPILE_PERF_*) and what was seen."""

    code: D.Code
    message: str

    def text(self) -> str:
        return f"{self.code.name}: {self.message}"


class TesseraPerformanceWarning(UserWarning):
    """A kernel compiled but will run slower than it should; `.code` and `.finding` say why.

    Also built from its message text alone (`TesseraPerformanceWarning(str(w))`), as pytest-xdist rebuilds a
    worker's warnings from their args; `.code` and `.finding` are then None."""

    def __init__(self, finding: Finding | str):
        if isinstance(finding, str):
            super().__init__(finding)
            self.code = self.finding = None
            return
        super().__init__(f"{finding.text()}\n  hint: {finding.code.hint}")
        self.code, self.finding = finding.code, finding


@dataclass(frozen=True)
class CompileReport:
    """Resources, occupancy, instruction mix and findings of one compiled kernel (bytes are per CTA for
    shared memory, per thread for local memory and the stack). `occupancy` is None for an arch with no
    limits in `occupancy.SM_LIMITS`."""

    kernel: str
    arch: str
    threads: int
    registers: int
    static_smem_bytes: int
    dynamic_smem_bytes: int
    local_bytes: int
    stack_bytes: int
    occupancy: Occupancy | None
    hgmma: int
    hmma: int
    ffma: int
    fmul: int
    fadd: int
    has_dot: bool
    warnings: tuple[Finding, ...]

    @property
    def smem_bytes(self) -> int:
        return self.static_smem_bytes + self.dynamic_smem_bytes

    @property
    def cuda_core_fp(self) -> int:
        """FFMA + FMUL + FADD: f32 arithmetic on the CUDA cores."""
        return self.ffma + self.fmul + self.fadd

    def text(self) -> str:
        """A few lines for a person: resources, occupancy, instruction mix, then one line per warning."""
        local = "no local memory" if not (self.local_bytes or self.stack_bytes) else \
            f"local {self.local_bytes} B + stack {self.stack_bytes} B per thread"
        occ = self.occupancy
        lines = [f"{self.kernel} {self.arch}: {self.threads} threads, {self.registers} registers/thread, "
                 f"{self.smem_bytes:,} B shared ({self.static_smem_bytes:,} static + {self.dynamic_smem_bytes:,} "
                 f"dynamic), {local}",
                 "  occupancy: unknown for this arch" if occ is None else
                 f"  occupancy: {occ.ctas_per_sm} CTA/SM, {occ.warps_per_sm} of {occ.max_warps_per_sm} warps "
                 f"({occ.fraction:.0%}), limited by {occ.limiter}",
                 f"  instructions: {self.hgmma} HGMMA, {self.hmma} HMMA, {self.cuda_core_fp} CUDA-core FP "
                 f"({self.ffma} FFMA, {self.fmul} FMUL, {self.fadd} FADD)"]
        lines += [f"  warning {w.text()}" for w in self.warnings] or ["  warnings: none"]
        return "\n".join(lines)


def build(kernel: str, arch: str, threads: int, dynamic_smem_bytes: int, usage: ResourceUsage,
          counts: dict[str, int], log: str, has_dot: bool) -> CompileReport:
    """The report of facts already gathered (`counts`: SASS opcode -> count, variants folded in)."""
    n = {op: counts.get(op, 0) for op in TENSOR_CORE_OPS + CUDA_CORE_FP_OPS}
    occ = occupancy(arch, usage.registers, usage.shared_bytes + dynamic_smem_bytes, threads)
    found = usage_findings(kernel, arch, usage) + serialized_wgmma(kernel, log)
    if has_dot and not (n["HGMMA"] or n["HMMA"]):
        found.append(_cuda_core_dot(kernel, arch, f"its SASS has no HMMA or HGMMA ({n['FFMA']} FFMA)"))
    return CompileReport(kernel, arch, threads, usage.registers, usage.shared_bytes, dynamic_smem_bytes,
                         usage.local_bytes, usage.stack_bytes, occ, n["HGMMA"], n["HMMA"], n["FFMA"], n["FMUL"],
                         n["FADD"], has_dot, tuple(found))


def report(ck) -> CompileReport:
    """The CompileReport of a CompiledKernel (disassembles its cubin: prefer the cached `ck.report`).

    Raises CODEGEN_TOOLCHAIN_MISSING without cuobjdump, CODEGEN_SASS_FAILED for an unreadable cubin.
    """
    sass = disassemble(ck.artifact.cubin)
    mine = [i for i in instructions(sass) if i.function == ck.name]
    counts = Counter(i.opcode.split(".", 1)[0] for i in (mine or instructions(sass)))
    return build(ck.name, ck.arch, ck.block[0], ck.smem_bytes, kernel_usage(ck), counts, ck.artifact.log,
                 has_dot(ck.traced.module))


def compile_findings(ck) -> list[Finding]:
    """The findings cheap enough for every `tessera.compile`: resource usage, and a dot with no mma in the
    PTX (the SASS is read only when the artifact has no PTX)."""
    found = usage_findings(ck.name, ck.arch, kernel_usage(ck))
    if has_dot(ck.traced.module):
        ptx = ck.artifact.ptx
        if ptx is not None and not _PTX_MMA.search(ptx):
            found.append(_cuda_core_dot(ck.name, ck.arch, "its PTX has no mma.sync or wgmma.mma_async"))
        elif ptx is None:
            found += [f for f in ck.report.warnings if f.code is D.COMPILE_PERF_DOT_ON_CUDA_CORES]
    return found


def kernel_usage(ck) -> ResourceUsage:
    """cuobjdump's resource usage of the kernel `ck.name` (of the cubin's only kernel if none has the name)."""
    usage = resource_usage(ck.artifact.cubin)
    return usage.get(ck.name) or next(iter(usage.values()))


def has_dot(module) -> bool:
    """Whether a (traced) module holds a tile dot: tile.mma, tile.dot or tile.fragment_mma."""
    return any(op.name in DOT_OPS for op in module.walk())


def usage_findings(kernel: str, arch: str, usage: ResourceUsage) -> list[Finding]:
    """Local memory, a stack frame and a full register file, from cuobjdump's resource usage."""
    found = []
    if usage.local_bytes > 0:
        found.append(Finding(D.COMPILE_PERF_SPILL, f"{kernel} ({arch}) uses {usage.local_bytes} B of local memory "
                                                   f"per thread at {usage.registers} registers"))
    if usage.stack_bytes > 0:
        found.append(Finding(D.COMPILE_PERF_STACK, f"{kernel} ({arch}) has a {usage.stack_bytes} B stack frame per "
                                                   f"thread at {usage.registers} registers (spills go there)"))
    sm = limits(arch)
    top = sm.max_registers_per_thread if sm is not None else 255
    if usage.registers >= top:
        found.append(Finding(D.COMPILE_PERF_REGISTER_LIMIT, f"{kernel} ({arch}) uses {usage.registers} registers "
                                                            f"per thread, the most {arch} allows"))
    return found


def serialized_wgmma(kernel: str, log: str) -> list[Finding]:
    """One finding per distinct ptxas line saying wgmma instructions were serialised, quoting it."""
    lines = dict.fromkeys(line.strip() for line in log.splitlines() if _SERIALIZED.search(line))
    return [Finding(D.COMPILE_PERF_WGMMA_SERIALIZED, f"{kernel}: ptxas says {line!r}") for line in lines]


def _cuda_core_dot(kernel: str, arch: str, why: str) -> Finding:
    return Finding(D.COMPILE_PERF_DOT_ON_CUDA_CORES, f"{kernel} ({arch}) has a tile dot, but {why}: the dot runs "
                                                     "on CUDA cores")
