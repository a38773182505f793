"""How many CTAs of a kernel fit on one SM: the CUDA occupancy calculator's arithmetic, per arch.

An SM holds a CTA only if its registers, shared memory and warps all fit next
to the CTAs already there, so the occupancy is the smallest of three limits
(and the per-SM CTA cap). The rules are those of `cuda_occupancy.h`, which the
driver's `cudaOccupancyMaxActiveBlocksPerMultiprocessor` follows:

* registers are allocated per warp, `regs * 32` rounded up to 256, out of four
  sub-partitions of 16,384 each (a warp's registers never straddle two), so
  1 warp of 200 registers fits 8 per SM, not 65,536 // 6,400 = 10; and the
  hardware refuses a CTA whose warps, rounded up to 4, need more than 65,536;
* shared memory per CTA is static + dynamic + the 1 KiB the driver reserves
  for every CTA (sm_80 and later), rounded up to 128 bytes, out of the SM's
  largest carve-out (the runtime raises the opt-in limit, so the driver picks it);
* warps: threads rounded up to whole warps, out of the SM's thread limit.

The limits of each arch are data (`SM_LIMITS`, keyed by (major, minor): sm_90a
is sm_90); an arch not in the table has no estimate (None), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from tessera.target.arch import Arch

WARP = 32


@dataclass(frozen=True)
class SmLimits:
    """What one SM of an arch holds (CUDA C Programming Guide, "Compute Capabilities" table)."""

    shared_bytes: int                   # per SM: the largest shared-memory carve-out
    threads: int = 2048                 # per SM
    ctas: int = 32                      # per SM
    registers: int = 65536              # per SM, and per CTA
    max_registers_per_thread: int = 255
    max_threads_per_cta: int = 1024
    register_granularity: int = 256     # registers per warp are allocated in units of 256
    sub_partitions: int = 4             # register file quarters; a warp's registers live in one
    shared_granularity: int = 128       # bytes
    reserved_shared_per_cta: int = 1024  # the driver's own shared memory in every CTA

    @property
    def warps(self) -> int:
        return self.threads // WARP


KIB = 1024
SM_LIMITS: dict[tuple[int, int], SmLimits] = {
    (8, 0): SmLimits(shared_bytes=164 * KIB),                          # A100
    (8, 6): SmLimits(shared_bytes=100 * KIB, threads=1536, ctas=16),   # GA10x
    (8, 9): SmLimits(shared_bytes=100 * KIB, threads=1536, ctas=24),   # AD10x
    (9, 0): SmLimits(shared_bytes=228 * KIB),                          # H100 / H200 (sm_90 and sm_90a)
}


@dataclass(frozen=True)
class Occupancy:
    """CTAs and warps of one kernel resident on one SM, and which resource stopped the next CTA."""

    ctas_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str  # "threads", "registers", "shared memory", "the CTA limit", or several joined by " and "
    #              (each alone allows exactly this many CTAs); "launch" when no CTA fits at all

    @property
    def fraction(self) -> float:
        """Resident warps as a fraction of the SM's warp slots (the calculator's "occupancy")."""
        return self.warps_per_sm / self.max_warps_per_sm


def limits(arch: str) -> SmLimits | None:
    """The SM limits of `arch` (`sm_90a` reads as sm_90), or None for an arch not in SM_LIMITS."""
    found = Arch.read(arch)
    return SM_LIMITS.get((found.major, found.minor)) if found is not None else None


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(arch: str, registers: int, shared_bytes: int, threads: int) -> Occupancy | None:
    """CTAs per SM of a kernel with `registers` per thread, `shared_bytes` (static + dynamic) per CTA and
    `threads` per CTA on `arch`; None when the arch has no limits in SM_LIMITS. A CTA that cannot launch
    at all (too many threads, registers or shared bytes) gives 0 CTAs with limiter "launch"."""
    sm = limits(arch)
    if sm is None:
        return None
    warps = -(-threads // WARP)
    regs_per_warp = _round_up(registers * WARP, sm.register_granularity)
    smem = _round_up(shared_bytes + sm.reserved_shared_per_cta, sm.shared_granularity)
    if (threads < 1 or threads > sm.max_threads_per_cta or registers > sm.max_registers_per_thread
            or regs_per_warp * _round_up(warps, sm.sub_partitions) > sm.registers or smem > sm.shared_bytes):
        return Occupancy(0, 0, sm.warps, "launch")
    by = {"threads": sm.warps // warps}
    if regs_per_warp:
        per_quarter = (sm.registers // sm.sub_partitions) // regs_per_warp
        by["registers"] = per_quarter * sm.sub_partitions // warps
    by["shared memory"], by["the CTA limit"] = sm.shared_bytes // smem, sm.ctas
    ctas = min(by.values())
    return Occupancy(ctas, ctas * warps, sm.warps, " and ".join(k for k, n in by.items() if n == ctas))
