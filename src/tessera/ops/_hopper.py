"""tessera.ops.gemm on Hopper: when the sm_90a kernel runs, and which of its configs.

On an sm_90 device, `ops.gemm` takes the warp-specialised wgmma + TMA kernel
(arch sm_90a) for bf16/f16 products in any layout (a as [M, K] or, with
trans_a, [K, M]; b as [K, N] or, with trans_b, [N, K]: wgmma reads each
K-major or MN-major) whose operands TMA can read: rows contiguous, row
pitch a multiple of 16 bytes, 16-byte aligned base. Every other call runs the
portable mma.sync kernel (sm_90); `last_run()` names the arch and config
either way, so the choice is never hidden.

The config comes, in order, from a pin (`tessera.ops.autotune.pin("gemm_sm90a",
{...})` or TESSERA_PIN_GEMM_SM90A=BM=128,BN=256,BK=64,stages=4,schedule=cooperative,cluster=2,splitk=1,multicast=b),
from the autotune cache (`tune_gemm(M, N, K, dtype)` measures HOPPER_CANDIDATES
on the device and keeps the winner per shape bucket on disk; with
TESSERA_AUTOTUNE=1 a first call of a new bucket tunes itself), else from
`default_config`, a rule fitted to the H200 measurements in
benchmarks/results/ (2026-11-30, 2026-12-03): 192 x 160 cooperative tiles where their waves cost 3% less than
those of 128 x 256 tiles (4000^3; B K-major only), else 128 x 256 cooperative tiles when there
are at least two waves of them (in 2-CTA clusters; one wave without); for M <= 64 (decode) the product runs
swapped (`swap_config`: the weight fills wgmma's 64 rows), or where it cannot swap (N < 128) 64 x 128 tiles
with an 8-deep ring, K split in 2 or 4 while the units stay within one wave; with at most half a wave of
128 x 128 tiles and K >= 4 max(M, N), K is split (warp-specialize splitk: one launch, the last split of a tile
runs the epilogue): 128 x 256 tiles in 4 where those units fit a wave and K >= 4 SPLITK_MIN_K, else 128 x 128
tiles in 2; else 128 x 64 ping-pong tiles.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from tessera.compiler.launch_shape import LaunchShape
from tessera.ops import autotune
from tessera.ops._cold_l2 import ColdL2, cold_median_seconds

OP = "gemm_sm90a"
SMS = 132  # H100/H200 SXM
HOPPER_CANDIDATES = [
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "schedule": "cooperative", "cluster": 1, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 256, "BK": 64, "stages": 3, "schedule": "cooperative", "cluster": 1, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "schedule": "cooperative", "cluster": 1, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "schedule": "pingpong", "cluster": 1, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "schedule": "pingpong", "cluster": 1, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "schedule": "pingpong", "cluster": 1, "splitk": 1, "multicast": "b"},
    {"BM": 64, "BN": 128, "BK": 64, "stages": 6, "schedule": "cooperative", "cluster": 1, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "schedule": "cooperative", "cluster": 2, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "schedule": "pingpong", "cluster": 2, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "schedule": "pingpong", "cluster": 2, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "schedule": "cooperative", "cluster": 1, "splitk": 2, "multicast": "b"},
    {"BM": 128, "BN": 128, "BK": 64, "stages": 6, "schedule": "pingpong", "cluster": 1, "splitk": 2, "multicast": "b"},
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "schedule": "pingpong", "cluster": 1, "splitk": 2, "multicast": "b"},
    # (128 x 256 split in 4 with the gather fixup: its sum of four 128-register blocks leaves a 96-byte stack frame;
    # the scatter fixup below, which beat it on the H100, has none)
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "schedule": "cooperative", "cluster": 2, "splitk": 1, "multicast": "a"},
    {"BM": 256, "BN": 128, "BK": 64, "stages": 4, "schedule": "cooperative", "cluster": 2, "splitk": 1, "multicast": "b"},
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "schedule": "pingpong", "cluster": 2, "splitk": 1, "multicast": "a"},
    {"BM": 192, "BN": 160, "BK": 64, "stages": 4, "schedule": "cooperative", "cluster": 1, "splitk": 1, "multicast": "b"},
    {"BM": 192, "BN": 160, "BK": 64, "stages": 4, "schedule": "cooperative", "cluster": 2, "splitk": 1, "multicast": "b"},
    # decode (M <= 64): 64-row tiles so no consumer idles, a deep ring to keep the weight streaming, and the K
    # steps split where 64 x 128 tiles alone leave SMs idle (N = 4096: 32 tiles)
    {"BM": 64, "BN": 128, "BK": 64, "stages": 8, "schedule": "cooperative", "cluster": 1, "splitk": 1, "multicast": "b"},
    {"BM": 64, "BN": 128, "BK": 64, "stages": 8, "schedule": "cooperative", "cluster": 1, "splitk": 2, "multicast": "b"},
    {"BM": 64, "BN": 128, "BK": 64, "stages": 8, "schedule": "cooperative", "cluster": 1, "splitk": 4, "multicast": "b"},
    # M = 64 unswapped in 64 x 64 tiles of 128-deep K steps (the default there: as many CTAs as the swapped 64 x 64
    # tile, C stored row-major through TMA boxes; 1.00x cuBLAS against the swapped tile's 0.95-0.98x on the H100,
    # 2026-12-07-h100-m64-unswapped-probe.json)
    {"BM": 64, "BN": 64, "BK": 128, "stages": 6, "schedule": "cooperative", "cluster": 1, "splitk": 1, "multicast": "b"},
    # split-K whose splits each sum and store their own columns once all have arrived (fixup=scatter; the default
    # for 1024 x 1024 x 16384: 0.964x cuBLAS against 0.923-0.927x gathered on the H100, 2026-12-07-h100-skinny-
    # scatter-probe.json)
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "schedule": "cooperative", "cluster": 1, "splitk": 4, "multicast": "b",
     "fixup": "scatter"},
    # stream-K: the key only where it is on, so pins written before it stay valid
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "schedule": "cooperative", "cluster": 2, "splitk": 1, "multicast": "b",
     "streamk": True},
    {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "schedule": "cooperative", "cluster": 1, "splitk": 1, "multicast": "b",
     "streamk": True},
    # (128 x 128 ping-pong stream-K: a 16-byte stack frame at 168 registers; not a candidate)
    {"BM": 128, "BN": 64, "BK": 64, "stages": 8, "schedule": "pingpong", "cluster": 1, "splitk": 1, "multicast": "b",
     "streamk": True},
    # decode run swapped (C^T = op(b)^T op(a)^T: the weight fills wgmma's 64 rows, C's M rows are its N): the
    # `swap_config` family; measured only where a call can swap (M <= SWAP_M, N >= 128; see `candidates`). The
    # 128-row ones (two consumers) halve the tiles: one wave at N = 14336 where 64-row tiles make 1.7, and each
    # tile reads C's M rows of A once for twice the weight rows; at N = 4096 only with K split (32 tiles). The
    # 11- and 9-deep rings keep 176 / 144 KB of weight in flight per CTA (8- and 6-deep: 128 / 96 KB): on the H200
    # 64 CTAs streamed at ~3.1 TB/s against a 4.25 TB/s copy (seventh session), short of what 64 x 128 KB covers at
    # its latency if that is ~2 us under load (untimed: the next H200 table's tuned column says)
    *({"BM": bm, "BN": bn, "BK": 128, "stages": st, "schedule": "cooperative", "cluster": 1, "splitk": sk,
       "multicast": "b", "store": "registers", "swap_ab": True}
      for bm, bn, st, sk in ((64, 16, 8, 1), (64, 16, 11, 1), (64, 32, 6, 1), (64, 32, 9, 1), (64, 64, 6, 1),
                             (128, 16, 5, 1), (128, 32, 5, 1), (128, 64, 4, 1), (128, 64, 4, 2), (128, 64, 4, 4))),
    # K split inside a 2-CTA cluster (multicast=k: the halves meet in distributed shared memory, no global
    # fixup): twice the CTAs per decode tile. On the H100 (2026-12-07 probe) 5-15% slower than unsplit, whose
    # weight stream already runs at the device copy's rate there; kept for parts where 64 CTAs do not (the H200's
    # decode slope was 88% of its copy rate)
    *({"BM": bm, "BN": bn, "BK": 128, "stages": st, "schedule": "cooperative", "cluster": 2, "splitk": 1,
       "multicast": "k", "store": "registers", "swap_ab": True}
      for bm, bn, st in ((64, 16, 8), (64, 64, 6), (128, 16, 5))),
    # ... and in pairs of weight-row tiles sharing C's M rows (multicast=b): each CTA loads half of that tile, so
    # the activation's L2 -> SM traffic (at M = 64 as many bytes per CTA as its weight's) halves
    *({"BM": 64, "BN": bn, "BK": 128, "stages": st, "schedule": "cooperative", "cluster": 2, "splitk": 1,
       "multicast": "b", "store": "registers", "swap_ab": True} for bn, st in ((16, 8), (64, 6))),
]
TMA_DTYPES = ("bf16", "f16")
SPLITK_MIN_K = 4096  # below this a split's K-loop is too short to pay for the partials' round trip
TILE = ("BM", "BN", "BK")  # a config dict's tile sizes (the kernel's meta); every other key is a LaunchShape knob
SWAP = "swap_ab"  # ... or this one, in a config that runs swapped (True only: left out otherwise)
# The knobs every config dict names, as candidates, pins and cache entries did before stream-K; a knob added since
# is in the dict only where it is not at its default ("streamk": True), so those written before it stay valid.
DICT_KNOBS = ("stages", "schedule", "cluster", "splitk", "multicast")
_KNOBS = frozenset(f.name for f in fields(LaunchShape))


@dataclass(frozen=True)
class HopperConfig:
    """One sm_90a GEMM config: the tile (BM x BN x BK, the kernel's meta) and the launch shape (the pipeline's
    knobs, validated by LaunchShape), and where the config came from.

    `from_config` builds one from a candidate, pin or cache dict and `as_dict` gives that dict back. The knobs
    read through to the shape (`cfg.splitk` is `cfg.shape.splitk`), so a new knob needs no edit here.
    """

    BM: int
    BN: int
    BK: int
    shape: LaunchShape
    source: str = "default"  # default | pinned | cache | measured
    swap: bool = False  # run swapped: the tile is over C^T = op(b)^T op(a)^T (decode; see `swap_config`)

    @classmethod
    def from_config(cls, config: dict, source: str = "default") -> "HopperConfig":
        """From a config dict: BM, BN and BK are the tile, every other key a knob (a key that is neither, or a bad
        knob value, is COMPILE_LAUNCH_SHAPE_INVALID from LaunchShape; a missing tile size OPS_AUTOTUNE_INPUT)."""
        missing = [k for k in TILE if k not in config]
        if missing:
            from tessera.ir import diagnostics as D
            from tessera.ops._common import OpsError
            raise OpsError(D.OPS_AUTOTUNE_INPUT, OP, f"config {config!r} has no {', '.join(missing)}",
                           hint=f"give the tile sizes {', '.join(TILE)} with the launch-shape knobs")
        swap = config.get(SWAP, False)
        if swap is not True and swap is not False:
            from tessera.ir import diagnostics as D
            from tessera.ops._common import OpsError
            raise OpsError(D.OPS_AUTOTUNE_INPUT, OP, f"config {config!r} has {SWAP}={swap!r}: True or False",
                           hint=f"{SWAP}: True runs a decode product swapped (C^T = B^T A^T)")
        shape = LaunchShape.of({k: v for k, v in config.items() if k not in TILE and k != SWAP})
        return cls(config["BM"], config["BN"], config["BK"], shape, source, swap)

    def __getattr__(self, name: str):
        if name in _KNOBS:  # only called for names the dataclass does not have
            return getattr(self.shape, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def meta(self) -> dict:
        return {"BM": self.BM, "BN": self.BN, "BK": self.BK}

    def as_dict(self) -> dict:
        """The config dict: the tile, the DICT_KNOBS, and each later knob only where it is not at its default."""
        default = LaunchShape()
        knobs = {k: v for k, v in self.shape.as_dict().items() if k in DICT_KNOBS or v != getattr(default, k)}
        return {**self.meta(), **knobs, **({SWAP: True} if self.swap else {})}


def _cfg(BM: int, BN: int, stages: int, schedule: str, cluster: int = 1, splitk: int = 1,
         fixup: str = "gather") -> HopperConfig:
    """A config of the default rule: BM x BN x 64 tiles (a 2-CTA cluster shares B; no stream-K)."""
    return HopperConfig(BM, BN, 64, LaunchShape(stages=stages, schedule=schedule, cluster=cluster, splitk=splitk,
                                                fixup=fixup))


SWAP_M = 64  # decode: a product of at most this many rows may run swapped (tuning candidates; see `swap_config`)
# ... and runs swapped by default up to this many. At M = 64 the swapped 64 x 64 tiles with a 6-deep ring beat
# the unswapped 64 x 128 ones (split or not) and the 4-deep ring on the H100, 2026-12-07 (benchmarks/results/
# 2026-12-07-h100-decode-config-probe.json: 1.06-1.08x cuBLAS against 0.97-1.10x and 0.97-1.07x)
SWAP_DEFAULT_M = 32  # ... and above it, to 64, unswapped 64 x 64 tiles (see `default_config`; H100, 2026-12-07-h100-m64-
# unswapped-probe.json: 1.00x cuBLAS against the swapped 64 x 64 tile's 0.95-0.98x, whose C^T epilogue cost ~1 us)


def swap_config(M: int) -> HopperConfig:
    """The config of a swapped decode GEMM (C^T = B^T A^T; by default for M <= SWAP_DEFAULT_M): the wide operand fills wgmma's 64
    rows, C's M rows are a wgmma N of 16, 32 or 64, 128-deep K steps in a ring as deep as shared memory takes,
    and register stores into C's transposed view (TMA cannot describe it). From the H100 probe of 2026-12-06
    (benchmarks/results/2026-12-06-h100-decode-swap-probe.json): 1.21-1.22x cuBLAS at M = 1 and 16, N = K =
    4096, where the unswapped split-K kernel ran 0.96-1.00x."""
    BN = 16 if M <= 16 else 32 if M <= 32 else 64
    stages = {16: 8, 32: 6, 64: 6}[BN]  # 64: 6 x 32 KB (a 4-deep ring ran 3-11% slower, 2026-12-07 probe)
    return HopperConfig(64, BN, 128, LaunchShape(stages=stages, schedule="cooperative", store="registers"), swap=True)


def can_swap(M: int, N: int) -> bool:
    """A product the swapped kernel takes (with any epilogue: c, bias and residual swap with it)."""
    return M <= SWAP_M and N >= 128


def candidates(M: int, N: int) -> list[dict]:
    """The HOPPER_CANDIDATES tune_gemm measures for an M x N product: the swapped ones only where it can swap."""
    return [c for c in HOPPER_CANDIDATES if not c.get(SWAP) or can_swap(M, N)]


def tma_ok(v, rank: int = 2) -> bool:
    """A device array TMA can read, by the runtime's own rules (tessera.runtime.tma.check): of `rank` dims,
    non-empty, contiguous rows, 16-byte pitches and base. Anything else runs the sm_90 kernel instead of
    failing there."""
    from tessera.ir.diagnostics import TesseraError
    from tessera.runtime import tma

    if v.ptr is None or v.strides is None or len(v.shape) != rank:
        return False
    try:
        tma.check("operand", v.dtype, v.shape, v.strides, (64, 128 // tma.ITEMSIZE[v.dtype]), 128, v.ptr)
    except TesseraError:
        return False
    return True


def eligible(arch: str, A, B, ta: bool, tb: bool, Out=None) -> bool:
    """True when the sm_90a kernel can run this call (see the module docstring); the output may be written
    by TMA boxes too, so it must be one TMA can describe."""
    return (arch == "sm_90" and A.dtype in TMA_DTYPES and B.dtype == A.dtype
            and tma_ok(A) and tma_ok(B) and (Out is None or tma_ok(Out)))


def default_config(M: int, N: int, K: int, reads_tiles: bool = False, layout: str = "NT") -> HopperConfig:
    """The rule used when nothing is pinned or tuned for this shape bucket (fitted to the H200 runs of
    2026-11-30, benchmarks/results/*-v8*: with the TMA store epilogue, 128 x 256 cooperative tiles won every
    shape with a wave or more of them, in 2-CTA clusters from two waves on; and of 2026-12-03,
    hopper-gemm-layouts.json, for the layouts and decode).

    reads_tiles: the epilogue loads C (beta != 0) or a residual; small grids then stay cooperative
    (ping-pong keeps two accumulators per warpgroup and spilled with those loads).
    layout: with B stored [K, N] (NN, TN) 160-column tiles are read through the 64-byte swizzle, which cost
    10% at 4000^3: the 192 x 160 branch is for K-major B only.
    """
    big_tiles = -(-M // 128) * -(-N // 256)
    b_k_major = layout[1] == "T"
    if (b_k_major and 4 * big_tiles >= 3 * SMS
            and 100 * _wave_cost(M, N, 192, 160) <= 97 * _wave_cost(M, N, 128, 256)):
        # 192 x 160 tiles waste less (4000^3: 3.98 waves of 192 x 160 against 3.88 of 128 x 256 covering 4096^2)
        return _cfg(192, 160, 4, "cooperative")
    if big_tiles >= 2 * SMS:
        return _cfg(128, 256, 4, "cooperative", cluster=2)
    if 4 * big_tiles >= 3 * SMS:
        return _cfg(128, 256, 4, "cooperative")
    if SWAP_DEFAULT_M < M <= 64:  # 64 x 64 tiles of 128-deep K steps, C stored through TMA (see SWAP_DEFAULT_M)
        return HopperConfig(64, 64, 128, LaunchShape(stages=6, schedule="cooperative"))
    if M <= 64:
        # decode: memory-bound on the weight; 64-row tiles, K split while the units fill at most half a wave (the
        # tuned winners on the H200, 2026-12-07: 32 tiles x 2 splits at N = 4096, 112 tiles unsplit at N = 14336)
        tiles = -(-N // 128)
        splits = max([s for s in (1, 2, 4) if 2 * tiles * s <= SMS and K >= 16 * 64 * s] + [1])
        return _cfg(64, 128, 8, "cooperative", splitk=splits)
    if 2 * (-(-M // 128) * -(-N // 128)) <= SMS and K >= max(SPLITK_MIN_K, 4 * max(M, N)):
        # few tiles and a K long next to both sides (not a memory-bound skinny product): K split. 128 x 256 tiles
        # split in 4 where their units fit a wave and each split keeps SPLITK_MIN_K (1024 x 1024 x 16384 on the
        # H100, 2026-12-07, 2026-12-07-h100-skinny-probe.json: 0.95-0.96x cuBLAS against 0.91 for the 128 x 128
        # ping-pong tiles split in 2, which the H200 ran at 0.94-0.97x on 2026-12-03); else, or where the epilogue
        # reads tiles (not measured with the big split tiles), 128 x 128 tiles split in 2, in ping-pong unless the
        # epilogue reads tiles
        if reads_tiles:
            return _cfg(128, 128, 5, "cooperative", splitk=2)
        if 4 * -(-M // 128) * -(-N // 256) <= SMS and K >= 4 * SPLITK_MIN_K:  # each split sums its own columns
            return _cfg(128, 256, 4, "cooperative", splitk=4, fixup="scatter")
        return _cfg(128, 128, 6, "pingpong", splitk=2)
    if reads_tiles:
        return _cfg(128, 128, 5, "cooperative")
    return _cfg(128, 64, 8, "pingpong")  # few tiles (small M or N): more, narrower ones


def untuned_config(M: int, N: int, K: int, reads_tiles: bool = False, layout: str = "NT") -> HopperConfig:
    """The config a product runs with nothing tuned or pinned (`gemm_config`'s last resort, and tune_gemm's
    baseline): swapped up to SWAP_DEFAULT_M where it can swap (`swap_config`), else `default_config`."""
    if M <= SWAP_DEFAULT_M and can_swap(M, N):
        return swap_config(M)
    return default_config(M, N, K, reads_tiles, layout)


def _wave_cost(M: int, N: int, bm: int, bn: int) -> int:
    """Waves of bm x bn tiles over the SMs times the tile's area: the work a compute-bound GEMM pays for."""
    return -(-(-(-M // bm) * -(-N // bn)) // SMS) * bm * bn


LAYOUTS = ("NN", "NT", "TN", "TT")  # a, b: N as given ([M, K], [K, N]), T transposed ([K, M], [N, K])


def layout_of(trans_a: bool, trans_b: bool) -> str:
    return ("T" if trans_a else "N") + ("T" if trans_b else "N")


def tune_key(M: int, N: int, K: int, dtype: str, layout: str = "NT") -> dict:
    """The autotune key: shape buckets and how 256-aligned M and N are (tile fit), dtype, arch and the toolchain
    (a new NVRTC re-tunes); the operand layout where it is not NT (the nn.Linear layout, so entries tuned
    before layouts were keyed stay valid): MN-major tiles may favour other configs."""
    from tessera.target.nvidia.toolchain.nvrtc import toolchain_versions

    key = {"M": autotune.shape_bucket(M), "N": autotune.shape_bucket(N), "K": autotune.shape_bucket(K),
           "M_align": autotune.alignment(M), "N_align": autotune.alignment(N), "dtype": dtype, "arch": "sm_90a",
           "toolchain": ";".join(f"{k}={v}" for k, v in toolchain_versions())}
    return key if layout == "NT" else {**key, "layout": layout}


def gemm_config(M: int, N: int, K: int, dtype: str, reads_tiles: bool = False, layout: str = "NT") -> HopperConfig:
    """Pinned, else cached, else (with TESSERA_AUTOTUNE=1) measured now, else `untuned_config`.

    The tuned winner is measured on a plain product; a call whose epilogue reads tiles keeps it unless it is
    a ping-pong config (see `default_config`) or a scatter split-K (its splits store through TMA boxes, which an
    epilogue that loads whole tiles does not take).
    """
    key = tune_key(M, N, K, dtype, layout)
    found = autotune.lookup(OP, key, candidates(M, N))  # the list tune_gemm measured: an entry names its sha
    if found is None and os.environ.get("TESSERA_AUTOTUNE") == "1":
        found = tune_gemm(M, N, K, dtype, layout=layout)
    if found is None or (reads_tiles and found.source != "pinned" and (found.config["schedule"] == "pingpong" or
                                                                       found.config.get("fixup") == "scatter")):
        return untuned_config(M, N, K, reads_tiles, layout)
    return HopperConfig.from_config(found.config, found.source)  # a swapped one: ops runs it swapped if it can


def compile_plain(config: dict, dtype: str = "bf16", layout: str = "NT"):
    """(CompiledKernel, HopperConfig) of the sm_90a kernel for a plain C = A @ B (alpha only, no epilogue
    inputs) in `layout` with one candidate `config`: what tune_gemm measures, so a cache warmed with it (the
    benchmarks' warm_gemm_cache.py) holds exactly the kernels tuning loads."""
    from tessera.compiler import records

    ta, tb = layout[0] == "T", layout[1] == "T"
    T = records.tensor
    specs = (T(("K", "M") if ta else ("M", "K"), dtype), T(("N", "K") if tb else ("K", "N"), dtype),
             T(("M", "N"), dtype), None, None, records.scalar("f32"), None)
    cfg = HopperConfig.from_config(config)
    meta = {**cfg.meta(), "TRANS_A": ta, "TRANS_B": tb, "ACTIVATION": "none"}
    return records.compiled("tessera.kernels.gemm:gemm", specs, meta, arch="sm_90a", shape=cfg.shape), cfg


def tune_gemm(M: int, N: int, K: int, dtype: str = "bf16", *, layout: str = "NT", progress: bool | None = None,
              runs: int = 10):
    """Measure the HOPPER_CANDIDATES for an M x N x K product in `layout` (NT: b as [N, K]; see LAYOUTS) on the
    GPU, the swapped decode ones where the product can swap (`candidates`); cache and return the winner.

    Needs torch (CUDA tensors and events). Each candidate is compiled, run on fresh random inputs and timed
    (median of `runs` after a warm-up, each run after an L2 eviction: `_cold_l2`); one that fails to compile or
    launch is recorded and never chosen.
    """
    from tessera.ir import diagnostics as D
    from tessera.ops._common import OpsError

    if layout not in LAYOUTS:
        raise OpsError(D.OPS_AUTOTUNE_INPUT, "tune_gemm", f"layout={layout!r} is not one of {', '.join(LAYOUTS)}")
    try:
        import torch
    except ImportError:  # pragma: no cover - the GPU image has torch
        raise OpsError(D.OPS_AUTOTUNE_INPUT, "tune_gemm", "tune_gemm measures with torch CUDA tensors; torch is "
                                                          "not installed") from None
    from tessera.kernels import gemm as G

    ta, tb = layout[0] == "T", layout[1] == "T"
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    a = torch.randn((K, M) if ta else (M, K), device="cuda").to(tdt)
    w = (torch.randn((N, K) if tb else (K, N), device="cuda") / K ** 0.5).to(tdt)
    out = torch.empty((M, N), device="cuda", dtype=tdt)
    out_t = torch.empty((N, M), device="cuda", dtype=tdt)  # packs a swapped kernel's arguments (then C^T is `out`)
    cold = ColdL2(torch)

    def measure(config: dict) -> float:
        stream = torch.cuda.current_stream()
        if config.get(SWAP):  # as ops runs it: b and a swapped (each read the other way) into C's transposed view
            ck, cfg = compile_plain(config, dtype, layout_of(not tb, not ta))
            grid = G.grid(N, M, BM=cfg.BM, BN=cfg.BN)
            values, _ = ck.values([w, a, out_t, 1.0])  # then C^T as ops passes it: [N, M] at strides (1, N)
            at = values.index(out_t.data_ptr())
            values[at:at + 5] = [out.data_ptr(), N, M, 1, N]
            fire = lambda sync=False: ck.launch_values(grid, values, stream, sync=sync)  # noqa: E731
        else:
            ck, cfg = compile_plain(config, dtype, layout)
            grid, args = G.grid(M, N, BM=cfg.BM, BN=cfg.BN), [a, w, out, 1.0]
            fire = lambda sync=False: ck.launch(grid, args, stream=stream, sync=sync)  # noqa: E731
        for i in range(2):  # the first warm-up waits, bounded: a candidate that hangs is RUNTIME_LAUNCH_TIMEOUT
            fire(sync=i == 0)
        return cold_median_seconds(fire, runs, cold, stream)

    return autotune.tune(OP, tune_key(M, N, K, dtype, layout), candidates(M, N), measure, progress=progress,
                         finalists=autotune.FINALISTS, rounds=autotune.ROUNDS,
                         baseline=untuned_config(M, N, K, layout=layout).as_dict())
