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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tessera.compiler import arrays, testing
from tessera.ops._common import Plan

REALS = frozenset({int, float, np.float16, np.float32, np.float64, np.int32, np.int64})  # exact scalar types
WARM_ENTRIES = 1024  # call signatures remembered per process (a hot loop sees a few)
_warm: dict = {}


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

    def bind(self, addresses: list, scalars: tuple) -> list | None:
        """The C parameter list of a call with these addresses and scalars, or None if an address check fails."""
        values = self.template.copy()
        for at, i, size in self.fills:
            x = addresses[i]
            if x.__class__ is not int or x % size:
                return None
            values[at] = x
        if self.disjoint:
            o, n = addresses[self.out_index], self.out_bytes
            for i, size in self.disjoint:
                x = addresses[i]
                if x < o + n and o < x + size:
                    return None
        for at, x in zip(self.scalars, scalars):
            values[at] = float(x)
        return values

    def launch(self, values: list, stream) -> None:
        if stream is None and self.stream is not None:
            stream = self.stream() or None
        self.plan.run(self.grid, values, None, stream, self.device)


def warm_get(key):
    """The WarmCall for `key`, or None (a miss, an unhashable part, or a testing hook active)."""
    if testing.active():
        return None
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
