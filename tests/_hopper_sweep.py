"""The sm_90a GEMM configurations a sweep must cover, shared by the host-emulator and H200 sweeps (issue 13).

A ring of `stages` slots and a K-loop of `steps` steps meet in the mbarrier
phases: a producer that runs a lap ahead, a consumer that frees a slot late,
a tile that starts mid-lap. Every (stages, steps) pair from 1..6 x 1..8 and
every configuration `tessera.ops` may pick (the autotuner's candidates, which
hold every output of the default rule) must compute C = A @ B in each operand
layout the ops run (NT, the nn.Linear layout, and NN, TN, TT).
"""

from __future__ import annotations

import numpy as np

from tessera.dsl import tl
from tessera.dsl.specs import ScalarSpec, tensor
from tessera.kernels import gemm as G
from tessera.ops._hopper import HOPPER_CANDIDATES, default_config

STAGES = range(1, 7)
STEPS = range(1, 9)
BK = 64
# The ring sweep's tiles: cooperative 128 x 128 and ping-pong 128 x 64 (consumers alternate tiles), on a
# 200 x 136 output: 4 or 6 ragged tiles over RING_CTAS persistent CTAs, so every CTA's ring runs over tile edges.
RING_CONFIGS = {"cooperative": dict(BM=128, BN=128, BK=BK, schedule="cooperative"),
                "pingpong": dict(BM=128, BN=64, BK=BK, schedule="pingpong")}
RING_SHAPE = (200, 136)
RING_CTAS = 2
# Split-K in a 2-CTA cluster (multicast=k): rank 0's receive slot and its full / empty barriers complete one
# phase per tile, so each cluster must walk several tiles, with K halves of every length: odd step counts leave
# rank 1 one step fewer, one step leaves it none. The decode tile (as ops runs it swapped) and whole-tile
# ping-pong (a slot per consumer and block), each on an output of many ragged tiles per cluster.
KPAIR_CONFIGS = {"decode-tile": dict(BM=64, BN=16, BK=BK, stages=8, schedule="cooperative", store="registers",
                                     cluster=2, multicast="k"),
                 "pingpong": dict(BM=128, BN=64, BK=BK, stages=3, schedule="pingpong", store="tma", cluster=2,
                                  multicast="k")}
KPAIR_SHAPES = {"decode-tile": (264, 40), "pingpong": (520, 136)}


def k_for(steps: int) -> int:
    """A K of exactly `steps` K steps, the last one partial (TMA zero-fills past K)."""
    return BK * (steps - 1) + 24


def candidate_id(cfg: dict) -> str:
    return "-".join(f"{k}{v}" for k, v in cfg.items())


def default_rule_outputs() -> set[tuple]:
    """The configs default_config returns over shapes spanning its branches (as candidate-comparable tuples)."""
    sizes = (1, 64, 128, 1000, 1024, 2048, 4000, 4096, 8192, 16384)
    out = set()
    for m in sizes:
        for n in sizes:
            for k in (64, 1024, 4096, 16384):
                for reads in (False, True):
                    for layout in LAYOUTS:
                        out.add(tuple(sorted(default_config(m, n, k, reads, layout).as_dict().items())))
    return out


def candidates() -> list[dict]:
    return [dict(c) for c in HOPPER_CANDIDATES]


LAYOUTS = ("NN", "NT", "TN", "TT")  # A, B as given ([M, K], [K, N]) or transposed ([K, M], [N, K])


def specs(dtype: str, layout: str = "NT"):
    ta, tb = layout[0] == "T", layout[1] == "T"
    return (tensor(("K", "M") if ta else ("M", "K"), dtype), tensor(("N", "K") if tb else ("K", "N"), dtype),
            tensor(("M", "N"), dtype), None, None, ScalarSpec(tl.f32), None)


def trace(cfg: dict, dtype: str, layout: str = "NT"):
    return G.gemm.trace(*specs(dtype, layout), BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], TRANS_A=layout[0] == "T",
                        TRANS_B=layout[1] == "T")


def compile_options(cfg: dict) -> dict:
    """tessera.compile's keyword arguments for a config dict: its launch-shape knobs (every one, so a knob added
    later is not silently left at its default here)."""
    from dataclasses import fields

    from tessera.compiler.launch_shape import LaunchShape

    return {k: v for k, v in cfg.items() if k in {f.name for f in fields(LaunchShape)}}


def operands(M: int, N: int, K: int, np_dtype, seed: int, layout: str = "NT"):
    """Fresh random A and B (never zeros) stored as `layout` has them (NT: A [M, K], B [N, K]), C full of NaN (an
    unwritten element fails), and the float64 product."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((M, K)) / np.sqrt(K)).astype(np_dtype)
    w = rng.standard_normal((N, K)).astype(np_dtype)
    c = np.full((M, N), np.nan).astype(np_dtype)
    want = a.astype(np.float64) @ w.astype(np.float64).T
    a = np.ascontiguousarray(a.T) if layout[0] == "T" else a
    w = w if layout[1] == "T" else np.ascontiguousarray(w.T)
    return a, w, c, want
