"""The compile driver: traced kernel -> named pipeline -> CUDA C++ -> NVRTC cubin (cached) -> CompiledKernel.

    ck = tessera.compile(gemm.trace(*specs, BM=128), arch="sm_90")
    ck.launch(grid, [A, B, C, alpha])

One road (DESIGN section 1): the pipeline is `tessera-lower-to-nv{arch=...
stages=...}` parsed by the pass registry, exactly what `tessera-opt
--pass-pipeline` runs. After it, no `tile.*` op may remain (lesson 2:
COMPILE_PIPELINE_INCOMPLETE names the op before emission would refuse it),
and the IR must have been lowered for the arch the cubin is built for.

Cache key (lesson 6): the traced IR text with locations (the emitted text
quotes them), the canonical pipeline text with every option explicit, the
sha256 of the emitted source, the arch, the NVRTC options and the toolchain
versions; `CompileCache` keeps entries in memory and on disk
($TESSERA_CACHE_DIR, else ~/.cache/tessera). Lowering and emission are
deterministic and run on every compile (about 0.1 s), so `.source` is
always at hand; a cache hit skips NVRTC (1 to 5 s per kernel).

The warm path is `compile_cached(kernel, specs, meta, arch=...)`: an
in-process dict keyed by (kernel, specialisation, meta, arch, stages,
options) that skips tracing too, so a repeated call is a dictionary lookup.
The arch defaults to the device's (`sm_90` on an H200): the portable
mma.sync family. `sm_90a` (wgmma) is only built when asked for.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from tessera.codegen.emit_cuda import emit_cuda
from tessera.codegen.nvrtc import parse_arch
from tessera.dsl.kernel import Kernel, TracedKernel
from tessera.ir import diagnostics as D
from tessera.ir.dialect import make_context
from tessera.passes.pipeline import parse_pipeline, pipeline_text
from tessera.runtime.cache import CompileCache, cache_key, default_cache

from tessera.compiler import testing
from tessera.compiler.kernel import CompiledKernel

DEFAULT_PIPELINE = "tessera-lower-to-nv{{arch={arch} stages={stages} schedule={schedule}}}"
KEY_FORMAT = "tessera-compile-1"


def default_pipeline(arch: str, stages: int = 1, schedule: str = "cooperative", cluster: int = 1,
                     splitk: int = 1, multicast: str = "b", streamk: bool = False) -> str:
    """The named pipeline with these options (cluster, splitk, multicast and streamk named only when not the
    default: older keys stay valid)."""
    text = DEFAULT_PIPELINE.format(arch=arch, stages=stages, schedule=schedule)
    extra = "".join(f" {name}={v}" for name, v, default in (("cluster", cluster, 1), ("splitk", splitk, 1),
                                                            ("multicast", multicast, "b"),
                                                            ("streamk", int(streamk), 0)) if v != default)
    return text[:-1] + extra + "}"

_memo: dict[tuple, CompiledKernel] = {}


def device_arch(device: int = 0) -> str:
    """The arch Tessera builds for on `device`: `sm_XY` (never the 'a' variant); RUNTIME_NO_DEVICE without one."""
    host = testing.backend()
    if host is not None:
        return host.arch
    from tessera.runtime.device import device_info
    return device_info(device).arch


def _check_input(traced) -> TracedKernel:
    if isinstance(traced, TracedKernel):
        return traced
    if isinstance(traced, Kernel):
        raise D.TesseraError(D.COMPILE_INPUT_INVALID, f"tessera.compile got the kernel {traced.name} itself, not a "
                                                      "traced specialisation of it (did you forget .trace(...)?)")
    raise D.TesseraError(D.COMPILE_INPUT_INVALID, f"tessera.compile takes a TracedKernel, got "
                                                  f"{type(traced).__name__}")


def lower(traced: TracedKernel, pipeline: str, arch: str):
    """Run `pipeline` on a copy of the traced module; returns (module, canonical pipeline text)."""
    parsed = parse_pipeline(pipeline)
    canonical = pipeline_text(parsed)
    module = traced.module.clone()
    parsed.apply(make_context(), module)
    leftover = next((op for op in module.walk() if op.name.startswith("tile.")), None)
    if leftover is not None:
        raise D.TesseraError(D.COMPILE_PIPELINE_INCOMPLETE, f"{leftover.name} is still in @{traced.name} after "
                                                            f"{canonical}: CUDA emission cannot take it", op=leftover)
    lowered_for = {str(f.attributes["nv.arch"].data) for f in module.walk()
                   if f.name == "func.func" and "nv.arch" in f.attributes}
    if lowered_for and lowered_for != {arch}:
        raise D.TesseraError(D.COMPILE_ARCH_MISMATCH, f"the pipeline {canonical} lowered @{traced.name} for "
                                                      f"{', '.join(sorted(lowered_for))}, but the cubin is for {arch}")
    return module, canonical


def compile(traced, arch: str | None = None, *, stages: int = 1, schedule: str = "cooperative", cluster: int = 1,
            splitk: int = 1, multicast: str = "b", streamk: bool = False, pipeline: str | None = None, options=None,
            cache: CompileCache | None = None) -> CompiledKernel:
    """Compile a TracedKernel to a CompiledKernel for `arch` (default: the device's, e.g. sm_90).

    stages: software-pipelining depth of the K-loop copies (pipeline-smem; on sm_90a the TMA ring).
    schedule: sm_90a wgmma kernels: "cooperative" or "pingpong" (warp-specialize); ignored elsewhere.
    cluster: sm_90a wgmma kernels: CTAs per thread-block cluster (1 or 2; with 2 the pair shares B through
        TMA multicast); ignored elsewhere.
    splitk: sm_90a wgmma kernels: K splits per tile (1 to 16), summed in one launch through a scratch buffer
        the runtime owns; ignored elsewhere.
    multicast: with cluster=2, the operand the CTA pair shares: "b" (pairs of tile rows) or "a" (pairs of tile
        columns, for few tile rows); ignored elsewhere.
    streamk: sm_90a wgmma kernels: share the K steps of the tiles that do not fill a whole wave equally among
        the CTAs (one per SM), so no SM idles in a partial last wave; not with splitk > 1. Ignored elsewhere.
    pipeline: replaces the default `tessera-lower-to-nv{arch=ARCH stages=N}`
        (for experiments; it must lower every tile op, for the same arch).
    options: NVRTC options (see tessera.codegen.nvrtc.OPTION_TYPES).
    cache: a CompileCache (default: the process-wide one, memory + disk).
    Errors are coded: COMPILE_* here, OPT_* for a bad pipeline, TILE_*/NV_*
    from the passes (e.g. TILE_FRAGMENT_UNSUPPORTED for an mma with no
    fragment lowering), EMIT_*, CODEGEN_* from NVRTC, RUNTIME_NO_DEVICE when
    no arch is given and there is no GPU.
    """
    traced = _check_input(traced)
    injected = testing.faults()
    if injected is not None and injected.arch is not None:
        arch = injected.arch
    if arch is None:
        arch = device_arch()
    parse_arch(arch)  # CODEGEN_ARCH_UNSUPPORTED for a malformed string, before any pass runs
    module, canonical = lower(traced, pipeline or default_pipeline(arch, stages, schedule, cluster, splitk, multicast,
                                                                             streamk), arch)
    emitted = emit_cuda(module, traced.name)
    if injected is not None and injected.source is not None:
        emitted = replace(emitted, source=injected.source(emitted.source))
    key_text = json.dumps({"format": KEY_FORMAT, "ir": traced.ir_text(locations=True), "pipeline": canonical,
                           "source_sha256": hashlib.sha256(emitted.source.encode()).hexdigest()}, sort_keys=True)
    cache = cache if cache is not None else default_cache()
    artifact = cache.get_or_compile(emitted.source, arch, options=options, key_text=key_text)
    if injected is not None and injected.artifact is not None:
        artifact = injected.artifact(artifact)
    func = next(f for f in module.walk() if f.name == "func.func" and f.sym_name.data == emitted.name)
    return CompiledKernel(traced, emitted, artifact, canonical, cache_key(key_text, arch, options),
                          tuple(func.function_type.inputs))


def compile_cached(kernel: Kernel, specs: tuple, meta: dict, *, arch: str | None = None, stages: int = 1,
                   schedule: str = "cooperative", cluster: int = 1, splitk: int = 1, multicast: str = "b",
                   streamk: bool = False, options=None,
                   cache: CompileCache | None = None) -> CompiledKernel:
    """`compile(kernel.trace(*specs, **meta), ...)`, memoised in-process on (kernel, specs, meta, arch, ...).

    A hit costs one dictionary lookup: no tracing, lowering or hashing.
    Bypassed while a `testing` hook is active.
    """
    arch = arch or device_arch()
    opts = tuple(sorted(options.items())) if isinstance(options, dict) else options
    key = (kernel, specs, tuple(sorted(meta.items())), arch, stages, schedule, cluster, splitk, multicast, streamk,
           opts)
    hooked = testing.active()
    hit = None if hooked else _memo.get(key)
    if hit is None:
        hit = compile(kernel.trace(*specs, **meta), arch, stages=stages, schedule=schedule, cluster=cluster,
                      splitk=splitk, multicast=multicast, streamk=streamk, options=options, cache=cache)
        if not hooked:
            _memo[key] = hit
    return hit


def clear_memo() -> None:
    """Forget the in-process compiled kernels (the CompileCache keeps its own entries)."""
    _memo.clear()
