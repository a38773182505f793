"""The parameters the runtime owns: TMA tensor maps, a persistent kernel's logical grid, split-K scratch.

An sm_90a kernel's C parameter list (emit_cuda's `KernelParam`s) may hold, next
to the caller's pointers, sizes, strides and scalars, `tmap` parameters (a
tensor map of a 2-D memref argument, a function of that argument's pointer,
sizes and strides) and `grid` parameters (the logical grid of a persistent
kernel, a function of the launch) and a `scratch` parameter (the address of a
runtime-owned buffer of `dim` bytes per logical tile and `per_cta` per CTA, `tessera.runtime.scratch`).
The caller cannot know a device address a numpy array will get, nor the
device's SM count, so these are derived here, in
one place, for `CompiledKernel.launch` and `launch_values` alike: a list may
leave them None or leave them out. Encoded maps come from `tma`'s cache, and
the grid arithmetic is memoised per grid, so the warm path stays a few lookups.
"""

from __future__ import annotations

from tessera.runtime import tma
from tessera.runtime.persistent import logical_grid, physical_grid
from tessera.runtime.scratch import Scratch, scratch_bytes, stream_key


class DerivedParams:
    """Fills the tensor-map and grid slots of one kernel's parameter lists.

    `params` are the emitted KernelParams, `signature` the matching runtime
    Params, `persistent` whether the kernel runs on min(CTAs, SMs) CTAs, and
    `sm_count(device)` says how many SMs a device has.
    """

    def __init__(self, params, signature, persistent: bool, kernel: str, sm_count, cluster: int = 1,
                 splitk: int = 1, cluster_axis: int = 0, streamk: bool = False):
        self.kernel, self.persistent, self._sm_count, self.cluster = kernel, persistent, sm_count, cluster
        self.splitk, self.cluster_axis, self.streamk = splitk, cluster_axis, streamk
        self.count = len(params)
        self.tmaps = tma.slots_of(signature)
        self.grid_params = tuple((i, p.dim) for i, p in enumerate(params) if p.role == "grid")
        self.scratch_params = tuple((i, p.dim, p.per_cta, getattr(p, "head", 0)) for i, p in enumerate(params)
                                    if p.role == "scratch")
        self.scratch = Scratch(kernel)
        derived = {i for i, p in enumerate(params) if p.role in ("tmap", "grid", "scratch")}
        self.given = tuple(i for i in range(self.count) if i not in derived)  # positions the caller fills
        self.active = bool(derived) or persistent
        self._grids: dict = {}

    def launch_grid(self, grid, device: int = 0) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(physical grid, logical grid): min(g0*g1*g2, SMs) CTAs for a persistent kernel, else the grid itself."""
        key = (grid, device)
        try:
            return self._grids[key]
        except (KeyError, TypeError):  # TypeError: a list grid, valid but not memoisable
            pass
        if self.persistent:
            found = physical_grid(grid, self._sm_count(device), self.kernel, self.cluster, self.splitk,
                                  self.cluster_axis, self.streamk)
        else:
            dims = logical_grid(grid, self.kernel)
            found = (dims, dims)
        try:
            self._grids[key] = found
        except TypeError:
            pass
        return found

    def complete(self, grid, values, device: int = 0, in_place: bool = False, host: bool = False, stream=None):
        """(launch grid, the full parameter list) from the logical `grid` and the caller's `values`.

        `values` is the full list (tensor-map and grid slots None, or already set for maps) or the
        list of the other parameters only; a full list is copied unless `in_place`. Maps of arrays
        given by device address are encoded here; those of numpy arrays (still arrays here) are left
        None for the launcher, which encodes them once it has copied the array in. `host`: the launch runs
        on the host emulator (scratch is host memory); `stream` picks the scratch buffer (one per stream).
        """
        if len(values) == len(self.given) != self.count:
            full = [None] * self.count
            for at, v in zip(self.given, values):
                full[at] = v
        else:
            full = values if in_place and values.__class__ is list else list(values)
        if len(full) != self.count:
            return grid, full  # the launcher's binder names the count
        for slot in self.tmaps:
            if full[slot.index] is None:
                slot.fill_if_plain(full, self.kernel)  # if not, the binder converts the values, then encodes
        if self.grid_params or self.persistent or self.scratch_params:
            try:
                physical, logical = self._grids[(grid, device)]
            except (KeyError, TypeError):
                physical, logical = self.launch_grid(grid, device)
            for at, dim in self.grid_params:
                full[at] = logical[dim]
            for at, per_tile, per_cta, head in self.scratch_params:  # the parameter points past the head
                full[at] = head + self.scratch.address(device, head + scratch_bytes(per_tile, logical, per_cta,
                                                                                    physical), host, stream_key(stream))
            if self.persistent:
                grid = physical
        return grid, full
