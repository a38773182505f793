"""How one CTA-level mma maps onto tensor-core fragments: family, warp grid and per-warp (m, n, k).

Kept apart from the rewrite so the choice is a pure function of (arch, tile
shapes, dtypes, warps option) that tests can call directly.

The CTA tile BM x BN (x BK) is split over a warp grid [wm, wn] (for wgmma a
grid of warpgroups, 4 warps each): each warp owns an m x n accumulator with
m = BM / wm, n = BN / wn and the whole k = BK (DESIGN section 2, and the
`warps` semantics in tessera.ir.fragment_ops). m, n, k must be multiples of
the family's instruction atom:

    mma_sync  m16 n8  k16   (sm_80, sm_86, sm_89, sm_90)
    wgmma     m64 nN  k16   (sm_90a; N a multiple of 8 up to 256, the whole warpgroup n)

Default grids: mma_sync aims at 4 warps (2x2; [1, w] for 16-row tiles) and
grows to 8 while a warp's accumulator exceeds 64x64 f32 (128 registers per
thread); wgmma uses [BM/64 up to 2, 1] warpgroups ([3, 1] at BM = 192) and splits n above 256.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Attribute

from tessera.ir import diagnostics as D
from tessera.ir.types import FragmentType, TileType, fragment_type, type_name
from tessera.target.arch import parse_arch

ATOM = {"mma_sync": (16, 8, 16), "wgmma": (64, 8, 16)}  # wgmma: n is any multiple of 8 up to 256
WGMMA_MAX_N = 256
MAX_WARP_ACC = {"mma_sync": 64 * 64, "wgmma": 64 * 256}  # f32 accumulator elements per warp / warpgroup
MAX_WARPS = {"mma_sync": 8, "wgmma": 4}
INPUT_TYPES = ("bf16", "f16")


def family_for_arch(pass_name: str, arch: str) -> str:
    """The fragment family for `arch` (wgmma where the arch has it); ValueError naming the accepted arches.

    Plain ValueErrors: the pass registry reports option errors as OPT_OPTION_INVALID at the pipeline text.
    """
    try:
        target = parse_arch(arch)
    except ValueError as err:
        raise ValueError(f"{pass_name}: {err}") from None
    return "wgmma" if target.supports("wgmma") else "mma_sync"


def validate_warps(pass_name: str, warps: tuple[int, ...] | None) -> None:
    if warps is not None and (len(warps) != 2 or any(not isinstance(w, int) or w <= 0 for w in warps)):
        raise ValueError(f"{pass_name}: warps={','.join(map(str, warps))} must be two positive integers WM,WN")


@dataclass(frozen=True)
class FragmentPlan:
    """The fragment contract and warp grid chosen for one mma."""

    family: str
    warps: tuple[int, int]
    m: int
    n: int
    k: int
    elem: Attribute
    acc: Attribute

    def fragment(self, role: str, layout: str = "row") -> FragmentType:
        return fragment_type(self.m, self.n, self.k, self.elem, self.acc, role, layout, self.family)


def _default_warps(family: str, bm: int, bn: int) -> tuple[int, int]:
    am, an, _ = ATOM[family]
    if family == "wgmma":  # 64-row warpgroups; 192 rows: three of them (each m64, the whole n)
        wm = 2 if bm % (2 * am) == 0 else 3 if bm == 3 * am else 1
        wn = 1
        while bn // wn > WGMMA_MAX_N and bn % (2 * wn * an) == 0:
            wn *= 2
    else:
        wm = 2 if bm % (2 * am) == 0 else 1
        wn = 4 // wm
        while wn > 1 and bn % (wn * an):
            wn //= 2
    # Grow the grid while one warp's accumulator would not fit its register budget.
    while (bm // wm) * (bn // wn) > MAX_WARP_ACC[family] and wm * wn < MAX_WARPS[family]:
        if bm % (2 * wm * am) == 0 and (bm // wm >= bn // wn or bn % (2 * wn * an)):
            wm *= 2
        elif bn % (2 * wn * an) == 0:
            wn *= 2
        else:
            break
    return wm, wn


def _unsupported(op, message: str, hint: str | None = None) -> D.TesseraError:
    return D.TesseraError(D.TILE_FRAGMENT_UNSUPPORTED, message, op=op, hint=hint)


def plan_mma(op, family: str, warps: tuple[int, ...] | None) -> FragmentPlan:
    """Choose the plan for `op` (a verified tile.mma), or raise TILE_FRAGMENT_UNSUPPORTED at it."""
    a: TileType = op.a.type
    b: TileType = op.b.type
    c: TileType = op.acc.type
    (bm, bk), (_, bn) = a.get_shape(), b.get_shape()
    elem, acc = type_name(a.element_type), type_name(c.element_type)
    if elem not in INPUT_TYPES or acc != "f32":
        raise _unsupported(op, f"tile.mma with {elem} inputs and a {acc} accumulator has no {family} fragment "
                               f"(this version supports bf16/f16 inputs with an f32 accumulator)",
                           "accumulate in f32, or convert the operands to bf16 or f16 with tile.convert (f16 "
                           "accumulators are not implemented; f32 inputs with an f32 accumulator run on CUDA cores)")
    am, an, ak = ATOM[family]
    grid = tuple(warps) if warps is not None else _default_warps(family, bm, bn)
    wm, wn = grid
    unit = "warpgroups" if family == "wgmma" else "warps"
    if bm % wm or bn % wn:
        raise _unsupported(op, f"a {bm}x{bn} accumulator does not split evenly over {unit} [{wm}, {wn}]",
                           "choose warps=WM,WN dividing the tile's rows and columns")
    m, n = bm // wm, bn // wn
    bad = [f"{d}={v} is not a multiple of {a_}" for d, v, a_ in (("m", m, am), ("n", n, an), ("k", bk, ak)) if v % a_]
    if family == "wgmma" and n > WGMMA_MAX_N:
        bad.append(f"n={n} exceeds wgmma's largest N={WGMMA_MAX_N}")
    if bad:
        shape = f"m{am}n{'N' if family == 'wgmma' else an}k{ak}"
        raise _unsupported(op, f"tile.mma {bm}x{bk} @ {bk}x{bn} on {unit} [{wm}, {wn}] gives per-{unit[:-1]} fragments "
                               f"m={m} n={n} k={bk}, which {family} ({shape}) cannot tile: {'; '.join(bad)}",
                           f"use tile shapes (and warps=) whose per-warp m, n, k are multiples of {shape}")
    return FragmentPlan(family, (wm, wn), m, n, bk, a.element_type, c.element_type)
