"""CUDA C++ text -> cubin with NVRTC, as a hashable, reproducible artifact.

The emitter hands us CUDA C++ text; everything after that (the arch flag, the
compile options, the toolchain versions) is recorded in the `CompiledArtifact`
so the compile cache can key on it and the runtime can refuse a cubin whose
bytes no longer match its hash (DESIGN.md section 3, lessons 5 and 6).

NVRTC is reached through cuda.bindings' `nvrtc` module, which needs no GPU or
driver (cuda.core's Program wraps the same calls; its import cost a cold compile
0.1 s). The options are spelled as cuda.core's ProgramOptions spells them (a
test holds the two to the same flags). The program always gets an explicit
name: the name lands in the cubin with line info on, and a random one would
break byte-identity.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache

from tessera.target.arch import Arch
from tessera.ir.diagnostics import (CODEGEN_ARCH_UNSUPPORTED, CODEGEN_COMPILE_FAILED, CODEGEN_OPTION_INVALID,
                                    CODEGEN_TOOLCHAIN_MISSING, TesseraError)

DEFAULT_PROGRAM_NAME = "tessera_kernel.cu"
LOG_LINES = 20  # lines of the NVRTC log quoted in a compile error

# ProgramOptions fields a caller may set, with the Python types their values take.
# `arch` and `name` are owned by compile_cuda; options that read files
# (include_path, pre_include, pch) are left out because the cache key cannot see
# the files' contents.
OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "lineinfo": (bool,), "debug": (bool,), "device_code_optimize": (bool,),
    "max_register_count": (int,), "ftz": (bool,), "prec_sqrt": (bool,), "prec_div": (bool,),
    "fma": (bool,), "use_fast_math": (bool,), "extra_device_vectorization": (bool,),
    "restrict": (bool,), "disable_warnings": (bool,), "std": (str,),
    "define_macro": (str, tuple), "ptxas_options": (str, tuple), "diag_suppress": (int, tuple),
}


class CodegenError(TesseraError):
    """A coded toolchain failure; located at the compiler log's first error when there is one."""

    def __init__(self, code, message, location="nvrtc", hint=None):
        super().__init__(code, message, hint=hint)
        self.with_location(location)


@dataclass(frozen=True)
class CompiledArtifact:
    """One compiled program: the cubin and everything that decided its bytes.

    `sha256` is the hex digest of `cubin`; `verify()` recomputes it. `options`
    and `name_expressions` are canonical tuples (see `normalize_options`), and
    `symbol_mapping` maps each name expression to its lowered (mangled) name.
    """

    cubin: bytes
    arch: str
    sha256: str
    ptx: str | None = None
    log: str = ""
    options: tuple[tuple[str, object], ...] = ()
    name_expressions: tuple[str, ...] = ()
    symbol_mapping: tuple[tuple[str, str], ...] = ()
    toolchain: tuple[tuple[str, str], ...] = ()
    program_name: str = DEFAULT_PROGRAM_NAME
    source_sha256: str = field(default="", compare=False)

    def verify(self) -> bool:
        """True when the cubin bytes still hash to `sha256`."""
        return hashlib.sha256(self.cubin).hexdigest() == self.sha256


def parse_arch(arch: str) -> tuple[int, int, str]:
    """`'sm_90a'` -> `(9, 0, 'a')`; a malformed string is a CODEGEN_ARCH_UNSUPPORTED error."""
    found = Arch.read(arch)
    if found is None:
        raise CodegenError(CODEGEN_ARCH_UNSUPPORTED, f"arch {arch!r} is not of the form sm_<major><minor>[a|f]")
    return found.major, found.minor, found.suffix


def normalize_options(options) -> tuple[tuple[str, object], ...]:
    """Check option names and value types; return them sorted, lists made tuples (the cache-key form)."""
    if options is None:
        return ()
    items = options.items() if hasattr(options, "items") else options
    out = {}
    for name, value in items:
        if name not in OPTION_TYPES:
            raise CodegenError(CODEGEN_OPTION_INVALID, f"unknown compile option {name!r}; known: "
                               f"{', '.join(sorted(OPTION_TYPES))}")
        if isinstance(value, list):
            value = tuple(value)
        allowed = OPTION_TYPES[name]
        bad_bool = isinstance(value, bool) and bool not in allowed
        if bad_bool or not isinstance(value, allowed) or (
                isinstance(value, tuple) and not all(isinstance(v, (str, int)) for v in value)):
            raise CodegenError(CODEGEN_OPTION_INVALID, f"compile option {name!r} takes "
                               f"{' or '.join(t.__name__ for t in allowed)}, got {value!r}")
        out[name] = value
    return tuple(sorted(out.items()))


