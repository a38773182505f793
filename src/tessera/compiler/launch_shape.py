"""The launch shape of a kernel: the pipeline knobs that decide how the compiled kernel is laid out and launched.

One frozen record carries them from the caller (`tessera.compile(..., stages=4)` or `shape=LaunchShape(...)`),
the ops and the autotuner's configs to the named pipeline's pass options (`pipeline`), and through the
canonical pipeline text into the compile cache key. It is validated once, on construction, with coded errors
for a bad value or a bad combination, so no pass sees an impossible mix. Adding a knob touches this record and
the pass that reads it (and the named pipeline that forwards it), nothing else.

Knobs (see warp-specialize for what each does on sm_90a; elsewhere only `stages` matters):
    stages      ring depth on sm_90a, software-pipelining depth elsewhere: 1 to 12
    schedule    "cooperative" or "pingpong" consumer warpgroups
    cluster     CTAs per thread-block cluster, 1 or 2
    splitk      K splits per tile, 1 to 16
    multicast   with cluster=2, what the CTA pair shares: operand "b" or "a", or "k" (one tile, K split in two)
    streamk     share the partial last wave's K steps among all CTAs (not with splitk > 1)
    fixup       with splitk > 1, how a tile's splits meet: "gather" (the last to arrive sums them all) or
                "scatter" (each split sums and stores its own 1/splitk of the tile's columns once all have
                arrived; cooperative schedule, cluster 1, static tiles, TMA store; launched cooperatively)
    overlap     general wgmma loop bodies: rotate the loop so the next step's wgmmas overlap this step's tail
    store       how a GEMM-shaped kernel's epilogue writes its output: "tma" (boxes staged in shared memory where
                the output and tile allow, else registers) or "registers" (always: an output TMA cannot describe,
                such as the transposed view a swapped decode GEMM writes)
    tiles       how a persistent kernel's CTAs take tiles: "static" (CTA c of P: c, c + P, ...) or "dynamic" (after
                the first, from a launch-wide counter: balances tiles of unequal cost; not with cluster=2 or streamk)
    warps       the warp grid (WM, WN) of a tile's mma.sync fragments (tile-to-fragments' `warps`); None: the pass
                picks it from the tile. sm_90a's wgmma kernels take one warpgroup per 64 rows and refuse others.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from tessera.ir import diagnostics as D
from tessera.target.nvidia.knobs import CLUSTERS, FIXUPS, MAX_SPLITK, MAX_STAGES, MULTICASTS, SCHEDULES, STORES, TILES

DEFAULT_PIPELINE = "tessera-lower-to-nv{{arch={arch} stages={stages} schedule={schedule}}}"


def _fail(message: str, hint: str = "see tessera.compiler.launch_shape for each knob's values") -> D.TesseraError:
    return D.TesseraError(D.COMPILE_LAUNCH_SHAPE_INVALID, message, hint=hint)


def _option(v) -> str:
    """A knob's value as pass-option text: bools as 0/1, the warp grid as WM,WN."""
    if isinstance(v, bool):
        return str(int(v))
    return ",".join(map(str, v)) if isinstance(v, tuple) else str(v)


def _int_in(name: str, v, lo: int, hi: int) -> None:
    if type(v) is not int or not lo <= v <= hi:
        raise _fail(f"{name}={v!r} must be an integer from {lo} to {hi}")


