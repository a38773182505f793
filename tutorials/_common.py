"""What the tutorials share: a seeded generator, the float64 check, the GPU probe and the benchmark switch."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))


def rng() -> np.random.Generator:
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def check(name: str, got, want, bound: float) -> None:
    """max|got - want| / max|want| against a per-dtype bound; raises (exit 1) when it is over."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
    print(f"{name}: relative error {err:.2e} (bound {bound:.0e}) {'ok' if err <= bound else 'FAIL'}")
    if not err <= bound:
        raise SystemExit(f"{name}: relative error {err:.2e} is over {bound:.0e}")


def gpu_torch():
    """torch with a CUDA device, or None (then a tutorial checks on the interpreter and skips its benchmark)."""
    if os.environ.get("TESSERA_INTERPRET", "") not in ("", "0"):
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def compile_summary(kernel, *specs, arch: str = "sm_90", **meta) -> None:
    """Compile the kernel with NVRTC (no GPU needed) and print its compile report's first lines."""
    import tessera
    ck = tessera.compile(kernel.trace(*specs, **meta), arch)
    print("\n".join(ck.report.text().splitlines()[:3]))
