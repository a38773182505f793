"""The ops' warm path: a call whose arrays have the keys of a checked call re-checks only their addresses.

A warm op call used to re-read every array through `arrays.view`, build a
Checker, its ArrayViews, the plan key and the parameter list: about 15 us of
Python per gemm on the H200 host, twice the launch itself. Here a call is
summarised by a key -- the op's flags and, per array, `arrays.probe`'s key
(dtype, shape, strides, read-only, device) -- and the full path, after a
successful call, leaves a `WarmCall` under it: the plan, the grid, the
checked parameter list and what in it depends on addresses. A later call
with an equal key copies that list, writes in its addresses and scalars,
and re-checks what addresses decide (alignment, output overlap); any
failure sends it down the full path, which raises the coded error, so
the codes and the "nothing is written" rule are the full path's own. Off
while a `tessera.compiler.testing` hook is active, like the plan cache.
`warm_key`, `remember` and `run_warm` are that protocol for an op with
several outputs (attention's o and lse); gemm keeps its own, for its
in-place question and the copy of c.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tessera.compiler import arrays, testing
from tessera.ops import autotune
from tessera.ops._common import Plan, reset

REALS = frozenset({int, float, np.float16, np.float32, np.float64, np.int32, np.int64})  # exact scalar types
WARM_ENTRIES = 1024  # call signatures remembered per process (a hot loop sees a few)
REPLAYS = 64  # prepared launches kept per signature (one per set of addresses: a model's layers, a few buffers)
REPLAY_TRIAL = 128  # misses after which a signature whose calls mostly miss stops preparing replays
_warm: dict = {}
_generation = [0]  # autotune.generation the remembered calls were chosen under


def probe_all(xs: tuple):
    """(keys, addresses) of optional arrays (None stays None), or None when one has no probe (numpy, ...)."""
    get = arrays.PROBES.get
    keys, addresses = [], []
    for x in xs:
        if x is None:
            keys.append(None)
            addresses.append(None)
            continue
        p = get(x.__class__)
        found = p(x) if p is not None else arrays.probe(x)
        if found is None:
            return None
        keys.append(found[0])
        addresses.append(found[1])
    return tuple(keys), addresses


@dataclass(eq=False, slots=True)
class WarmCall:
    """The verdict of one fully checked call, for later calls whose `probe_all` keys and flags are equal.

    Every check of the full path is a function of those keys except the ones on addresses, which `bind`
    redoes: alignment, and the byte ranges that must stay disjoint. `template` is the checked call's C
    parameter list; a warm call writes its addresses and scalars into a copy.
    """

    plan: Plan
    grid: tuple
    device: int
    template: list
    fills: tuple  # (position in template, address index, element size) per array
    scalars: tuple  # positions of the call's scalars in `template`, in the op's order
    disjoint: tuple  # (address index, bytes) of each input the output may not overlap
    out_index: int  # the output's address index
    out_bytes: int
    stream: object  # arrays.stream_reader of the first device array, or None
    alloc: tuple | None = None  # (template view, shape, dtype) when the output is allocated per call
    in_place: bool | None = None  # gemm: whether out was c (None: not a question for this call)
    same_layout: bool = False  # gemm: out and c have one shape and dtype (so equal addresses mean one array)
    copy_c: bool = False  # gemm: c is copied into out before the launch
    more: tuple = ()  # (address index, bytes, disjoint) of further outputs, checked like the first
    allocs: tuple = ()  # (output slot, address index, template view, shape, dtype) of outputs allocated per call
    replays: dict | None = field(default_factory=dict)  # (addresses, scalars, stream) -> prepared launch; None: off
    hits: int = 0  # replayed calls, and calls that prepared one: a signature that mostly misses turns replays off
    misses: int = 0
    overflow: int = 0  # plain launches since `replays` filled up; REPLAYS of them clear it

    def bind(self, addresses: list, scalars: tuple) -> list | None:
        """The C parameter list of a call with these addresses and scalars, or None if an address check fails."""
        values = self.template.copy()
        for at, i, size in self.fills:
            x = addresses[i]
            if x.__class__ is not int or x % size:
                return None
            values[at] = x
        if self.disjoint and not _apart(addresses, self.out_index, self.out_bytes, self.disjoint):
            return None
        for o, n, disjoint in self.more:
            if not _apart(addresses, o, n, disjoint):
                return None
        for at, x in zip(self.scalars, scalars):
            values[at] = float(x)
        return values

    def outputs(self, template, addresses: list, given: tuple) -> list | None:
        """`given` with each allocated output made like `template` (its address written in), or None if one fails."""
        result = list(given)
        for slot, i, view, shape, dtype in self.allocs:
            x = arrays.empty_like(template, view, shape, dtype)
            found = None if x is None else arrays.probe(x)
            if found is None:
                return None
            addresses[i] = found[1]
            result[slot] = x
        return result

    def run(self, addresses: list, scalars: tuple, stream, before=None) -> bool:
        """Launch with these addresses and scalars (`before()` first, when given); False if an address check
        fails, before anything runs. A repeat of an earlier call's addresses, scalars and stream replays its
        prepared launch: every check here is a function of those, so the verdict is the one already reached."""
        if stream is None and self.stream is not None:
            stream = self.stream() or None
        replays, key = self.replays, None
        if replays is not None:
            key = (*addresses, *scalars, stream)
            try:
                replay = replays.get(key)
            except TypeError:  # an unhashable stream object: no replays for it
                replay = key = None
            if replay is not None:
                if before is not None:
                    before()
                replay()
                self.hits += 1
                return True
            if len(replays) >= REPLAYS:  # full: plain launches, until REPLAYS such misses clear it for new ones
                self.overflow += 1
                if self.overflow < REPLAYS:
                    key = None
                else:
                    replays.clear()
                    self.overflow = 0
        values = self.bind(addresses, scalars)
        if values is None:
            return False
        reset()
        if before is not None:
            before()
        replay = None if key is None else self.plan.replay(self.grid, values, stream, self.device)
        if replay is None:
            if key is not None:
                self.replays = None  # this signature's launches cannot be prepared (see CompiledKernel.prepare)
            self.plan.run(self.grid, values, None, stream, self.device)
            return True
        replay()  # the launch itself: preparing it did the work a plain launch does, once
        self.misses += 1
        if self.misses >= REPLAY_TRIAL and self.hits < self.misses:
            self.replays = None  # calls that rarely repeat their addresses: preparing costs more than it saves
        else:
            replays[key] = replay
        return True


def _apart(addresses: list, out: int, n: int, disjoint: tuple) -> bool:
    """Whether the output at address index `out` (n bytes) shares no byte with the (index, bytes) in `disjoint`."""
    o = addresses[out]
    for i, size in disjoint:
        x = addresses[i]
        if x < o + n and o < x + size:
            return False
    return True


def warm_key(op: str, lane, flags: tuple, xs: tuple):
    """(call key, addresses of `xs`) for the warm path, or None (take the full path).

    `flags`: the call's non-array arguments that the full path's checks depend on, already known to be of exact
    types (a bool, a REALS scalar, None) so that equal keys mean equal verdicts.
    """
    if lane != "auto" and lane != "cuda":
        return None
    found = probe_all(xs)
    if found is None:
        return None
    return (op, lane, flags, found[0]), found[1]


def run_warm(warm, template, given: tuple, scalars: tuple, stream) -> list | None:
    """The outputs of a warm call (allocated ones made like `template`), or None: no WarmCall for the key, or an
    address check failed (the full path then names the problem before anything is written)."""
    call = warm_get(warm[0])
    if call is None:
        return None
    addresses = warm[1]
    result = call.outputs(template, addresses, given)
    if result is None:
        return None
    if not call.run(addresses, scalars, stream):
        return None
    return result


def remember(warm, plan, grid, device, values: list, views: tuple, memrefs: tuple, scalars: tuple, outputs: tuple,
             stream) -> None:
    """Keep the verdict of a checked cuda-lane call under `warm`'s key: where its addresses and scalars go, what
    a later call must re-check.

    views: ArrayViews in address order (None where absent). memrefs: (address index, rank) per memref in the
    kernel's parameter order, absent ones left out (rank as passed: linear attention's g goes in as [1, H]).
    scalars: per scalar after the memrefs, whether the call gives it (else the checked value stays). outputs:
    (address index, address index of the array it was allocated like or None when given, address indices of the
    inputs it may not overlap) per output, in return order, as the full path's `Checker.output` calls.
    """
    if any(v is not None and v.ptr is None for v in views):
        return  # host arrays: they are staged through the device, nothing to win
    fills, at = [], 0
    for i, rank in memrefs:
        fills.append((at, i, arrays.ITEMSIZE[views[i].dtype]))
        at += 1 + 2 * rank
    if len(values) != at + len(scalars):
        return  # not the layout described: never guess, stay on the full path
    given = tuple(at + n for n, g in enumerate(scalars) if g)
    checks, allocs = [], []
    for slot, (i, like, inputs) in enumerate(outputs):
        O = views[i]
        if like is not None:
            allocs.append((slot, i, views[like], O.shape, O.dtype))
        elif O.nbytes > 0:
            disjoint = tuple((j, views[j].nbytes) for j in inputs if views[j] is not None and views[j].nbytes > 0)
            if disjoint:
                checks.append((i, O.nbytes, disjoint))
    warm_put(warm[0], WarmCall(plan, grid, device, list(values), tuple(fills), given, (), 0, 0, stream,
                               more=tuple(checks), allocs=tuple(allocs)))


def warm_get(key):
    """The WarmCall for `key`, or None (a miss, an unhashable part, or a testing hook active)."""
    if testing.active():
        return None
    if _generation[0] != autotune.generation:  # a tune or pin since: the remembered configs may be stale
        _warm.clear()
        _generation[0] = autotune.generation
    try:
        return _warm.get(key)
    except TypeError:
        return None


def warm_put(key, call: WarmCall) -> None:
    if testing.active():
        return
    if len(_warm) >= WARM_ENTRIES:
        _warm.clear()
    try:
        _warm[key] = call
    except TypeError:
        pass