@dataclass(frozen=True)
class LaunchShape:
    stages: int = 1
    schedule: str = "cooperative"
    cluster: int = 1
    splitk: int = 1
    multicast: str = "b"
    streamk: bool = False
    overlap: bool = True
    warps: tuple[int, int] | None = None
    store: str = "tma"
    tiles: str = "static"
    fixup: str = "gather"

    def __post_init__(self) -> None:
        if self.warps is not None:
            w = self.warps
            if (not isinstance(w, (tuple, list)) or len(w) != 2 or any(type(x) is not int or x < 1 for x in w)
                    or w[0] * w[1] * 32 > 1024):
                raise _fail(f"warps={w!r} must be two positive integers (WM, WN) with WM * WN <= 32 (1024 threads)",
                            hint="e.g. warps=(4, 2): 4 warps along a tile's rows, 2 along its columns")
            object.__setattr__(self, "warps", (w[0], w[1]))  # a list from a JSON config becomes the tuple
        _int_in("stages", self.stages, 1, MAX_STAGES)
        _int_in("splitk", self.splitk, 1, MAX_SPLITK)
        if self.schedule not in SCHEDULES:
            raise _fail(f"schedule={self.schedule!r} is not one of {', '.join(SCHEDULES)}")
        if type(self.cluster) is not int or self.cluster not in CLUSTERS:
            raise _fail(f"cluster={self.cluster!r} is not one of {', '.join(map(str, CLUSTERS))} (CTAs per cluster)")
        if self.multicast not in MULTICASTS:
            raise _fail(f"multicast={self.multicast!r} is not one of {', '.join(MULTICASTS)} (what a 2-CTA "
                        "cluster shares: operand b, operand a, or k: a tile's K steps)")
        if self.multicast != "b" and self.cluster == 1:
            raise _fail(f"multicast={self.multicast!r} with cluster=1: only the CTAs of a 2-CTA cluster share an "
                        "operand or a tile", hint="give cluster=2, or leave multicast at 'b'")
        if self.multicast == "k" and (self.splitk > 1 or self.streamk):
            raise _fail(f"multicast='k' with {'streamk=True' if self.streamk else f'splitk={self.splitk}'}: the "
                        "cluster pair already splits each tile's K steps",
                        hint="use one K decomposition: multicast='k' (in the cluster), splitk or streamk")
        if self.store not in STORES:
            raise _fail(f"store={self.store!r} is not one of {', '.join(map(repr, STORES))}")
        if not isinstance(self.overlap, bool):
            raise _fail(f"overlap={self.overlap!r} must be True or False")
        if not isinstance(self.streamk, bool):
            raise _fail(f"streamk={self.streamk!r} must be True or False")
        if self.tiles not in TILES:
            raise _fail(f"tiles={self.tiles!r} is not one of {', '.join(map(repr, TILES))}")
        if self.tiles == "dynamic" and (self.cluster > 1 or self.streamk):
            raise _fail(f"tiles='dynamic' with {'cluster=2' if self.cluster > 1 else 'streamk=True'}: dynamic tiles "
                        "go to single CTAs one at a time", hint="use tiles='static' with clusters and stream-K")
        if self.streamk and self.splitk > 1:
            raise _fail(f"streamk with splitk={self.splitk}: stream-K already shares a tile's K steps among CTAs",
                        hint="use one of streamk=True and splitk > 1")
        self._check_fixup()

    def _check_fixup(self) -> None:
        if self.fixup not in FIXUPS:
            raise _fail(f"fixup={self.fixup!r} is not one of {', '.join(map(repr, FIXUPS))}")
        if self.fixup == "gather":
            return
        clash = ("splitk=1: there are no splits to meet" if self.splitk == 1 else
                 f"cluster={self.cluster}: the K pair of a cluster has its own fixup" if self.cluster > 1 else
                 "schedule='pingpong': a consumer would wait for its splits while holding the ring's turn"
                 if self.schedule == "pingpong" else
                 "tiles='dynamic': a split may wait only for units that are already running" if self.tiles == "dynamic"
                 else "store='registers': each split stores its columns through TMA boxes" if self.store != "tma"
                 else None)
        if clash:
            raise _fail(f"fixup='scatter' with {clash}",
                        hint="fixup='scatter' takes splitk > 1, cluster=1, schedule='cooperative', tiles='static' and "
                             "store='tma'; or leave fixup at 'gather'")

    @classmethod
    def of(cls, knobs: dict) -> "LaunchShape":
        """From keyword knobs (compile's **knobs); a key that is not a knob is an error (a config dict that also
        holds tile sizes goes through `from_config`)."""
        unknown = sorted(set(knobs) - {f.name for f in fields(cls)})
        if unknown:
            raise _fail(f"unknown launch-shape knob(s) {', '.join(unknown)}; the knobs are "
                        f"{', '.join(f.name for f in fields(cls))}")
        return cls(**knobs)

    @classmethod
    def from_config(cls, config: dict) -> "LaunchShape":
        """The knobs of an autotune or pin config (its tile sizes and other keys are the kernel's meta)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in config.items() if k in names})

    def as_dict(self) -> dict:
        return asdict(self)

    def pipeline(self, arch: str) -> str:
        """The named pipeline with these knobs as options (those at their default left out after stages and
        schedule, so cache keys written before a knob existed stay valid)."""
        text = DEFAULT_PIPELINE.format(arch=arch, stages=self.stages, schedule=self.schedule)
        extra = "".join(f" {f.name}={_option(v)}" for f in fields(self)
                        if f.name not in ("stages", "schedule") and (v := getattr(self, f.name)) != f.default)
        return text[:-1] + extra + "}"
