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
deterministic; a cubin hit skips NVRTC (1 to 5 s per kernel), and a launch
record (`record_store`: keyed by the traced IR with locations, the requested
pipeline text, the arch, the options, the Tessera build and the toolchain)
skips lowering and emission too (0.1-0.3 s). `.source` is always at hand:
the record keeps it.

The warm path is `compile_cached(kernel, specs, meta, arch=...)`: an
in-process dict keyed by (kernel, specialisation, meta, arch, stages,
options) that skips tracing too, so a repeated call is a dictionary lookup.
The arch defaults to the device's (`sm_90` on an H200): the portable
mma.sync family. `sm_90a` (wgmma) is only built when asked for.

Every compile warns (TesseraPerformanceWarning, tessera.compiler.report) when
the kernel touches local memory or a dot falls off the tensor cores; only the
cheap checks run here (resource usage, the PTX text), `ck.report` has the rest.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import replace

from typing import TYPE_CHECKING

from tessera.ir import diagnostics as D
from tessera.target.nvidia.toolchain.nvrtc import parse_arch

from tessera.compiler import record_store, testing
from tessera.compiler.launch_shape import LaunchShape

if TYPE_CHECKING:  # the tracer, passes and emitter load on the first compile, not with the driver
    from tessera.compiler.kernel import CompiledKernel
    from tessera.dsl.kernel import Kernel, TracedKernel
    from tessera.runtime.cache import CompileCache

KEY_FORMAT = "tessera-compile-1"
RECORD_FORMAT = "tessera-compile-record-1"  # launch records keyed by the traced IR (`record_store`)


def default_pipeline(arch: str, shape: LaunchShape | None = None, **knobs) -> str:
    """The named pipeline for `arch` with a launch shape's knobs as options (`LaunchShape.pipeline`)."""
    return _shape(shape, knobs).pipeline(arch)


def _shape(shape: LaunchShape | None, knobs: dict) -> LaunchShape:
    """`shape`, or one built from keyword knobs (COMPILE_LAUNCH_SHAPE_INVALID for both, or a bad knob)."""
    if shape is None:
        return LaunchShape.of(knobs)
    if not isinstance(shape, LaunchShape):
        raise D.TesseraError(D.COMPILE_LAUNCH_SHAPE_INVALID, f"shape must be a LaunchShape, got {type(shape).__name__}")
    if knobs:
        raise D.TesseraError(D.COMPILE_LAUNCH_SHAPE_INVALID, f"shape= and knobs {', '.join(sorted(knobs))} given "
                                                             "together", hint="put every knob in the LaunchShape")
    return shape


_memo: dict[tuple, CompiledKernel] = {}
other_memos: list[dict] = []  # in-process kernels kept elsewhere (tessera.compiler.records): clear_memo forgets them


def device_arch(device: int = 0) -> str:
    """The arch Tessera builds for on `device`: `sm_XY` (never the 'a' variant); RUNTIME_NO_DEVICE without one."""
    host = testing.backend()
    if host is not None:
        return host.arch
    from tessera.runtime.device import device_info
    return device_info(device).arch


def _check_input(traced) -> TracedKernel:
    from tessera.dsl.kernel import Kernel, TracedKernel

    if isinstance(traced, TracedKernel):
        return traced
    if isinstance(traced, Kernel):
        raise D.TesseraError(D.COMPILE_INPUT_INVALID, f"tessera.compile got the kernel {traced.name} itself, not a "
                                                      "traced specialisation of it (did you forget .trace(...)?)")
    raise D.TesseraError(D.COMPILE_INPUT_INVALID, f"tessera.compile takes a TracedKernel, got "
                                                  f"{type(traced).__name__}")


def lower(traced: TracedKernel, pipeline: str, arch: str):
    """Run `pipeline` on a copy of the traced module; returns (module, canonical pipeline text)."""
    from tessera.ir.dialect import make_context
    from tessera.passes.pipeline import parse_pipeline, pipeline_text

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


