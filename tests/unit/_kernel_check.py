"""The one numeric check every shipped-kernel test uses, positive or deliberately broken.

A kernel case runs on the reference interpreter with fresh random inputs
(a new seed per case, printed in every line and failure so it reproduces:
set TESSERA_TEST_SEED=<seed> to rerun with it), write-only outputs poisoned
with NaN, and is compared with a float64 oracle. `compare` reports what is
wrong; `check` asserts nothing is. The broken-kernel tests call the same
`compare`/`check`, so the check is shown able to fail.

Also here: `opt_round_trip`, which feeds traced IR through the `tessera-opt`
command line twice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np

from tessera.reference import rel_error
from tessera.reference.oracles import error_bound

SEED_ENV = "TESSERA_TEST_SEED"
NP = {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16), "f32": np.dtype(np.float32)}


def fresh_seed() -> int:
    """A new random seed per call, unless TESSERA_TEST_SEED pins one (to reproduce a failure)."""
    pinned = os.environ.get(SEED_ENV)
    return int(pinned) if pinned else int(np.random.SeedSequence().entropy % (1 << 63))


def randn(rng: np.random.Generator, shape, dtype: str, scale: float = 1.0) -> np.ndarray:
    """Standard-normal values (times `scale`) rounded to `dtype`: never all zeros, never NaN."""
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(NP[dtype])


def poisoned(shape, dtype: str) -> np.ndarray:
    """An output buffer full of NaN: an element the kernel does not write stays NaN."""
    return np.full(shape, np.nan, dtype=np.float32).astype(NP[dtype])


@dataclass(frozen=True)
class Expected:
    """One output to check: what the kernel wrote and the float64 oracle's value.

    before: for an output the kernel also reads (GEMM's C with beta), its
        value before the run (such an output cannot be poisoned with NaN).
    floor: a lower limit on the norm the error is relative to. A sum that
        cancels (a 1x1x1 GEMM with beta: -0.9345 + 0.9300) has a tiny result
        whose f32 rounding is relative to the terms, not to the result; a
        floor of a fraction of the terms' size keeps such a case from failing
        a correct kernel. Where the result is larger than the floor (every
        multi-element case in practice) the error is exactly `rel_error`.
    """

    got: np.ndarray
    want: np.ndarray
    before: np.ndarray | None = None
    floor: float = 0.0


@dataclass
class Outcome:
    """What `compare` found for one case: each output's relative error and every problem, in words."""

    case: str
    seed: int
    bound: float
    errors: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    floored: list[str] = field(default_factory=list)  # outputs whose error is relative to the floor

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def too_inaccurate(self) -> list[str]:
        """The outputs whose relative error exceeds the bound."""
        return [name for name, err in self.errors.items() if not err <= self.bound]

    def line(self) -> str:
        errs = " ".join(f"{name}={err:.2e}{'(floor)' if name in self.floored else ''}"
                        for name, err in self.errors.items())
        verdict = "ok" if self.ok else "FAIL"
        return f"NUMERICS {verdict:<4} {self.case:<58} {errs:<28} bound={self.bound:.0e} seed={self.seed}"


def compare(case: str, seed: int, dtypes, outputs: dict) -> Outcome:
    """Compare kernel outputs with float64 oracle values.

    dtypes: the dtype names that limit accuracy (inputs and outputs); the bound
        is the loosest of their `error_bound`s.
    outputs: name -> (got, want) for write-only outputs (poisoned with NaN before
        the run), or name -> `Expected` for more (an in-out output, a floor).
    Problems: NaN left in an output (unwritten, or computed NaN), an in-out
    element still holding its input where the result should differ, a shape
    mismatch, and a relative error above the bound. (An in-out element equal
    to its input is stale only where the oracle differs from the input by far
    more than rounding, so a correct kernel never trips it; a wrong one may,
    by chance, and is wrong anyway.)
    """
    bound = max(error_bound(d) for d in ([dtypes] if isinstance(dtypes, str) else dtypes))
    out = Outcome(case, seed, bound)
    for name, spec in outputs.items():
        spec = spec if isinstance(spec, Expected) else Expected(*spec)
        got64, want64 = np.asarray(spec.got).astype(np.float64), np.asarray(spec.want, dtype=np.float64)
        if not np.all(np.isfinite(want64)):
            raise ValueError(f"{case}: the oracle's {name} is not finite: the test inputs are wrong")
        if got64.shape != want64.shape:
            out.problems.append(f"{name}: shape {got64.shape}, oracle {want64.shape}")
            continue
        nan = int(np.count_nonzero(np.isnan(got64)))
        if nan:
            out.problems.append(f"{name}: {nan} of {got64.size} elements are NaN (not written, or computed NaN)")
        if spec.before is not None:
            before64 = np.asarray(spec.before).astype(np.float64)
            rms = max(float(np.linalg.norm(want64)), spec.floor) / np.sqrt(want64.size)
            stale = (got64 == before64) & ~np.isclose(want64, before64, rtol=4 * bound, atol=bound * rms)
            if stale.any():
                out.problems.append(f"{name}: {int(stale.sum())} elements still hold their input value")
        out.errors[name] = rel_error(got64, want64)
        if spec.floor > np.linalg.norm(want64):
            out.floored.append(name)
            out.errors[name] = float(np.linalg.norm(got64 - want64)) / spec.floor
            out.errors[name] = out.errors[name] if np.isfinite(out.errors[name]) else float("inf")
        if not out.errors[name] <= bound:
            out.problems.append(f"{name}: rel error {out.errors[name]:.3g} > bound {bound:.0e}")
    return out


def check(case: str, seed: int, dtypes, outputs: dict) -> Outcome:
    """`compare`, print the result line, and fail with the seed if anything is wrong."""
    out = compare(case, seed, dtypes, outputs)
    print(out.line())
    assert out.ok, f"{case} (seed {seed}; rerun with {SEED_ENV}={seed}): " + "; ".join(out.problems)
    return out


# --- tessera-opt ---------------------------------------------------------------------------------

SPLIT = "// -----\n"


def opt_command() -> list[str]:
    """The installed `tessera-opt` script (next to this Python first), else `python -m tessera.cli`."""
    here = Path(sys.executable).with_name("tessera-opt")
    found = str(here) if here.exists() else shutil.which("tessera-opt")
    return [found] if found else [sys.executable, "-m", "tessera.cli"]


def run_opt(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*opt_command(), str(path), *extra], capture_output=True, text=True, timeout=120)


