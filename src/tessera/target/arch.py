"""Target architectures (one `Arch` value, one grammar) and the hardware features each one has.

`arch` is a mandatory option of every target-dependent pass (DESIGN section 3,
lesson 3), so it is parsed and checked once, here, into a comparable `Arch`.
Features are data: each names the oldest arch that has it, and whether it is
an arch-specific ("a"-suffixed) feature that exists on exactly that arch and
no later one (wgmma is sm_90a only: it is not part of sm_90 or of sm_100a).
Later lowering passes ask `arch.supports("wgmma")` instead of comparing
strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Arch:
    """A target architecture such as sm_90a: vendor, major, minor and feature suffix; ordered by
    (major, minor, suffix). `read` is the one grammar for arch strings in Tessera."""

    major: int
    minor: int
    suffix: str = ""  # "a": arch-specific features, not forward compatible; "f": family-specific (NVRTC)
    vendor: str = "nvidia"

    @property
    def specific(self) -> bool:
        """The "a" suffix: features that exist on exactly this arch (wgmma on sm_90a)."""
        return self.suffix == "a"

    @property
    def name(self) -> str:
        return f"sm_{self.major}{self.minor}{self.suffix}"

    @staticmethod
    def read(text) -> "Arch | None":
        """Any well-formed arch string (`sm_<major><minor>[a|f]`, the last digit the minor) as an Arch, else None;
        callers decide which arches they take and which coded error a malformed one is."""
        match = _ARCH_RE.fullmatch(text) if isinstance(text, str) else None
        return Arch(int(match[1]), int(match[2]), match[3]) if match else None

    def __str__(self) -> str:
        return self.name

    def supports(self, feature: str) -> bool:
        """Whether this arch has `feature` (a key of FEATURES); unknown features raise ValueError."""
        need = FEATURES.get(feature)
        if need is None:
            raise ValueError(f"unknown target feature '{feature}'; known features: {', '.join(FEATURES)}")
        if need.specific:
            return self == need.arch
        return (self.major, self.minor) >= (need.arch.major, need.arch.minor)


@dataclass(frozen=True)
class Feature:
    """A hardware feature: the first arch that has it; `specific` = only on exactly that arch."""

    arch: Arch
    specific: bool = False
    what: str = ""

    def requirement(self) -> str:
        return f"{self.arch} exactly" if self.specific else f"{self.arch} or newer"


_SM80, _SM90, _SM90A = Arch(8, 0), Arch(9, 0), Arch(9, 0, "a")

FEATURES: dict[str, Feature] = {
    "mma_sync": Feature(_SM80, what="warp-level mma.sync with bf16/f16 inputs and f32 accumulators"),
    "ldmatrix": Feature(_SM80, what="ldmatrix shared-memory fragment loads"),
    "cp_async": Feature(_SM80, what="cp.async global-to-shared copies"),
    "mbarrier": Feature(_SM80, what="shared-memory mbarrier objects"),
    "tma": Feature(_SM90, what="cp.async.bulk.tensor (TMA) copies"),
    "wgmma": Feature(_SM90A, specific=True, what="warpgroup-level wgmma.mma_async"),
    "setmaxnreg": Feature(_SM90A, specific=True, what="setmaxnreg register reallocation"),
}

SUPPORTED_ARCHES: tuple[Arch, ...] = (Arch(8, 0), Arch(8, 6), Arch(8, 9), Arch(9, 0), Arch(9, 0, "a"))
ARCH_NAMES: tuple[str, ...] = tuple(a.name for a in SUPPORTED_ARCHES)

# Which feature a fragment family needs; None: no requirement ("auto" is resolved later by tile-to-fragments).
FAMILY_FEATURE: dict[str, str | None] = {"auto": None, "mma_sync": "mma_sync", "wgmma": "wgmma"}

_ARCH_RE = re.compile(r"sm_(\d+?)(\d)([af]?)")


def parse_arch(text: str) -> Arch:
    """`'sm_90a'` -> Arch(9, 0, "a"). Only the arches Tessera targets are accepted.

    Raises ValueError naming the accepted spellings for anything else
    (`sm_12`, `sm90`, `90`, `sm_90b`).
    """
    arch = Arch.read(text)
    if arch not in SUPPORTED_ARCHES:
        raise ValueError(f"arch '{text}' is not one of {', '.join(ARCH_NAMES)}")
    return arch


def family_supported(arch: Arch, family: str) -> bool:
    """Whether fragments of `family` can run on `arch` (unknown families are not supported)."""
    if family not in FAMILY_FEATURE:
        return False
    feature = FAMILY_FEATURE[family]
    return feature is None or arch.supports(feature)


def family_requirement(family: str) -> str:
    """A phrase saying which arches a family needs, for diagnostics."""
    feature = FAMILY_FEATURE.get(family)
    if feature is None:
        return "any arch" if family in FAMILY_FEATURE else "no arch (unknown family)"
    return FEATURES[feature].requirement()
