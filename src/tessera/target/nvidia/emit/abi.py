"""What an emitted kernel is to the runtime: its C parameters (`KernelParam`) and launch facts (`EmittedKernel`).

Plain records, apart from the emitter that makes them, so a launch (and a launch record read back from disk:
`tessera.compiler.records`) needs neither xDSL nor the emitter.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelParam:
    """One C parameter: `name` of `ctype`, standing for `role` of func argument `arg`.

    Roles: ptr, size, stride, value (see the module docstring); on sm_90a also
    `tmap` (a TMA tensor map of 2-D memref argument `arg`, read in boxes of
    `box` = (rows, cols) with a `swizzle`-byte swizzle, zero fill out of bounds)
    and `grid` (logical grid size along axis `dim` of a persistent kernel; `arg` is -1), and `scratch`
    (a runtime-owned buffer of `dim` bytes per logical tile and `per_cta` bytes per launched CTA, for split-K's
    and stream-K's partials and counters, after `head` bytes that the parameter points past: the dynamic tile
    scheduler's counter; `arg` is -1).
    """

    name: str
    ctype: str
    arg: int
    role: str
    dim: int | None = None
    box: tuple[int, ...] = ()
    swizzle: int = 0
    per_cta: int = 0
    head: int = 0


@dataclass(frozen=True)
class EmittedKernel:
    name: str
    source: str
    arch: str
    num_threads: int
    smem_bytes: int
    params: tuple[KernelParam, ...]
    persistent: bool = False  # launch min(logical CTAs, SMs) CTAs; the logical grid goes in `grid` params
    cluster: int = 1  # CTAs per thread-block cluster (`__cluster_dims__`): the launch grid is a multiple of it
    splitk: int = 1  # units of work per logical CTA of a persistent split-K kernel (more CTAs fill the device)
    streamk: bool = False  # a stream-K kernel: launch a CTA per SM whatever the grid (they share the K steps)
    cluster_axis: int = 0  # the logical-grid axis along which a cluster takes neighbouring tiles (-1: it shares each)
    coresident: bool = False  # its CTAs wait for each other (split-K fixup=scatter): all must be resident at once