def opt_round_trip(texts: dict[str, str], workdir: Path) -> str:
    """Feed each IR text through `tessera-opt` twice (one subprocess per pass over all of them).

    The texts go into one file, separated by `// -----`, and run with
    --split-input-file (a subprocess per variant would cost ~0.6 s of start-up
    each). Asserts both runs exit 0 with no diagnostics (so every variant
    parsed and verified), the second output is byte-identical to the first,
    and each variant prints exactly as the tracer printed it.
    """
    names = list(texts)
    first_in, first_out, second_out = workdir / "variants.mlir", workdir / "once.mlir", workdir / "twice.mlir"
    first_in.write_text(SPLIT.join(texts[n] for n in names))
    for src, dst in ((first_in, first_out), (first_out, second_out)):
        proc = run_opt(src, "--split-input-file", "-o", str(dst))
        assert proc.returncode == 0 and not proc.stderr, f"tessera-opt {src.name}: rc={proc.returncode}\n{proc.stderr}"
    once, twice = first_out.read_bytes(), second_out.read_bytes()
    assert once == twice, "tessera-opt output changed when fed its own output"
    chunks = once.decode().split(SPLIT)
    assert len(chunks) == len(names)
    for name, chunk in zip(names, chunks):
        assert chunk == texts[name], f"{name}: tessera-opt printed it differently from the tracer"
    return once.decode()


def misplace_a_definition(text: str) -> str:
    """Break `text` so it parses but does not verify: the first arith.constant moves below its uses."""
    lines = text.split("\n")
    moved = lines.pop(next(n for n, line in enumerate(lines) if "= arith.constant" in line))
    lines.insert(max(n for n, line in enumerate(lines) if line.strip().startswith("func.return")), moved)
    return "\n".join(lines)


def run_on(where: str, traced, grid, args):
    """Run a traced kernel on the reference interpreter (`where` "reference") or, lowered and emitted for `arch`
    with the default launch shape, on the host emulator (`where` "emulator-<arch>"); returns the lowered module
    (None for the reference)."""
    from tessera.compiler.driver import lower
    from tessera.compiler.launch_shape import LaunchShape
    from tessera.reference import run as run_reference
    from tessera.runtime.host_emulator import run_on_host
    from tessera.target.nvidia.emit.cuda import emit_cuda

    if where == "reference":
        run_reference(traced, grid, args)
        return None
    arch = where.split("-", 1)[1]
    module, _ = lower(traced, LaunchShape().pipeline(arch), arch)
    run_on_host(emit_cuda(module), args, grid)
    return module