def _nvrtc():
    """Import the NVRTC bindings and load libnvrtc, or fail with CODEGEN_TOOLCHAIN_MISSING."""
    try:
        from cuda.bindings import nvrtc
        err, major, minor = nvrtc.nvrtcVersion()
    except (ImportError, OSError, RuntimeError) as exc:  # pathfinder's DynamicLibNotFoundError is a RuntimeError
        raise CodegenError(CODEGEN_TOOLCHAIN_MISSING, f"NVRTC is not available: {type(exc).__name__}: {exc}") from None
    if int(err) != 0:
        raise CodegenError(CODEGEN_TOOLCHAIN_MISSING, f"nvrtcVersion failed with {err!r}")
    return nvrtc, major, minor


@lru_cache(maxsize=1)
def _dist_versions() -> dict[str, str]:
    """Installed versions by distribution name, from the `*.dist-info` directory names on sys.path: what
    importlib.metadata reports, without its 40 ms import (a tune key is made on a warm process's first call)."""
    import os
    import sys

    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            if n.endswith(".dist-info"):
                dist, _, version = n[:-len(".dist-info")].partition("-")
                found.setdefault(dist.lower().replace("_", "-"), version)
    return found


def _dist_version(name: str) -> str:
    version = _dist_versions().get(name)
    if version is not None:
        return version
    from importlib import metadata  # a distribution installed some other way (an egg, a .pth)

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


@lru_cache(maxsize=1)
def toolchain_versions() -> tuple[tuple[str, str], ...]:
    """Versions that decide the cubin bytes: libnvrtc's API version and the pip packages around it.

    With the pip NVRTC the API version is its package's major.minor (the library cuda-pathfinder loads), so
    no NVRTC import (80 ms) is needed; otherwise libnvrtc is asked."""
    pip_nvrtc = _dist_version("nvidia-cuda-nvrtc")
    if pip_nvrtc != "absent" and pip_nvrtc.count(".") >= 1:
        api = ".".join(pip_nvrtc.split(".")[:2])
    else:
        _, major, minor = _nvrtc()
        api = f"{major}.{minor}"
    return (("nvrtc", api), ("nvidia-cuda-nvrtc", pip_nvrtc), ("cuda-bindings", _dist_version("cuda-bindings")),
            ("cuda-core", _dist_version("cuda-core")))


@lru_cache(maxsize=1)
def supported_archs() -> tuple[int, ...]:
    """Compute capabilities (as 80, 90, ...) this NVRTC can build SASS for."""
    nvrtc, _, _ = _nvrtc()
    err, archs = nvrtc.nvrtcGetSupportedArchs()
    return tuple(archs) if int(err) == 0 else ()


def check_arch(arch: str) -> None:
    major, minor, _ = parse_arch(arch)
    known = supported_archs()
    if known and major * 10 + minor not in known:
        raise CodegenError(CODEGEN_ARCH_UNSUPPORTED, f"this NVRTC cannot build {arch}; it supports "
                           f"{', '.join(f'sm_{a}' for a in known)}")


def _first_error_location(log: str, program_name: str) -> str:
    m = re.search(rf"{re.escape(program_name)}\((\d+)\): (?:catastrophic )?error", log)
    return f"{program_name}:{m.group(1)}:1" if m else program_name


def _read(size_of, read, handle) -> bytes | None:
    """One of NVRTC's size-then-copy results of a program (log, PTX, cubin), or None where it will not say."""
    err, size = size_of(handle)
    if int(err) != 0 or size == 0:
        return None
    buf = b" " * size
    (err,) = read(handle, buf)
    return buf if int(err) == 0 else None


def _text_of(data: bytes | None) -> str:
    return "" if data is None else data.rstrip(b"\0").decode("utf-8", "replace")


def _ptx_of(nvrtc, handle) -> str | None:
    """NVRTC keeps the PTX of a cubin compile; read it from the program (None if it will not say)."""
    return _text_of(_read(nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX, handle)) or None