def compile(traced, arch: str | None = None, *, shape: LaunchShape | None = None, pipeline: str | None = None,
            options=None, cache: CompileCache | None = None, **knobs) -> CompiledKernel:
    """Compile a TracedKernel to a CompiledKernel for `arch` (default: the device's, e.g. sm_90).

    shape: the launch shape (`tessera.compiler.launch_shape.LaunchShape`: stages, schedule, cluster, splitk,
        multicast, streamk, fixup, ...), or give its knobs as keywords (`stages=4, schedule="pingpong"`); the default is
        LaunchShape() (stages=1). Only `stages` matters off sm_90a.
    pipeline: replaces the default `tessera-lower-to-nv{arch=ARCH stages=N ...}`
        (for experiments; it must lower every tile op, for the same arch; not with a shape or knobs).
    options: NVRTC options (see tessera.target.nvidia.toolchain.nvrtc.OPTION_TYPES).
    cache: a CompileCache (default: the process-wide one, memory + disk).
    Errors are coded: COMPILE_* here, OPT_* for a bad pipeline, TILE_*/NV_*
    from the passes (e.g. TILE_FRAGMENT_UNSUPPORTED for an mma with no
    fragment lowering), EMIT_*, CODEGEN_* from NVRTC, RUNTIME_NO_DEVICE when
    no arch is given and there is no GPU.
    Warns TesseraPerformanceWarning (COMPILE_PERF_SPILL, COMPILE_PERF_STACK, COMPILE_PERF_REGISTER_LIMIT,
    COMPILE_PERF_DOT_ON_CUDA_CORES) for a kernel that will run slower than it should.
    """
    from tessera.compiler.kernel import CompiledKernel
    from tessera.runtime.cache import cache_key, default_cache
    from tessera.target.nvidia.emit.cuda import emit_cuda

    traced = _check_input(traced)
    injected = testing.faults()
    if injected is not None and injected.arch is not None:
        arch = injected.arch
    if arch is None:
        arch = device_arch()
    parse_arch(arch)  # CODEGEN_ARCH_UNSUPPORTED for a malformed string, before any pass runs
    if pipeline is not None and (shape is not None or knobs):
        raise D.TesseraError(D.COMPILE_LAUNCH_SHAPE_INVALID, "pipeline= and a launch shape given together: the "
                                                             "pipeline text already sets every option",
                             hint="put the knobs in the pipeline's options, or drop pipeline=")
    requested = pipeline or _shape(shape, knobs).pipeline(arch)
    cache = cache if cache is not None else default_cache()
    ir = traced.ir_text(locations=True)  # keys the launch record and the cubin
    record = None
    if injected is None and cache.disk:  # a launch record for this IR, pipeline, arch and options: no lowering
        record = record_store.key_of([RECORD_FORMAT, ir, requested, arch, repr(options)])
        ck = record_store.load(cache, record, lambda: traced)
        if ck is not None:
            _warn_performance(ck)
            return ck
    module, canonical = lower(traced, requested, arch)
    emitted = emit_cuda(module, traced.name)
    if injected is not None and injected.source is not None:
        emitted = replace(emitted, source=injected.source(emitted.source))
    key_text = json.dumps({"format": KEY_FORMAT, "ir": ir, "pipeline": canonical,
                           "source_sha256": hashlib.sha256(emitted.source.encode()).hexdigest()}, sort_keys=True)
    artifact = cache.get_or_compile(emitted.source, arch, options=options, key_text=key_text)
    if injected is not None and injected.artifact is not None:
        artifact = injected.artifact(artifact)
    func = next(f for f in module.walk() if f.name == "func.func" and f.sym_name.data == emitted.name)
    ck = CompiledKernel(traced, emitted, artifact, canonical, cache_key(key_text, arch, options),
                        tuple(func.function_type.inputs))
    if record is not None:
        record_store.save(cache, record, ck)
    _warn_performance(ck)
    return ck


def _warn_performance(ck: CompiledKernel) -> None:
    """Warn about each cheap finding of the compile report (`report.compile_findings`)."""
    from tessera.compiler.report import TesseraPerformanceWarning, compile_findings
    from tessera.target.nvidia.toolchain.nvrtc import CodegenError

    try:
        found = compile_findings(ck)
    except CodegenError:  # no cuobjdump, or a damaged cubin (fault injection): loading it reports that
        return
    for finding in found:
        warnings.warn(TesseraPerformanceWarning(finding), stacklevel=3)


def compile_cached(kernel: Kernel, specs: tuple, meta: dict, *, arch: str | None = None,
                   shape: LaunchShape | None = None, options=None, cache: CompileCache | None = None,
                   **knobs) -> CompiledKernel:
    """`compile(kernel.trace(*specs, **meta), ...)`, memoised in-process on (kernel, specs, meta, arch, shape, ...).

    A hit costs one dictionary lookup: no tracing, lowering or hashing.
    Bypassed while a `testing` hook is active.
    """
    arch = arch or device_arch()
    shape = _shape(shape, knobs)
    opts = tuple(sorted(options.items())) if isinstance(options, dict) else options
    where = None if cache is None else (str(cache.directory), cache.disk)  # a kernel compiled into another cache
    key = (kernel, specs, tuple(sorted(meta.items())), arch, shape, opts, where)  # is not this cache's
    hooked = testing.active()
    hit = None if hooked else _memo.get(key)
    if hit is None:
        hit = compile(kernel.trace(*specs, **meta), arch, shape=shape, options=options, cache=cache)
        if not hooked:
            _memo[key] = hit
    return hit


def clear_memo() -> None:
    """Forget the in-process compiled kernels (the CompileCache and the launch records keep their entries)."""
    _memo.clear()
    for memo in other_memos:
        memo.clear()