def nvrtc_flags(arch: str, options: tuple[tuple[str, object], ...]) -> list[bytes]:
    """The NVRTC command line of `arch` and normalized `options`, in cuda.core ProgramOptions' spelling and
    order (off-by-default switches set False add nothing; list values repeat their flag)."""
    opts = dict(options)

    def many(name):
        v = opts.get(name)
        return [] if v is None else list(v) if isinstance(v, tuple) else [v]

    def tf(v):
        return "true" if v else "false"

    flags = [f"-arch={arch}"]
    flags += ["--device-debug"] if opts.get("debug") else []
    flags += ["--generate-line-info"] if opts.get("lineinfo") else []
    flags += ["--dopt=on"] if opts.get("device_code_optimize") else []
    flags += [f"--ptxas-options={v}" for v in many("ptxas_options")]
    flags += [f"--maxrregcount={opts['max_register_count']}"] if "max_register_count" in opts else []
    for name, flag in (("ftz", "ftz"), ("prec_sqrt", "prec-sqrt"), ("prec_div", "prec-div"), ("fma", "fmad")):
        flags += [f"--{flag}={tf(opts[name])}"] if name in opts else []
    flags += ["--use_fast_math"] if opts.get("use_fast_math") else []
    flags += ["--extra-device-vectorization"] if opts.get("extra_device_vectorization") else []
    flags += [f"--define-macro={v}" for v in many("define_macro")]
    flags += [f"--std={opts['std']}"] if "std" in opts else []
    flags += ["--disable-warnings"] if opts.get("disable_warnings") else []
    flags += ["--restrict"] if opts.get("restrict") else []
    flags += [f"--diag-suppress={v}" for v in many("diag_suppress")]
    return [f.encode() for f in flags]


def compile_cuda(source: str, arch: str, name_expressions=(), options=None, *,
                 program_name: str = DEFAULT_PROGRAM_NAME) -> CompiledArtifact:
    """Compile CUDA C++ `source` to a cubin for `arch` ('sm_80' ... 'sm_90a').

    Parameters:
      name_expressions: C++ names (e.g. ``"gemm<128, 64>"``) NVRTC should instantiate and
        report the lowered names of (``artifact.symbol_mapping``); ``extern "C"`` kernels need none.
      options: a mapping or pairs of ProgramOptions fields (see OPTION_TYPES), e.g.
        ``{"max_register_count": 128, "lineinfo": True}``. Line info is off unless asked for.
    Errors (all `CodegenError`): CODEGEN_ARCH_UNSUPPORTED, CODEGEN_OPTION_INVALID,
    CODEGEN_TOOLCHAIN_MISSING, CODEGEN_COMPILE_FAILED (with the first lines of the NVRTC log).
    """
    if not isinstance(source, str):
        raise CodegenError(CODEGEN_COMPILE_FAILED, f"source must be CUDA C++ text (str), got {type(source).__name__}")
    opts = normalize_options(options)
    names = tuple(name_expressions)
    if not all(isinstance(n, str) for n in names):
        raise CodegenError(CODEGEN_OPTION_INVALID, f"name_expressions must be strings, got {names!r}")
    toolchain = toolchain_versions()
    check_arch(arch)
    nvrtc, _, _ = _nvrtc()
    flags = nvrtc_flags(arch, opts)
    err, handle = nvrtc.nvrtcCreateProgram(source.encode(), program_name.encode(), 0, [], [])
    if int(err) != 0:
        raise CodegenError(CODEGEN_COMPILE_FAILED, f"nvrtcCreateProgram failed with {err!r}")
    try:
        for n in names:
            (err,) = nvrtc.nvrtcAddNameExpression(handle, n.encode())
            if int(err) != 0:
                raise CodegenError(CODEGEN_COMPILE_FAILED, f"NVRTC refused the name expression {n!r} ({err!r})")
        (err,) = nvrtc.nvrtcCompileProgram(handle, len(flags), flags)
        log = _text_of(_read(nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog, handle)).replace("\0", "").strip()
        if int(err) != 0:
            lines = [ln for ln in log.splitlines() if ln.strip()] or [repr(err)]
            shown = "\n".join(lines[:LOG_LINES]) + ("\n..." if len(lines) > LOG_LINES else "")
            raise CodegenError(CODEGEN_COMPILE_FAILED, f"NVRTC could not compile {program_name} for {arch}:\n{shown}",
                               location=_first_error_location(log, program_name))
        cubin = _read(nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN, handle)
        if cubin is None:
            raise CodegenError(CODEGEN_COMPILE_FAILED, f"NVRTC compiled {program_name} for {arch} but gave no cubin")
        ptx = _ptx_of(nvrtc, handle)
        lowered = []
        for n in names:
            err, low = nvrtc.nvrtcGetLoweredName(handle, n.encode())
            if int(err) != 0:
                raise CodegenError(CODEGEN_COMPILE_FAILED, f"NVRTC has no lowered name for {n!r} ({err!r})")
            lowered.append((n, low.decode() if isinstance(low, bytes) else str(low)))
        mapping = tuple(sorted(lowered))
    finally:
        nvrtc.nvrtcDestroyProgram(handle)
    return CompiledArtifact(
        cubin=cubin, arch=arch, sha256=hashlib.sha256(cubin).hexdigest(), ptx=ptx,
        log=log, options=opts, name_expressions=names,
        symbol_mapping=mapping, toolchain=toolchain, program_name=program_name,
        source_sha256=hashlib.sha256(source.encode()).hexdigest())
